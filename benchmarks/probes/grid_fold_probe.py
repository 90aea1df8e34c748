"""Variants of the floating response's grid fold (nuejax.detector.mean_grid) on one device:
the ``jnp.searchsorted`` method of the cell lookup, timed as value + gradient of the default
floating model's -2 ln L (general path) against the fixed-response call in the same process.

  python benchmarks/probes/grid_fold_probe.py --n-T 2000 --out FILE.json
"""
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402  (puts the repository root on sys.path too)


def main(argv=None):
    ap = common.parser(__doc__)
    ap.add_argument("--n-T", type=int, default=2000)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    import jax
    import jax.numpy as jnp
    import numpy as np

    import nuejax

    nuejax.enable_x64()
    import nuejax.detector.response as R
    from nuejax.model import FloatingFold, borexino_like_model, nll
    from nuejax.model.floating import floating_response_model
    from common import call_stats as _stats

    base = borexino_like_model(n_T=a.n_T, window=(90, 950))
    base = base.with_parameters(base.parameters.release("eps_ee_L", "eps_ee_R", "mu_nu", "sin2_theta12", "dm2_21"))
    model = floating_response_model(base, fast=False)

    def case(m, fn, point):
        names = m.parameters.free_names
        p = m.parameters.values(point)
        data = jnp.asarray(np.asarray(m.expected(p)))

        def obj(x):
            return fn(m, {**p, **dict(zip(names, x))}, data)

        x = jnp.stack([p[n] for n in names])
        return _stats(jax.jit(jax.value_and_grad(obj)), x, n=50), float(obj(x))

    out = {"device": str(jax.devices()[0].device_kind), "jax": jax.__version__,
           "grid_points": model.stage(FloatingFold).grid.size,
           "date": time.strftime("%Y-%m-%d")}
    out["fixed_general"] = case(base, nll, dict(eps_ee_L=0.05))[0]
    ref = None
    for method in ("scan", "scan_unrolled", "compare_all"):
        jax.clear_caches()
        R.SEARCH_METHODS[jax.default_backend()] = method
        st, v = case(model, nll, dict(light_yield=510.0, kB=0.0115, var_const=5.0, var_rel=0.01, eps_ee_L=0.05))
        ref = v if ref is None else ref
        out[f"floating_general_{method}"] = {**st, "nll_minus_scan": v - ref}
        print(method, st["median_ms"], "ms; fixed", out["fixed_general"]["median_ms"], "ms", flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
