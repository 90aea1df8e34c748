"""What one ``NLLCost`` call costs when a minimiser makes it, against the same computation timed
in a loop: the paper workload's -2 ln L value (float64, 25 free parameters).

  python benchmarks/probes/cost_call_probe.py [--n 100] [--out FILE]

Each variant is timed per call (median of ``--n``), each call ended by a host copy of its
result, as MIGRAD's callbacks do:

* ``loop_same_x``: the compiled value on one device array, result blocked on (``run.py``'s way);
* ``loop_float``: the same, result copied to a Python float;
* ``new_x_asarray``: a new numpy vector each call, put on the device with ``jnp.asarray``;
* ``new_x_numpy``: the numpy vector handed to the compiled function as it is;
* ``cost_call``: ``NLLCost.__call__`` with a new vector (what MIGRAD's line search calls);
* ``cost_grad``: ``NLLCost.grad`` with a new vector;
* ``cost_call_after_gap``: ``NLLCost.__call__`` after the host idled ``--gap-ms`` (MIGRAD's own
  work between calls), the gap not counted;
* ``migrad_pattern``: value, value, gradient at new points, per call;
* ``trivial_float``: a trivial compiled call (a sum of the vector) copied to a float: the host
  round trip alone;
* ``device_get``: ``loop_float`` with ``jax.device_get`` instead of ``float``;
* ``pinned_host_out``: the value compiled to write its result into pinned host memory
  (``out_shardings`` with ``memory_kind="pinned_host"``), where the backend has that memory.
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
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--gap-ms", type=float, default=1.0)
    ap.add_argument("--quick", action="store_true", help="the reduced workload (workload.QUICK_DIMS)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    import workload

    from nuejax.inference.cost import NLLCost

    warnings.simplefilter("ignore")
    model = workload.build(**(workload.QUICK_DIMS if a.quick else workload.PAPER_DIMS))
    data = model.asimov(model.parameters.values(workload.INJECTED))
    c = NLLCost(model, data)
    x0 = np.array([float(c.base[n]) for n in c.names])
    rng = np.random.default_rng(0)
    xs = [x0 * (1 + 1e-6 * rng.normal(size=x0.size)) for _ in range(3 * a.n + 3)]
    val = c._value
    xj = jnp.asarray(x0)

    def per_call(fn, n=a.n, gap=0.0):
        fn(0)
        ts = []
        for i in range(1, n + 1):
            if gap:
                time.sleep(gap)
            t = time.perf_counter()
            fn(i)
            ts.append(time.perf_counter() - t)
        return float(np.median(ts) * 1e3)

    out = {"device": str(jax.devices()[0]), "jax": jax.__version__, "date": time.strftime("%Y-%m-%d"), "ms": {}}
    ms = out["ms"]
    ms["loop_same_x"] = per_call(lambda i: val(xj, c.problem).block_until_ready())
    ms["loop_float"] = per_call(lambda i: float(val(xj, c.problem)))
    ms["new_x_asarray"] = per_call(lambda i: float(val(jnp.asarray(xs[i]), c.problem)))
    ms["new_x_numpy"] = per_call(lambda i: float(val(xs[i], c.problem)))
    ms["cost_call"] = per_call(lambda i: c(xs[i]))
    ms["cost_grad"] = per_call(lambda i: c.grad(xs[i]))
    ms["cost_call_after_gap"] = per_call(lambda i: c(xs[i]), gap=a.gap_ms * 1e-3)

    def pattern(i):
        c(xs[3 * i]), c(xs[3 * i + 1]), c.grad(xs[3 * i + 2])

    ms["migrad_pattern_per_call"] = per_call(pattern, n=a.n // 3) / 3
    trivial = jax.jit(lambda x: jnp.sum(x))
    ms["trivial_float"] = per_call(lambda i: float(trivial(xj)))
    ms["device_get"] = per_call(lambda i: jax.device_get(val(xj, c.problem)))
    try:
        from nuejax.inference import cost as cost_module

        dev = jax.devices()[0]
        pinned = jax.sharding.SingleDeviceSharding(dev, memory_kind="pinned_host")
        f = jax.jit(cost_module._value, out_shardings=pinned)
        ms["pinned_host_out"] = per_call(lambda i: float(f(xj, c.problem)))
    except Exception as err:  # noqa: BLE001 - a backend without pinned host memory
        out["pinned_host_out_error"] = f"{type(err).__name__}: {err}"[:300]
    for k, v in ms.items():
        print(f"{k:24s} {v:8.3f} ms", flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
