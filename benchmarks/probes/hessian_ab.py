"""The fits' exact Hessian with and without the models' Poisson structure, and MIGRAD with each.

  python benchmarks/probes/hessian_ab.py --out FILE [--repeat 3] [--paths general fast]

The paper workload (``workload.PAPER_DIMS``, float64), Asimov data at ε^L_ee = 0.05, μ_ν = 3,
``run.py``'s start. Both paths declare linear parameters (the stages' ``linear_names``: the signal
normalisations and background rates; the fast path's ``FoldedPolynomial`` and ``AddTemplates``
stages too). For each mode, ``structured`` (:func:`nuejax.inference.fitting.value_grad_hessian`
using ``Model.linear_parameters``) and ``autodiff`` (``jax.hessian`` of -2 ln L, as when a model
declares no linear parameters, ``Model.linear_parameters`` patched to be empty): the median time of
``NLLCost.hessian`` at the start (a new point each time), and the fastest of ``--repeat`` fits
(:func:`nuejax.inference.fit`, MIGRAD with the exact Hessian, then the KKT check) after one
compiling fit, with its calls and -2 ln L. General path (25 free) and fast path (23 free: the
oscillation parameters fixed and baked in).
The modes alternate (structured, autodiff, structured) so that a drift of the machine shows; the
compiled functions are dropped at each switch (the route is chosen while tracing).
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402  (puts the repository root on sys.path too)


def main(argv=None):
    ap = common.parser(__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--paths", nargs="+", choices=("general", "fast"), default=["general", "fast"])
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    import numpy as np
    import workload

    from nuejax.inference import cost, fit, fitting
    from nuejax.inference.cost import NLLCost
    from nuejax.model import Model, fast_model

    warnings.simplefilter("ignore")  # Asimov data are not integer counts, by design
    model = workload.build(**workload.PAPER_DIMS)
    truth = model.parameters.values(workload.INJECTED)
    data = model.asimov(truth)
    start = dict(workload.FIT_START)
    cases = [("general", model, start)] if "general" in a.paths else []
    if "fast" in a.paths:
        # the fast path bakes the oscillation parameters in: at their values, fixed
        fast = fast_model(model.with_parameters(model.parameters.fix("sin2_theta12", "dm2_21")))
        cases.append(("fast", fast, {k: v for k, v in start.items() if k in fast.parameters}))
    declared = {Model: Model.linear_parameters}
    dev = jax.devices()[0]
    out = {"device": f"{dev.platform}: {getattr(dev, 'device_kind', '')}", "jax": jax.__version__,
           "date": time.strftime("%Y-%m-%d"), "runs": []}
    try:
        for mode in ("structured", "autodiff", "structured"):
            for cls, prop in declared.items():
                cls.linear_parameters = prop if mode == "structured" else property(lambda self: ())
            # the route is chosen while tracing: drop every compiled function of the other mode
            jax.clear_caches()
            fitting.compiled_solver.cache_clear()
            fitting.row_solver.cache_clear()
            cost._compiled.cache_clear()
            for label, m, st in cases:
                c = NLLCost(m, data, fixed=st)
                x = np.array([float(c.base[n]) for n in c.names])
                th = []
                for i in range(6):
                    t0 = time.perf_counter()
                    c.hessian(x * (1.0 + 1e-9 * i))  # a new point: no cached Hessian
                    th.append(time.perf_counter() - t0)
                fit(m, data, st)  # compile
                ts = []
                for _ in range(a.repeat):
                    t0 = time.perf_counter()
                    r = fit(m, data, st)
                    ts.append(time.perf_counter() - t0)
                rec = {"mode": mode, "path": label, "n_free": len(c.names), "hessian_ms": 1e3 * float(np.median(th[1:])),
                       "fit_s": min(ts), "fit_s_all": ts, "nfcn": r.nfcn, "ngrad": r.ngrad, "valid": r.valid,
                       "fval": r.fval}
                out["runs"].append(rec)
                print(rec, flush=True)
    finally:
        for cls, prop in declared.items():
            cls.linear_parameters = prop
        jax.clear_caches()
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
