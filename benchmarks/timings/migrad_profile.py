"""Where the time of a 25-parameter MIGRAD fit goes: calls, their time, and the rest.

  python benchmarks/timings/migrad_profile.py [--repeat 3] [--starts S] [--out FILE]

The paper workload (``workload.PAPER_DIMS``, float64, the general path, 25 free parameters),
Asimov data at ε^L_ee = 0.05, μ_ν = 3 and ``run.py``'s start. After one compiling fit, ``--repeat``
fits of :func:`nuejax.inference.fit` (MIGRAD with the exact gradient and Hessian, the KKT check,
the Newton continuation) are timed whole, and the time inside ``NLLCost``'s value, gradient and
Hessian calls is summed (wall time of each call, the host's work in it included): the remainder
is iminuit's own work and what ``fit`` does after MIGRAD. No iminuit-free fallback: the GPU
machine needs iminuit carried as a wheel (benchmarks/NOTES.md).

``--starts S``: the fit's multi-start design (``fit(..., starts=S)``; default: the library's
``DEFAULT_STARTS``, whose batched Newton fits from every start run before MIGRAD); ``--starts 1``
times MIGRAD alone from the one start.
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
    ap.add_argument("--starts", type=int, default=None)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    import workload

    from nuejax.inference import fit
    from nuejax.inference.cost import NLLCost
    from nuejax.model import KernelFold

    warnings.simplefilter("ignore")  # Asimov data are not integer counts, by design
    t0 = time.perf_counter()
    model = workload.build(**workload.PAPER_DIMS)
    data = model.asimov(model.parameters.values(workload.INJECTED))
    build_s = time.perf_counter() - t0
    start = dict(workload.FIT_START)
    kw = {} if a.starts is None else {"starts": a.starts}
    t0 = time.perf_counter()
    fit(model, data, start, **kw)
    first_s = time.perf_counter() - t0

    spent = {"value": [0, 0.0], "grad": [0, 0.0], "hessian": [0, 0.0]}
    original = {k: getattr(NLLCost, "__call__" if k == "value" else k) for k in spent}

    def timed(kind):
        fn = original[kind]

        def wrapper(self, *x):
            t = time.perf_counter()
            try:
                return fn(self, *x)
            finally:
                spent[kind][0] += 1
                spent[kind][1] += time.perf_counter() - t
        return wrapper

    dev = jax.devices()[0]
    out = {"device": f"{dev.platform}: {getattr(dev, 'device_kind', '')}", "jax": jax.__version__,
           "date": time.strftime("%Y-%m-%d"), "starts": a.starts, "build_s": build_s, "first_fit_s": first_s,
           "kernel_blocks": model.stage(KernelFold).kernel_blocks is not None, "fits": []}
    for _ in range(a.repeat):
        for k in spent:
            spent[k] = [0, 0.0]
        NLLCost.__call__, NLLCost.grad, NLLCost.hessian = timed("value"), timed("grad"), timed("hessian")
        try:
            t0 = time.perf_counter()
            r = fit(model, data, start, **kw)
            total = time.perf_counter() - t0
        finally:
            NLLCost.__call__, NLLCost.grad, NLLCost.hessian = original["value"], original["grad"], original["hessian"]
        calls = sum(v[1] for v in spent.values())
        row = {"s": total, "valid": r.valid, "minimizer": r.minimizer, "fval": r.fval, "nfcn": r.nfcn, "ngrad": r.ngrad,
               "n_starts": r.n_starts, **{f"{k}_calls": v[0] for k, v in spent.items()}, **{f"{k}_s": v[1] for k, v in spent.items()},
               "rest_s": total - calls, "newton_iterations": r.diagnostics.get("newton_iterations")}
        out["fits"].append(row)
        print({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
    best = min(out["fits"], key=lambda f: f["s"])
    out["fit_s"] = best["s"]
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
