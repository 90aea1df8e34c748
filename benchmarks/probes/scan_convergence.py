"""Convergence of the paper workload's 200-point profile scan of eps_ee_L (fast path, 22 profiled
parameters, Asimov data at eps_ee_L = 0.05, mu_nu = 3): Newton iterations per point (median,
maximum), converged points, the status and EDM of any that did not, and the scan's time.

  python benchmarks/probes/scan_convergence.py --out FILE.json
"""
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402  (puts the repository root on sys.path too)


def main(argv=None):
    ap = common.parser(__doc__)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    import workload

    from nuejax.inference import FitProblem, fit, profile_scan
    from nuejax.inference.fitting import profile_starts, solve_rows
    from nuejax.inference.scan import SCAN_MAX_ITER
    from nuejax.model import fast_model

    warnings.simplefilter("ignore")  # Asimov counts are not integers
    model = workload.build(dtype=jnp.float64, **workload.PAPER_DIMS)
    # the fast path bakes the oscillation parameters in: at their values, fixed
    fast = fast_model(model.with_parameters(model.parameters.fix("sin2_theta12", "dm2_21")))
    data = model.asimov(model.parameters.values(eps_ee_L=0.05, mu_nu=3.0))
    rf = fit(fast, data, {"eps_ee_L": 0.0, "mu_nu": 1.0, "norm_pp": 0.98, "norm_7Be_862": 1.04, "rate_210Bi": 15.0})
    grid = np.linspace(-0.05, 0.15, 200)
    st = FitProblem.create(fast, data, fixed_names=("eps_ee_L",))
    starts = profile_starts(rf, ("eps_ee_L",), st.names, grid[:, None], st.lower, st.upper)
    r = solve_rows(st, starts, grid[:, None], max_iter=SCAN_MAX_ITER)
    it, conv = np.asarray(r.n_iter), np.asarray(r.converged)
    bad = np.nonzero(~conv)[0]
    profile_scan(fast, data, "eps_ee_L", grid, global_fit=rf)  # compiled
    s = profile_scan(fast, data, "eps_ee_L", grid, global_fit=rf)
    out = {"device": str(jax.devices()[0].device_kind), "jax": jax.__version__, "date": time.strftime("%Y-%m-%d"),
           "points": len(grid), "max_iter": SCAN_MAX_ITER, "iterations_median": float(np.median(it)),
           "iterations_max": int(it.max()), "converged": int(conv.sum()),
           "unconverged": [{"eps_ee_L": float(grid[i]), "status": int(r.status[i]), "edm": float(r.edm[i]),
                            "iterations": int(it[i])} for i in bad],
           "scan_s": s.seconds, "scan_converged": int(s.converged.sum())}
    print(json.dumps(out, indent=1))
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
