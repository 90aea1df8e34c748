"""Record -2 ln L and its gradient of every model configuration at random parameter points, with
the model classes of before the pipeline redesign (SpectralModel, FastModel, FloatingResponseModel,
TemplateModel). ``tests/test_model_equivalence.py`` rebuilds the same configurations with the
current builders and compares. Run once, before the redesign:

    python tests/record_model_equivalence.py   # writes tests/data/model_equivalence.json
"""
import json
import subprocess
import zlib
import sys
from pathlib import Path

import numpy as np

import nuejax

nuejax.enable_x64()
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

OUT = Path(__file__).parent / "data" / "model_equivalence.json"
SMALL = dict(n_T=100, window=(150, 450), signals=("7Be_862", "pep", "13N"), backgrounds=("210Bi", "85Kr", "210Po"))
#: half-widths of the random boxes around the defaults of parameters whose default is 0
ZERO_WIDTH = {"mu_nu": 5.0, "zprime_coupling": 2.0, "phi_coupling": 2.0}


def configurations():
    from nuejax.analyses.borexino import Phase3Choices, borexino_phase3_model
    from nuejax.detector.transforms import ResponseTransform
    from nuejax.model import borexino_like_model
    from nuejax.model.fast import fast_model
    from nuejax.model.floating import floating_response_model
    from nuejax.model.parameters import Parameter

    diag = borexino_like_model(**SMALL)
    diag = diag.with_parameters(diag.parameters.release("eps_ee_L", "eps_ee_R", "eps_tautau_L", "mu_nu",
                                                        "sin2_theta12", "dm2_21"))
    yield "diagonal_general", diag
    yield "diagonal_fast", fast_model(diag.with_parameters(diag.parameters.fix("sin2_theta12", "dm2_21")))
    gen = borexino_like_model(**SMALL, nsi=("eps_etau_L_re", "eps_etau_L_im", "eps_emu_R_re"),
                              mediators=("zprime", "phi"))
    gen = gen.with_parameters(gen.parameters.release("eps_ee_L", "eps_etau_L_re", "eps_etau_L_im", "eps_emu_R_re",
                                                     "mu_nu", "zprime_coupling", "phi_coupling", "sin2_theta12"))
    yield "general_nsi_general", gen
    yield "general_nsi_fast", fast_model(gen.with_parameters(gen.parameters.fix("sin2_theta12")))
    prop = borexino_like_model(**SMALL, nsi=("eps_etau_L_re",), propagation_nsi=True, day_night="average")
    yield "general_nsi_propagation_daynight", prop.with_parameters(prop.parameters.release("eps_etau_L_re", "eps_ee_R"))
    fl = diag.with_parameters(diag.parameters.fix("sin2_theta12", "dm2_21"))
    yield "floating_general", floating_response_model(diag, fast=False)
    edges = np.asarray(diag.obs_edges)
    tr = ResponseTransform.create(edges, edges[20:-20:2], scale="np_scale", offset="np_offset")
    tp = (Parameter("np_scale", 1.0, 0.98, 1.02), Parameter("np_offset", 0.0, -3.0, 3.0))
    yield "floating_fast_transform", floating_response_model(fl, fast=True, transform=tr, transform_params=tp)
    yield "floating_exact_midpoint", floating_response_model(fl, fast=False, fold="exact", quadrature="midpoint")
    model, data, cal = borexino_phase3_model(Phase3Choices(n_T=60))
    ps = model.parameters.release("eps_ee_L", "eps_ee_R", "mu_nu")
    yield "phase3_fast", model.with_parameters(ps)
    model_g, _, _ = borexino_phase3_model(Phase3Choices(n_T=60, general_nsi=("eps_etau_L_re",)), calibration=cal,
                                          fast=False)
    yield "phase3_general_nsi", model_g.with_parameters(model_g.parameters.release("eps_ee_L", "eps_etau_L_re",
                                                                                   "mu_nu"))


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
