"""Where a launch of the Neyman constructions' toy fits spends its device time: one warm launch of
the first pass (the default model's fast path, μ_ν released, 14 fitted parameters, as
``toy_throughput.py``) under ``jax.profiler.trace``, its device events summed by name.

    python benchmarks/probes/toy_kernel_profile.py [--rows 65536] [--top 30] [--json FILE]
                                                   [--model default|xenonnt] [--response auto|general]

Prints the launch's wall time, the summed device time, and the ``--top`` kernels (total time,
calls, share); with ``--json`` writes them.
"""
import dataclasses
import glob
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402  (puts the repository root on sys.path too)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import nuejax  # noqa: E402


def device_events(folder):
    """{"ops": {name: [seconds, calls]}, "kernels": {...}} of the device planes in the trace under
    ``folder``: the events of the "XLA Ops" lines (one per HLO operation) and of the stream lines
    (one per kernel launched)."""
    from jax.profiler import ProfileData

    out = {"ops": defaultdict(lambda: [0.0, 0]), "kernels": defaultdict(lambda: [0.0, 0])}
    for path in glob.glob(str(Path(folder) / "**" / "*.xplane.pb"), recursive=True):
        for plane in ProfileData.from_file(path).planes:
            if not plane.name.startswith("/device:"):
                continue
            for line in plane.lines:
                kind = "ops" if "xla ops" in line.name.lower() else "kernels" if "stream" in line.name.lower() else None
                if kind is None:
                    continue
                for ev in line.events:
                    e = out[kind][ev.name]
                    e[0] += ev.duration_ns * 1e-9
                    e[1] += 1
    return out


def main():
    ap = common.parser(__doc__)
    ap.add_argument("--rows", type=int, default=65536)
    ap.add_argument("--n-T", type=int, default=300)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--model", choices=("default", "xenonnt"), default="default",
                    help="the default model's fast path, or the XENONnT SR0 model's (nuejax xenonnt's μ_ν toys)")
    ap.add_argument("--response", choices=("auto", "general"), default="auto",
                    help="general: a response with fixed edges moves counts by migrate too (the A/B of migrate_width)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    nuejax.enable_x64()
    from nuejax.inference.construction import construction, observed_fits
    from nuejax.inference.toys import draw_parts, pass_kernels
    from nuejax.model import borexino_like_model, fast_model

    if a.response == "general":
        from nuejax.detector.transforms import ResponseTransform

        ResponseTransform.fixed_edges = property(lambda self: False)
    if a.model == "xenonnt":
        from nuejax.analyses.xenonnt import xenonnt_sr0_model

        sr0, data = xenonnt_sr0_model()
        m = fast_model(sr0).release("mu_nu")
    else:
        base = fast_model(borexino_like_model(n_T=a.n_T))
        m = base.with_parameters(base.parameters.release("mu_nu"))
        data = np.asarray(m.expected(m.defaults()))
    pr = construction(m, data, "mu_nu", None, None, starts=1)
    st = observed_fits(pr, np.array([[0.0], [2.0]]), max_iter=100, one_sided=False)
    parts = draw_parts(pr.full, st["gen_x"])
    kernel = pass_kernels(100, 1e-8, parts, pr.resample)[0]
    shell = dataclasses.replace(pr.full, data=None, aux_flat=None)
    g = np.arange(a.rows) % 2
    gen = jnp.asarray(st["gen_x"][g])
    mask = np.zeros(gen.shape, dtype=bool)
    idx = jnp.arange(a.rows, dtype=jnp.uint32)
    key = jnp.zeros(2, dtype=jnp.uint32)
    args = (shell, gen, gen, gen, jnp.asarray(mask), idx, key)
    jax.block_until_ready(kernel(*args))
    t = time.perf_counter()
    out = jax.block_until_ready(kernel(*args))
    wall = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as tmp:
        with jax.profiler.trace(tmp):
            jax.block_until_ready(kernel(*args))
        ev = device_events(tmp)
    res = {"device": jax.devices()[0].device_kind, "jax": jax.__version__, "rows": a.rows, "wall_s": wall,
           "still_running_after_pass": float(np.mean(np.asarray(out[3]) == 1))}
    for kind, events in ev.items():
        total = sum(v[0] for v in events.values())
        top = sorted(events.items(), key=lambda kv: -kv[1][0])[: a.top]
        res[kind] = {"seconds": total, "top": [{"name": k[:160], "seconds": v[0], "calls": v[1],
                                                "share": v[0] / total if total else None} for k, v in top]}
    print(json.dumps(res, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
