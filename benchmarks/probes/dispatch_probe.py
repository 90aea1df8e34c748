"""How much of a GPU call is argument handling: the general-path -2 ln L value + gradient with the
model passed as an argument (as nuejax does), with only the leaves the call reads, and with the
model closed over (its arrays compiled in as constants; slow to compile, not used by nuejax).

  python benchmarks/probes/dispatch_probe.py [--quick]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402,F401  (puts the repository root on sys.path too)


def main():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    import workload
    from common import call_stats as _stats

    from nuejax.model import AddTemplates

    model = workload.build(**(workload.QUICK_DIMS if "--quick" in sys.argv else workload.PAPER_DIMS))
    p = model.parameters.values(eps_ee_L=0.05, mu_nu=3.0)
    free = model.parameters.free_names
    data = model.asimov(p)
    fixed = {k: v for k, v in p.items() if k not in free}
    x = jnp.stack([jnp.asarray(p[k], dtype=jnp.float64) for k in free])

    def nll(m, x):
        return m.nll({**fixed, **dict(zip(free, x))}, data)

    out = {"n_leaves_model": len(jax.tree.leaves(model))}
    vg = jax.jit(jax.value_and_grad(nll, argnums=1))
    out["model_as_argument_ms"] = _stats(vg, model, x, n=100)["median_ms"]
    closed = jax.jit(jax.value_and_grad(lambda x: nll(model, x)))
    out["model_closed_over_ms"] = _stats(closed, x, n=100)["median_ms"]
    vgv = jax.jit(jax.value_and_grad(lambda m, x: jnp.sum(x * x) + 0.0 * jnp.sum(m.stage(AddTemplates).templates),
                                     argnums=1))
    out["trivial_with_model_argument_ms"] = _stats(vgv, model, x, n=100)["median_ms"]
    out["trivial_ms"] = _stats(jax.jit(lambda x: x + 1.0), x, n=200)["median_ms"]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
