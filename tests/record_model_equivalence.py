"""Record -2 ln L and its gradient of every model configuration at random parameter points:
``tests/data/model_equivalence.json``, which ``tests/test_model_equivalence.py`` compares the
current models with. The recorded numbers come from the model classes of before the pipeline
redesign (SpectralModel, FastModel, FloatingResponseModel, TemplateModel) of commit e0b1e71, where
the same builder calls made those classes; the version of this script that recorded them is the
one of commit 9632a35. Run with a configuration's name
to record only that one (e.g. a new configuration):

    python tests/record_model_equivalence.py [NAME ...]
"""
import json
import subprocess
import zlib
import sys
from pathlib import Path

import numpy as np

import nuejax

sys.path.insert(0, str(Path(__file__).parent))

nuejax.enable_x64()
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

OUT = Path(__file__).parent / "data" / "model_equivalence.json"
#: half-widths of the random boxes around the defaults of parameters whose default is 0
ZERO_WIDTH = {"mu_nu": 5.0, "zprime_coupling": 2.0, "phi_coupling": 2.0}


def configurations():
    """The configurations of tests/test_model_equivalence.py (its ``build``: the same builder calls
    then made a SpectralModel, FastModel, FloatingResponseModel or TemplateModel)."""
    from test_model_equivalence import NAMES, build

    for name in NAMES:
        yield name, build(name)


def random_points(ps, rng, n):
    pts = []
    for _ in range(n):
        p = {}
        for par in ps.parameters:
            if par.fixed:
                continue
            v = par.value
            w = ZERO_WIDTH.get(par.name, 0.1) if v == 0 else 0.1 * abs(v)
            lo, hi = max(par.lower, v - w), min(par.upper, v + w)
            p[par.name] = float(rng.uniform(lo, hi))
        pts.append(p)
    return pts


def main(only=()):
    old = json.loads(OUT.read_text()) if only and OUT.exists() else None
    out = {"commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                    cwd=Path(__file__).parent).stdout.strip(),
           "jax": jax.__version__, "configurations": {}}
    for name, model in configurations():
        if only and name not in only:
            continue
        rng = np.random.default_rng(zlib.crc32(name.encode()))  # per configuration: a subset reruns the same
        mu = np.asarray(model.expected(model.defaults()))
        data = rng.poisson(mu).astype(float)
        vg = jax.jit(jax.value_and_grad(lambda m, p, d: m.nll(p, d), argnums=1))
        rows = []
        for point in random_points(model.parameters, rng, 3):
            params = model.parameters.values(point)
            v, g = vg(model, params, jnp.asarray(data))
            rows.append({"point": point, "nll": float(v),
                         "grad": {k: float(g[k]) for k in model.parameters.free_names}})
        out["configurations"][name] = {"type": type(model).__name__, "free": list(model.parameters.free_names),
                                       "names": list(model.parameters.names), "data": data.tolist(), "rows": rows}
        print(name, type(model).__name__, len(data), [r["nll"] for r in rows], flush=True)
    if old is not None:
        old["configurations"].update(out["configurations"])
        out = old
    OUT.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    sys.exit(main(tuple(sys.argv[1:])))
