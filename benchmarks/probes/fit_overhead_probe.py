"""Where a 25-parameter ``fit`` spends the time that is not MIGRAD's calls, and whether a gradient
can be computed ahead of MIGRAD's request without delaying its next value.

  python benchmarks/probes/fit_overhead_probe.py [--n 100] [--repeat 3] [--quick] [--out FILE]

The paper workload (float64, general path, 25 free parameters), Asimov data and ``run.py``'s
start, as in ``migrad_profile.py``. After one compiling fit:

* ``fits``: ``--repeat`` timed fits;
* ``cprofile``: one fit under :mod:`cProfile`, the functions with the largest own time
  (``tottime``) and the largest cumulative time;
* ``end_point``: at the fit's end point, the bound-constrained solver's launch as ``fit`` used to
  make it after every MIGRAD (results copied to the host), the value, gradient and Hessian alone
  (``value_grad_hess``), with the KKT test on the model's device, and ``end_point_report`` (the
  same test on the host's copies, what ``fit`` does now);
* ``calls``: per call, with a new parameter vector each time: ``NLLCost`` values in a loop;
  values each followed by an *un-awaited* value + gradient at the same point (a gradient computed
  ahead of MIGRAD's request); value + gradient in a loop;
* ``kernels``: instructions of the compiled value and value + gradient programs (the optimized
  HLO's entry computation, parameters, constants, tuples and bitcasts not counted).
"""

from __future__ import annotations

import cProfile
import json
import pstats
import re
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402  (puts the repository root on sys.path too)

_NOT_COUNTED = ("parameter(", "constant(", "get-tuple-element(", "tuple(", "bitcast(")


def entry_instructions(hlo_text: str) -> dict:
    """Counts of the entry computation's instructions by opcode (the optimized HLO text)."""
    lines, inside = [], False
    for line in hlo_text.splitlines():
        if line.startswith("ENTRY"):
            inside = True
            continue
        if inside:
            if line.startswith("}"):
                break
            lines.append(line)
    counts: dict = {}
    for line in lines:
        if "=" not in line or any(op in line for op in _NOT_COUNTED):
            continue
        m = re.search(r"([a-z][a-z0-9_-]*)\((%|\))", line.split("=", 1)[1])
        op = m.group(1) if m else "?"
        counts[op] = counts.get(op, 0) + 1
    return counts


def _stats(pr: cProfile.Profile, key: str, n: int = 25) -> list:
    st = pstats.Stats(pr)
    st.sort_stats(key)
    rows = []
    for func in st.fcn_list[:n]:
        cc, nc, tt, ct, _ = st.stats[func]
        rows.append({"function": f"{Path(func[0]).name}:{func[1]}({func[2]})", "calls": nc, "tottime_s": tt,
                     "cumtime_s": ct})
    return rows


def main(argv=None):
    ap = common.parser(__doc__)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="the reduced workload (workload.QUICK_DIMS)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    import workload

    from nuejax.inference import FitProblem, fit
    from nuejax.inference.cost import NLLCost, _compiled, host_output_sharding
    from nuejax.inference.fitting import end_point_report, solve_rows, value_grad_hess
    from nuejax.inference.newton import kkt

    warnings.simplefilter("ignore")  # Asimov data are not integer counts, by design
    model = workload.build(**(workload.QUICK_DIMS if a.quick else workload.PAPER_DIMS))
    data = model.asimov(model.parameters.values(workload.INJECTED))
    start = dict(workload.FIT_START)
    dev = jax.devices()[0]
    out = {"device": f"{dev.platform}: {getattr(dev, 'device_kind', '')}", "jax": jax.__version__,
           "date": time.strftime("%Y-%m-%d")}
    t0 = time.perf_counter()
    r = fit(model, data, start)
    out["first_fit_s"] = time.perf_counter() - t0
    fits = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        r = fit(model, data, start)
        fits.append({"s": time.perf_counter() - t0, "nfcn": r.nfcn, "ngrad": r.ngrad, "minimizer": r.minimizer,
                     "newton_iterations": r.diagnostics.get("newton_iterations"), "fval": r.fval})
    out["fits"] = fits
    print("fits", [round(f["s"], 4) for f in fits], flush=True)
    pr = cProfile.Profile()
    pr.enable()
    fit(model, data, start)
    pr.disable()
    out["cprofile"] = {"tottime": _stats(pr, "tottime"), "cumulative": _stats(pr, "cumulative")}

    # -- the end point ---------------------------------------------------------------------------
    s = FitProblem.create(model, data, init=start)
    x_m = np.array([r.values[n] for n in s.names])
    edm_goal = 0.002 * 0.001
    def launch():
        res = solve_rows(s, x_m[None], max_iter=100, edm_tol=float(edm_goal))
        return [np.asarray(v)[0] for v in res]

    kkt_device = jax.jit(kkt)

    def device_kkt():
        v, g, H = value_grad_hess(s, x_m)
        res = kkt_device(jnp.asarray(x_m), jnp.asarray(g), jnp.asarray(H), jnp.asarray(s.lower),
                         jnp.asarray(s.upper), edm_tol=edm_goal)
        return [np.asarray(z) for z in res]

    def timed(fn, n=20):
        fn()
        ts = []
        for _ in range(n):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return {"median_ms": float(np.median(ts) * 1e3), "min_ms": float(np.min(ts) * 1e3)}

    out["end_point"] = {"solver_launch": timed(launch), "value_grad_hess": timed(lambda: value_grad_hess(s, x_m)),
                        "value_grad_hess_and_device_kkt": timed(device_kkt),
                        "end_point_report": timed(lambda: end_point_report(s, x_m, edm_goal))}
    print("end point", out["end_point"], flush=True)

    # -- calls -----------------------------------------------------------------------------------
    c = NLLCost(model, data, fixed=start)
    x0 = np.array([float(c.base[n]) for n in c.names])
    rng = np.random.default_rng(0)
    xs = [x0 * (1 + 1e-6 * rng.normal(size=x0.size)) for _ in range(a.n)]
    vg_host = c._vg_host  # the compiled value + gradient written where the host reads it

    def per_call(fn):
        fn(xs[0])
        t = time.perf_counter()
        for x in xs:
            fn(x)
        return (time.perf_counter() - t) / len(xs) * 1e3

    pending = []

    def value_then_ahead(x):
        v = c(x)
        pending.append(vg_host(x, c.problem))
        return v

    calls = {"value_ms": per_call(lambda x: c(x)),
             "value_then_unawaited_grad_ms": per_call(value_then_ahead),
             "value_and_grad_ms": per_call(lambda x: jax.device_get(vg_host(x, c.problem)))}
    jax.block_until_ready(pending)
    out["calls"] = calls
    print("calls", calls, flush=True)

    # -- kernels ---------------------------------------------------------------------------------
    out_sh = host_output_sharding(dev)
    kern = {}
    for kind in ("value", "value_and_grad"):
        text = _compiled(kind, out_sh).lower(x0, c.problem).compile().as_text()
        counts = entry_instructions(text)
        kern[kind] = {"total": sum(counts.values()), "by_opcode": counts}
    out["kernels"] = kern
    print("kernels", {k: v["total"] for k, v in kern.items()}, flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
