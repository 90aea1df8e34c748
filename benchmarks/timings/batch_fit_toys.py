"""Time ``batch_fit`` on Poisson toys of the full default model, on whatever device JAX uses.

Toys drawn at the defaults of ``borexino_like_model()`` with mu_nu released (it can sit on its
zero bound), fitted by the bound-constrained Newton solver, fast path, in launches of the
package's default size (``--chunk N``: N rows per launch). Writes the
time (with and without compilation), how many toys are converged, the device, and with ``--npz``
the toys and their fitted -2 ln L, so that another device (or ``--check``) can refit the same
toys and compare.

Run: python benchmarks/timings/batch_fit_toys.py [--n-toys 1000] [--n-T 300] [--chunk N] [--json out.json]
                                                  [--npz toys.npz]
     python benchmarks/timings/batch_fit_toys.py --check toys.npz   # refit those toys here, compare -2 ln L
"""

import datetime
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402,F401  (puts the repository root on sys.path too)
from workload import mu_free_fast_model, toy_parser  # noqa: E402


def main(argv=None):
    ap = toy_parser(__doc__.splitlines()[0], n_toys=1000)
    ap.add_argument("--npz", default=None, help="write the toys and their fitted -2 ln L to this file")
    ap.add_argument("--starts", type=int, default=1,
                    help="multi-start design size (default 1: the timings in docs/benchmarks.md are of one start)")
    ap.add_argument("--check", default=None, help="refit the toys of this .npz here and compare")
    ap.add_argument("--chunk", type=int, default=None, help="rows per launch (default: the package's)")
    a = ap.parse_args(argv)

    import jax

    import nuejax

    nuejax.enable_x64()
    from nuejax.inference import batch_fit
    from nuejax.model.checks import NonIntegerCountsWarning

    warnings.simplefilter("ignore", NonIntegerCountsWarning)
    if a.check:
        ref = np.load(a.check)
        fm = mu_free_fast_model(int(ref["n_T"]))
        b = batch_fit(fm, ref["toys"], starts=a.starts)
        diff = np.abs(b.fval - ref["fval"])
        out = dict(n_toys=len(diff), converged_here=int(b.converged.sum()), converged_there=int(ref["converged"].sum()),
                   max_abs_fval_difference=float(diff.max()), device_here=str(jax.devices()[0]))
        print(json.dumps(out, indent=1))
        return

    t0 = time.perf_counter()
    fm = mu_free_fast_model(a.n_T)
    t_build = time.perf_counter() - t0
    toys = fm.pseudo_data(jax.random.PRNGKey(a.seed), fm.parameters.values(), n_toys=a.n_toys)
    t0 = time.perf_counter()
    b = batch_fit(fm, toys, starts=a.starts, chunk=a.chunk)
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    b = batch_fit(fm, toys, starts=a.starts, chunk=a.chunk)
    t_run = time.perf_counter() - t0
    on_bound = sum(any(b.at_lower[n][i] or b.at_upper[n][i] for n in b.names) for i in range(a.n_toys))
    out = dict(n_toys=a.n_toys, n_T=a.n_T, seed=a.seed, chunk=a.chunk, n_free=len(b.names), build_s=t_build,
               seconds=t_run, seconds_with_compile=t_first, fits_per_s=a.n_toys / t_run,
               converged=int(b.converged.sum()), toys_with_a_parameter_on_a_bound=int(on_bound),
               median_iterations=float(np.median(b.n_iter)), max_iterations=int(np.max(b.n_iter)),
               device=str(jax.devices()[0]), device_kind=jax.devices()[0].device_kind,
               jax=jax.__version__, nuejax=nuejax.__version__, date=datetime.date.today().isoformat())
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1)
    if a.npz:
        np.savez_compressed(a.npz, toys=np.asarray(toys), fval=b.fval, converged=b.converged, n_T=a.n_T)


if __name__ == "__main__":
    main()
