"""Poisson toys of the full default model: batch_fit against MIGRAD, fit() and L-BFGS-B.

The measurement of issue 9 ("false convergence at bounds"), repeatable: toys drawn at the
default parameter values of ``borexino_like_model()`` (mu_nu released, so it can sit on its zero
bound), every toy fitted by

- ``batch_fit`` (the bound-constrained Newton solver, all toys in one launch),
- raw MIGRAD (``iminuit.Minuit`` on ``NLLCost``, started at the defaults),
- ``nuejax.inference.fit`` (MIGRAD finished on the bounded solver),
- scipy L-BFGS-B on the same cost and gradient (an independent bounded minimiser).

All use the fast path (equal to the general path to ~1e-12, tests/test_model_fast.py) so that the
references cost seconds, not minutes. Reports, per method, the largest excess of -2 ln L over
the best of all four on each toy, how many toys it calls converged/valid, and its time.

Run: python benchmarks/accuracy/toys_at_bounds.py [--n-toys 30] [--n-T 300] [--json out.json]
"""

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
    ap = toy_parser(__doc__.splitlines()[0], n_toys=30)
    a = ap.parse_args(argv)

    import jax
    from iminuit import Minuit
    from scipy.optimize import minimize

    import nuejax

    nuejax.enable_x64()
    from nuejax.inference import NLLCost, batch_fit, fit
    from nuejax.model.checks import NonIntegerCountsWarning

    warnings.simplefilter("ignore", NonIntegerCountsWarning)
    t0 = time.perf_counter()
    fm = mu_free_fast_model(a.n_T)
    print(f"model built in {time.perf_counter() - t0:.1f} s")
    truth = fm.parameters.values()
    toys = np.asarray(fm.pseudo_data(jax.random.PRNGKey(a.seed), truth, n_toys=a.n_toys))

    t0 = time.perf_counter()
    b = batch_fit(fm, toys)
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    b = batch_fit(fm, toys)
    t_batch = time.perf_counter() - t0
    names = b.names
    lo, hi = fm.parameters.bounds(names)

    rows = []
    t_mig = t_fit = t_lb = 0.0
    for i in range(len(toys)):
        c = NLLCost(fm, toys[i])
        x0 = np.array([float(c.base[n]) for n in names])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            mi = Minuit(c, x0)
            mi.migrad()
            t_mig += time.perf_counter() - t
            t = time.perf_counter()
            f = fit(fm, toys[i])
            t_fit += time.perf_counter() - t
        t = time.perf_counter()
        lb = minimize(lambda x, c=c: (c(x), c.grad(x)), x0, jac=True, method="L-BFGS-B", bounds=list(zip(lo, hi)),
                      options=dict(maxiter=10000, ftol=1e-15, gtol=1e-10, maxfun=40000))
        t_lb += time.perf_counter() - t
        on_bound = [n for n in names if b.at_lower[n][i] or b.at_upper[n][i]]
        rows.append(dict(batch=float(b.fval[i]), migrad=float(mi.fval), fit=float(f.fval), lbfgsb=float(lb.fun),
                         batch_converged=bool(b.converged[i]), migrad_valid=bool(mi.valid), fit_valid=bool(f.valid),
                         on_bound=on_bound))
    fv = np.array([[r["batch"], r["migrad"], r["fit"], r["lbfgsb"]] for r in rows])
    best = fv.min(axis=1)
    excess = fv - best[:, None]
    out = dict(
        n_toys=a.n_toys, n_T=a.n_T, seed=a.seed, free=list(names),
        toys_with_a_parameter_on_a_bound=int(sum(bool(r["on_bound"]) for r in rows)),
        batch=dict(converged=int(b.converged.sum()), max_excess=float(excess[:, 0].max()),
                   seconds=t_batch, seconds_with_compile=t_first),
        migrad=dict(valid=int(sum(r["migrad_valid"] for r in rows)), max_excess=float(excess[:, 1].max()),
                    toys_above_1e_3=int((excess[:, 1] > 1e-3).sum()), seconds=t_mig),
        fit=dict(valid=int(sum(r["fit_valid"] for r in rows)), max_excess=float(excess[:, 2].max()), seconds=t_fit),
        lbfgsb=dict(max_excess=float(excess[:, 3].max()), toys_above_1e_3=int((excess[:, 3] > 1e-3).sum()),
                    seconds=t_lb),
        jax=jax.__version__, nuejax=nuejax.__version__,
    )
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(dict(out, toys=rows), fh, indent=1)


if __name__ == "__main__":
    main()
