"""Kernel-level profile of one general-path -2 ln L value + gradient on a GPU.

  python benchmarks/probes/gpu_trace.py [--quick] [--out FILE]

Traces ``--calls`` calls with ``jax.profiler`` (Perfetto trace), then sums the device-side
events by name: the kernels that take the time, their count per call, the device busy time per
call against the wall time per call (the rest is launch gaps and host dispatch).
"""

from __future__ import annotations

import glob
import gzip
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402  (puts the repository root on sys.path too)


def main(argv=None):
    ap = common.parser(__doc__)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--what", default="value_and_grad", choices=("value", "value_and_grad"))
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    import workload

    model = workload.build(**(workload.QUICK_DIMS if args.quick else workload.PAPER_DIMS))
    p = model.parameters.values(eps_ee_L=0.05, mu_nu=3.0)
    free = model.parameters.free_names
    data = model.asimov(p)
    fixed = {k: v for k, v in p.items() if k not in free}
    pf = {k: p[k] for k in free}

    def nll(m, pf):
        return m.nll({**fixed, **pf}, data)

    fn = jax.jit(jax.value_and_grad(nll, argnums=1) if args.what == "value_and_grad" else nll)
    for _ in range(5):
        jax.block_until_ready(fn(model, pf))
    d = tempfile.mkdtemp()
    t0 = time.perf_counter()
    with jax.profiler.trace(d, create_perfetto_trace=True):
        for _ in range(args.calls):
            jax.block_until_ready(fn(model, pf))
    wall = (time.perf_counter() - t0) / args.calls
    files = glob.glob(f"{d}/**/perfetto_trace.json.gz", recursive=True)
    trace = json.load(gzip.open(files[0]))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    pid_names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    dev = defaultdict(lambda: [0, 0.0])
    busy = 0.0
    for e in events:
        if e.get("ph") != "X":
            continue
        pname = pid_names.get(e["pid"], "")
        if "/device:GPU" not in pname and "GPU" not in pname:
            continue
        name = e.get("name", "?")
        dev[name][0] += 1
        dev[name][1] += float(e.get("dur", 0.0))
    rows = sorted(((k, c / args.calls, t / args.calls) for k, (c, t) in dev.items()), key=lambda r: -r[2])
    busy = sum(r[2] for r in rows)
    out = {"device": str(jax.devices()[0].device_kind), "jax_version": jax.__version__, "what": args.what,
           "wall_us_per_call_traced": wall * 1e6, "device_event_us_per_call": busy,
           "events_per_call": sum(r[1] for r in rows), "processes": sorted(set(pid_names.values())),
           "top": [{"name": k[:160], "per_call": c, "us_per_call": t} for k, c, t in rows[:40]]}
    text = json.dumps(out, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
