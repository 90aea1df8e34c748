"""Every solver launch of one stage of ``nuejax combine``: its time, rows, iterations and
converged rows, and each row's iterations and end point.

    python benchmarks/probes/solver_launches_probe.py mu|eps|med [--npz FILE]

Builds the combination's models (stage 1 of ``nuejax.analyses.combine_run``, from the package's
cache folder where it holds them), then runs stage 2 (``mu``: μ_ν's profiles and the
combination's asymptotic CLs), stage 3 (``eps``: the (ε^L_ee, ε^R_ee) regions) or stage 4
(``med``: the mediator curves, their models built first) with
``fitting.row_solver`` wrapped: each launch is timed to its end (``block_until_ready``) and its
rows' iterations, −2 ln L and status are kept. Prints one line per launch ``(seconds, rows,
largest iterations, summed iterations, converged rows)``; ``--npz`` saves, per launch ``k``,
``it_k`` (3, rows): iterations, −2 ln L and status, so that two versions of the solver can be
compared row by row, and what identifies a row: ``x0_k`` its starts (rows, 2, d), ``mask_k`` and
``pin_k`` its pins (rows, d), ``x_k`` its end point (rows, d), ``names_k`` the problem's
parameters. A launch's time on an accelerator is its largest iteration count: the rows run in
lockstep (docs/inference.md). Run it twice to see the warm launches.
"""
import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common
import common  # noqa: E402  (puts the repository root on sys.path too)

import nuejax  # noqa: E402

nuejax.enable_x64()
import nuejax.cache  # noqa: E402

nuejax.cache.enable_compilation_cache()

import numpy as np  # noqa: E402

from nuejax.analyses import combine_run  # noqa: E402
from nuejax.analyses._clock import StageClock  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stage", choices=("mu", "eps", "med"))
    ap.add_argument("--npz", default=None, help="save each launch's rows (iterations, -2 ln L, status)")
    a = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    print("nuejax from", nuejax.__file__, flush=True)
    with common.timed_solver_launches(keep_inputs=bool(a.npz)) as timed:
        t0 = time.perf_counter()
        say = StageClock(print)  # the stages split their models' work with say.branch()
        models, data, calibration = combine_run._models(say)
        print(f"models {time.perf_counter() - t0:.2f} s", flush=True)
        t0 = time.perf_counter()
        if a.stage == "mu":
            per, _, _ = combine_run._mu_nu(models, data, say)
            out = {k: v["mu_nu_upper_90"] for k, v in per.items()}
        elif a.stage == "eps":
            _, per = combine_run._eps_regions(models, data, True, say, False)
            out = {k: v["eps_region_90_points"] for k, v in per.items()}
        else:
            curves = combine_run._mediator_curves(data, combine_run.MASSES, calibration, say, False)
            out = {k: {c: v["couplings"] for c, v in per.items()} for k, per in curves.items()}
        print(f"stage {a.stage} {time.perf_counter() - t0:.2f} s {out}")
    launches, rows = [], {}
    for k, (seconds, r, *inputs) in enumerate(timed):
        it = np.asarray(r.n_iter)
        launches.append((seconds, it.size, int(it.max()), int(it.sum()), int(np.sum(np.asarray(r.converged)))))
        rows[f"it_{k}"] = np.stack([it.astype(float), np.asarray(r.fun, dtype=float),
                                    np.asarray(r.status, dtype=float)])
        if inputs:
            problem, pins, x0 = inputs[0]
            rows.update({f"x0_{k}": np.asarray(x0), f"mask_{k}": np.asarray(pins.mask),
                         f"pin_{k}": np.asarray(pins.values), f"x_{k}": np.asarray(r.x),
                         f"names_{k}": np.array(problem.names)})
    L = np.array(launches, dtype=float)
    print(f"launches {len(L)}, largest iterations summed {int(L[:, 2].sum())}, row iterations {int(L[:, 3].sum())}, "
          f"rows {int(L[:, 1].sum())}, converged {int(L[:, 4].sum())}")
    print([(round(float(t), 3), int(n), int(m), int(s), int(c)) for t, n, m, s, c in L])
    if a.npz:
        np.savez(a.npz, **rows)


if __name__ == "__main__":
    main()
