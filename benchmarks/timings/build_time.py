"""Build time of the default model with and without the on-disk tensor cache (nuejax.cache).

  python benchmarks/timings/build_time.py [--n-T 2000] [--repeat 3] [--out benchmarks/results/cpu2_build_time.json]

Every measurement runs in a fresh Python process, so no compiled program or loaded module is warm:

1. ``uncached``: ``borexino_like_model(n_T=...)`` with an empty temporary cache folder (builds,
   compiles and writes the entries);
2. ``cached``: the same in new processes on the same folder (``--repeat`` of them; loads);
3. ``disabled``: with ``NUEJAX_CACHE=0`` (the build without any cache work);

and in each: the import time (``jax`` + ``nuejax.model``), the cost of the cache's fingerprint
(backend start apart), the build, then the first ``model.nll(params, data)`` call after the build
(its compilation) and a second call. Each process hashes every leaf of its model, so the table
also says whether the cached builds equal the build that wrote the cache bit for bit; the build
with the cache off is compared by its -2 ln L (on a GPU two independent builds can differ in the
last bits: XLA's reduction order). The folder's size on
disk is reported; the folder is removed at the end. The operating system's page cache is not
dropped: the cached processes read files that were just written (a cold disk adds its read time
of the folder's size).

Needs only jax, numpy and nuejax (no iminuit, uproot or matplotlib): runs on a bare GPU machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _child(n_T: int) -> dict:
    """One measurement in this (fresh) process; the cache settings come from the environment."""
    t0 = time.perf_counter()
    import jax

    jax.config.update("jax_enable_x64", True)
    import numpy as np

    from nuejax import cache
    from nuejax.model import borexino_like_model

    t_import = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.devices()  # the backend starts here, not in the fingerprint below
    t_backend = time.perf_counter() - t0
    t0 = time.perf_counter()
    cache.source_digest(Path(cache.__file__).resolve().parent)
    t_source = time.perf_counter() - t0
    cache.fingerprint.cache_clear()
    t0 = time.perf_counter()
    cache.fingerprint()
    t_fingerprint = time.perf_counter() - t0
    cache.fingerprint.cache_clear()  # the build computes it again, as in any fresh process

    t0 = time.perf_counter()
    model = borexino_like_model(n_T=n_T)
    jax.block_until_ready(jax.tree_util.tree_leaves(model))
    t_build = time.perf_counter() - t0

    params = model.defaults()
    # fixed synthetic counts: no other compiled call (an Asimov spectrum) runs before the first nll
    data = np.full(model.n_obs, 50.0)
    t0 = time.perf_counter()
    first = float(model.nll(params, data))
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    second = float(model.nll(params, data))
    t_second = time.perf_counter() - t0

    import hashlib

    h = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves((tuple(model.signals), model)):
        a = np.asarray(leaf)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return dict(import_s=t_import, backend_start_s=t_backend, source_digest_s=t_source,
                fingerprint_s=t_fingerprint, build_s=t_build, first_nll_s=t_first, second_nll_s=t_second,
                nll=first, nll_again=second, leaves_sha256=h.hexdigest(),
                imported_iminuit="iminuit" in sys.modules, imported_uproot="uproot" in sys.modules,
                device=str(jax.devices()[0]), backend=jax.default_backend(), jax=jax.__version__)


def _run_child(n_T: int, env: dict) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", "--n-T", str(n_T)], env=env, capture_output=True,
                         text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"measurement process failed (exit {out.returncode}):\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _folder_size(folder: Path) -> tuple:
    files = [p for p in folder.iterdir() if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-T", type=int, default=2000, help="recoil bins per spectrum (default 2000)")
    ap.add_argument("--repeat", type=int, default=3, help="cached-build processes (default 3)")
    ap.add_argument("--out", default=None, metavar="FILE", help="write the JSON here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(_child(a.n_T)))
        return 0
    folder = Path(tempfile.mkdtemp(prefix="nuejax-build-time-"))
    base = {k: v for k, v in os.environ.items() if k not in ("NUEJAX_CACHE", "NUEJAX_CACHE_DIR")}
    on = dict(base, NUEJAX_CACHE_DIR=str(folder))
    off = dict(base, NUEJAX_CACHE="0", NUEJAX_CACHE_DIR=str(folder))
    runs = {}
    load_start = os.getloadavg() if hasattr(os, "getloadavg") else None  # other work on the machine
    try:
        print(f"n_T = {a.n_T}, cache folder {folder}", flush=True)
        runs["uncached"] = [_run_child(a.n_T, on)]
        print("uncached:", json.dumps(runs["uncached"][0]), flush=True)
        n_files, n_bytes = _folder_size(folder)
        runs["cached"] = []
        for _ in range(a.repeat):
            runs["cached"].append(_run_child(a.n_T, on))
            print("cached:", json.dumps(runs["cached"][-1]), flush=True)
        if _folder_size(folder) != (n_files, n_bytes):
            raise RuntimeError("the cached builds changed the cache folder: they were not all hits")
        runs["disabled"] = [_run_child(a.n_T, off)]
        print("disabled:", json.dumps(runs["disabled"][0]), flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    keys = ("import_s", "fingerprint_s", "source_digest_s", "build_s", "first_nll_s", "second_nll_s")
    summary = {mode: {k: statistics.median(r[k] for r in rs) for k in keys} for mode, rs in runs.items()}
    # The cached builds must reproduce the build that wrote the entries bit for bit. The build with
    # the cache off is an independent computation: on a GPU, XLA's reductions need not give the
    # same last bits in two processes, so it is compared by its -2 ln L.
    first = runs["uncached"][0]
    digests = {r["leaves_sha256"] for r in [first] + runs["cached"]}
    nlls = {r["nll"] for r in [first] + runs["cached"]}
    independent = runs["disabled"][0]
    independent_rel = abs(independent["nll"] / first["nll"] - 1.0)
    result = dict(
        date=datetime.date.today().isoformat(), host=platform.node(), cpu_count=os.cpu_count(),
        device=first["device"], backend=first["backend"], jax=first["jax"], n_T=a.n_T,
        command="python benchmarks/timings/build_time.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        load_average_start=load_start, load_average_end=os.getloadavg() if hasattr(os, "getloadavg") else None,
        cache_entries=n_files, cache_bytes=n_bytes, same_bits_everywhere=len(digests) == 1,
        same_nll_everywhere=len(nlls) == 1,
        independent_build_same_bits=independent["leaves_sha256"] == first["leaves_sha256"],
        independent_build_nll_rel_diff=independent_rel, imported_iminuit_or_uproot=any(
            r["imported_iminuit"] or r["imported_uproot"] for rs in runs.values() for r in rs),
        median=summary, runs=runs)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(result, indent=1) + "\n")

    print()
    print(f"default model, n_T = {a.n_T}, {result['device']}, {result['cpu_count']} CPUs, {result['date']}; "
          f"load average (1 min) {load_start[0] if load_start else float('nan'):.2f} at the start")
    print(f"{'seconds':>10} {'import':>8} {'fingerprint':>12} {'build':>8} {'1st nll':>8} {'2nd nll':>9}")
    for mode, s in summary.items():
        n = len(runs[mode])
        print(f"{mode:>10} {s['import_s']:8.2f} {s['fingerprint_s']:12.4f} {s['build_s']:8.2f} "
              f"{s['first_nll_s']:8.2f} {s['second_nll_s']:9.4f}" + (f"   (median of {n})" if n > 1 else ""))
    print(f"cache: {n_files} entries, {n_bytes / 1e6:.1f} MB on disk (uncompressed .npz); "
          f"source digest {summary['cached']['source_digest_s'] * 1e3:.1f} ms")
    print(f"cached builds identical to the build that wrote the cache: leaves {result['same_bits_everywhere']}, "
          f"-2 ln L {result['same_nll_everywhere']}; an independent build (cache off): same bits "
          f"{result['independent_build_same_bits']}, -2 ln L relative difference {independent_rel:.1e}")
    if not (result["same_bits_everywhere"] and result["same_nll_everywhere"]) or independent_rel > 1e-12:
        print("ERROR: the cached model differs from the uncached build", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
