"""Time the NSI stage of ``nuejax borexino`` alone: its fit and profile scans, repeated (first, then warm).

The Phase-III model with every solar rate constrained to the SSM and (ε^L_ee, ε^R_ee) released,
fitted from the default multi-start design, then the ε^L_ee and ε^R_ee profiles and the 2-D
region on the command's own grids (``nuejax.analyses.borexino_run``). The first repetition
compiles; the later ones find the programs compiled. ``--vmap`` forces the batched (``vmap``)
rows of every launch (the solver before ``fitting.over_rows`` ran rows one after another on the
CPU), so that both can be timed in one machine state.

    python benchmarks/timings/borexino_nsi_scans.py [--repeat 2] [--vmap] [--json out.json]
Prints one JSON line per step: repetition, step, seconds; the last line holds the profiles.
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common
import common  # noqa: E402  (puts the repository root on sys.path too)


def main(argv=None):
    ap = common.parser(__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--vmap", action="store_true", help="vmap every launch's rows (the solver before over_rows)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)

    import numpy as np

    import nuejax

    nuejax.enable_x64()
    from nuejax.cache import enable_compilation_cache

    enable_compilation_cache()
    if a.vmap:
        from nuejax.inference import fitting

        plain = fitting.over_rows
        fitting.over_rows = lambda f, in_axes, sequential=None: plain(f, in_axes, False)
    from nuejax.analyses import borexino_run as br
    from nuejax.analyses.borexino import borexino_phase3_model, sm_rates, ssm_constrained
    from nuejax.inference import newton_fit, profile_scan, profile_scan_2d

    rows = []

    def step(rep, name, fn):
        t0 = time.perf_counter()
        out = fn()
        rows.append({"repeat": rep, "step": name, "s": time.perf_counter() - t0})
        print(json.dumps(rows[-1]), flush=True)
        return out

    model, data, _ = step(0, "model", borexino_phase3_model)
    counts = np.asarray(data.counts)
    m = ssm_constrained(model, sm_rates()).release("eps_ee_L", "eps_ee_R")
    for rep in range(1, a.repeat + 1):
        fit = step(rep, "fit", lambda: newton_fit(m, counts, one_sided=False, warn_delta=None))
        sL = step(rep, "eps_ee_L", lambda: profile_scan(m, counts, "eps_ee_L", br.EPS_L_GRID, global_fit=fit,  # noqa: B023
                                                         n_iter=br.SCAN_ITER))
        sR = step(rep, "eps_ee_R", lambda: profile_scan(m, counts, "eps_ee_R", br.EPS_R_GRID, global_fit=fit,  # noqa: B023
                                                         n_iter=br.SCAN_ITER))
        s2 = step(rep, "eps_2d", lambda: profile_scan_2d(m, counts, ("eps_ee_L", "eps_ee_R"), *br.EPS_2D,  # noqa: B023
                                                         global_fit=fit, n_iter=br.SCAN_ITER))  # noqa: B023
    result = {"vmap": a.vmap, "steps": rows, "fval": fit.fval,
              "delta_chi2": {"eps_ee_L": sL.delta_chi2.tolist(), "eps_ee_R": sR.delta_chi2.tolist(),
                             "eps_2d": np.asarray(s2.delta_chi2).ravel().tolist()}}
    print(json.dumps({k: v for k, v in result.items() if k != "delta_chi2"}))
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
