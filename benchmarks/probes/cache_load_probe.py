"""Where a nuejax command's compilation time goes, program by program: the key of JAX's persistent
compilation cache, the entry's read, its decompression and the executable's deserialization (a
hit), or XLA's compilation, the executable's serialization, its compression and the entry's
write (a miss).

    python benchmarks/probes/cache_load_probe.py [--out FILE.json] [--top 15] -- combine --no-plots --out DIR

The command runs in this process (``nuejax.cli.main``, float64, the package's caches on as the
commands have them); point ``NUEJAX_CACHE_DIR`` at an empty folder for a first run, run it again
for a warm one. JAX's functions on the way (``jax._src.compiler`` and
``jax._src.compilation_cache``, JAX 0.10-0.11) are wrapped with timers; the deserialization is
what the cache read takes beyond reading and decompressing the entry, the serialization what the
write takes beyond compressing and storing it. Times are wall times of each call, summed over the
command's threads (its stages run beside each other). The compressor is JAX's choice: zstandard
where it is installed, else zlib (``compressor`` in the report). Needs jax, numpy and nuejax.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import threading
import time


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    own, command = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, metavar="FILE.json")
    ap.add_argument("--top", type=int, default=15)
    a = ap.parse_args(own)
    if not command:
        ap.error("give the nuejax command after --")
    import jax
    import jax._src.compilation_cache as cc
    import jax._src.compiler as compiler
    import jax._src.lru_cache as lru

    import nuejax
    from nuejax.cache import enable_compilation_cache
    from nuejax.cli import main as nuejax_main

    nuejax.enable_x64()
    enable_compilation_cache()
    records, here = [], threading.local()

    def timed(owner, name, part, size=False):
        f = getattr(owner, name)

        def wrapper(*args, **kw):
            t0 = time.perf_counter()
            out = f(*args, **kw)
            rec = getattr(here, "rec", None)
            if rec is not None:
                rec[part] = rec.get(part, 0.0) + time.perf_counter() - t0
                if size:  # bytes in and out of the (de)compressor
                    rec[part + "_in"], rec[part + "_out"] = len(args[0]), len(out)
            return out

        setattr(owner, name, wrapper)
        return f

    # one record per program: opened where JAX resolves the cache key (the first step of
    # compile_or_get_cached), closed by the read or the compile-and-write that follows it
    resolve = compiler._resolve_compilation_strategy

    def resolve_timed(computation, devices, compile_options, backend, pgle, multi, module_name, *rest):
        here.rec = rec = {"name": module_name, "t": time.perf_counter() - t_start}
        t0 = time.perf_counter()
        out = resolve(computation, devices, compile_options, backend, pgle, multi, module_name, *rest)
        rec["key"] = time.perf_counter() - t0
        records.append(rec)
        return out

    compiler._resolve_compilation_strategy = resolve_timed
    timed(compiler, "_cache_read", "read_total")
    timed(compiler, "_compile_and_write_cache", "miss_total")
    timed(compiler, "backend_compile_and_load", "compile")
    timed(cc, "decompress_executable", "decompress", size=True)
    timed(cc, "compress_executable", "compress", size=True)
    timed(lru.LRUCache, "get", "file_get")
    timed(lru.LRUCache, "put", "file_put")
    compressor = "zstd" if getattr(cc, "zstd", None) else "zstandard" if getattr(cc, "zstandard", None) else "zlib"
    t_start = time.perf_counter()
    try:
        rc = nuejax_main(command) or 0
    except SystemExit as e:
        rc = e.code or 0
    wall = time.perf_counter() - t_start
    for r in records:
        hit = "decompress" in r
        r["hit"] = hit
        if hit:
            r["deserialize"] = r["read_total"] - r.get("file_get", 0.0) - r["decompress"]
        elif "miss_total" in r:
            r["serialize"] = r["miss_total"] - r.get("compile", 0.0) - r.get("compress", 0.0) - r.get("file_put", 0.0)
        r["total"] = r["key"] + r.get("read_total", 0.0) + r.get("miss_total", 0.0)
    parts = ("key", "file_get", "decompress", "deserialize", "compile", "serialize", "compress", "file_put", "total")
    sums = collections.OrderedDict((p, sum(r.get(p, 0.0) for r in records)) for p in parts)
    n_hit = sum(r["hit"] for r in records)
    print(f"\n{' '.join(command)}: {wall:.1f} s; {len(records)} programs ({n_hit} cache hits), compressor {compressor}",
          file=sys.stderr)
    print("summed over threads [s]: " + ", ".join(f"{p} {v:.2f}" for p, v in sums.items()), file=sys.stderr)
    mb = 1e6
    for r in sorted(records, key=lambda r: -r["total"])[:a.top]:
        if r["hit"]:
            what = (f"hit: key {r['key']:.3f} get {r.get('file_get', 0):.3f} decompress {r['decompress']:.3f} "
                    f"({r['decompress_in'] / mb:.1f} -> {r['decompress_out'] / mb:.1f} MB) deserialize {r['deserialize']:.3f}")
        else:
            what = (f"miss: key {r['key']:.3f} compile {r.get('compile', 0):.3f} serialize {r.get('serialize', 0):.3f} "
                    f"compress {r.get('compress', 0):.3f} ({r.get('compress_in', 0) / mb:.1f} -> "
                    f"{r.get('compress_out', 0) / mb:.1f} MB) put {r.get('file_put', 0):.3f}")
        print(f"{r['total']:8.3f} s  {r['name'][:40]:40s} {what}", file=sys.stderr)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(dict(command=command, wall_s=wall, rc=rc, jax=jax.__version__, compressor=compressor,
                           device=jax.devices()[0].device_kind, n_programs=len(records), n_hits=n_hit,
                           sums=sums, programs=records), f, indent=1)
    return int(rc) if isinstance(rc, int) else 1


if __name__ == "__main__":
    sys.exit(main())
