"""Where the Phase-III model is built: on the default device (``NUEJAX_BUILD_ON_HOST=0``), or on
the host's CPU backend and then moved to the default device, as ``borexino_phase3_model`` does
by default on a GPU (nuejax._internal.placement; issue 29: the model stage of ``nuejax borexino``
took 76-80 s on a fresh H200 and 8.4 s warm, against 43-46 s and 3.7 s on 2 CPU cores).

  python benchmarks/timings/build_where.py --out FILE.json [--warm 2]

For each place (``device``, ``host``; the same on a CPU-only machine), in fresh processes on one empty cache folder per place:
a first build (empty tensor cache, empty compilation cache), then ``--warm`` builds on the folder
it left. Each process reports the build's wall time (``borexino_phase3_model()`` with the
calibration, until every leaf is on the default device), ``jax.monitoring``'s duration events
during the build by name (count and seconds: tracing, lowering, backend compilation or loading
from the compilation cache, the compilation time the cache saved), the first ``model.nll`` at
the defaults on the Phase-III data after the build, and a hash of every leaf.
Needs jax, numpy and nuejax only.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def _child(where: str) -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)
    import numpy as np

    from nuejax import cache
    from nuejax.analyses.borexino import borexino_phase3_model

    events: dict = {}

    def listen(event, secs, **kw):
        name = event.rsplit("/", 1)[-1]
        n, t = events.get(name, (0, 0.0))
        events[name] = (n + 1, t + secs)

    jax.monitoring.register_event_duration_secs_listener(listen)
    cache.enable_compilation_cache()
    jax.devices()
    t0 = time.perf_counter()
    model, data, cal = borexino_phase3_model()  # where: NUEJAX_BUILD_ON_HOST, set by the parent
    jax.block_until_ready(jax.tree_util.tree_leaves(model))
    t_build = time.perf_counter() - t0
    build_events = {k: {"n": n, "s": t} for k, (n, t) in events.items()}
    counts = np.asarray(data.counts)
    t0 = time.perf_counter()
    nll = float(model.nll(model.defaults(), counts))
    t_nll = time.perf_counter() - t0
    h = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(model):
        a = np.asarray(leaf)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    devs = {str(d) for leaf in jax.tree_util.tree_leaves(model) if hasattr(leaf, "devices") for d in leaf.devices()}
    return dict(where=where, build_s=t_build, events=build_events,
                first_nll_s=t_nll, nll=nll, leaves_sha256=h.hexdigest(), leaf_devices=sorted(devs),
                device=jax.devices()[0].device_kind, backend=jax.default_backend(), jax=jax.__version__)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, metavar="FILE")
    ap.add_argument("--warm", type=int, default=2)
    ap.add_argument("--places", default="device,host")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(_child(a.child)))
        return 0
    records = []
    for where in a.places.split(","):
        folder = tempfile.mkdtemp(prefix="nuejax-build-where-")
        env = dict(os.environ, NUEJAX_CACHE_DIR=folder, NUEJAX_BUILD_ON_HOST="0" if where == "device" else "1")
        for run in ["first"] + ["warm"] * a.warm:
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, __file__, "--out", a.out, "--child", where], env=env,
                               capture_output=True, text=True, timeout=1200)
            if p.returncode != 0:
                raise RuntimeError(f"{where} {run} failed:\n{p.stderr[-3000:]}")
            rec = json.loads(p.stdout.strip().splitlines()[-1])
            rec.update(run=run, process_s=time.perf_counter() - t0,
                       date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
            records.append(rec)
            print(json.dumps(rec), flush=True)
        shutil.rmtree(folder, ignore_errors=True)
    with open(a.out, "w") as f:
        json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
