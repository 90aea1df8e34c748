"""Which XLA programs a nuejax command compiles, and what each cost: a first run's compilation
time by program, with operations dispatched one at a time (eager ``jnp`` steps, each its own small
program) grouped by the nuejax code that called them.

  python benchmarks/timings/compile_log.py [--out FILE.json] [--top 40] [--depth 4] [--set MOD.NAME=VALUE] -- borexino --no-plots --out DIR

The command runs in this process (``nuejax.cli.main``) with JAX's compile log on (float64, the
package's compilation cache on, as the commands have it); point ``NUEJAX_CACHE_DIR`` at an empty
folder for a first run. Each "Finished XLA compilation of NAME in S sec" record is kept with the
calling nuejax frames; programs named after a single ``jax.numpy`` or ``lax`` operation are listed
by caller (``file:line`` of the four outermost nuejax frames below the command). The command's
stage lines (``[k/n] ...``) are kept with their times. A SIGTERM (``timeout``) stops the command
and the report is still written (``rc``: ``"stopped"``), so a run cut short says where its time
went. Needs jax, numpy and nuejax (and what the command needs).
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import re
import signal
import sys
import time
import traceback

_FINISHED = re.compile(r"Finished XLA compilation of (.*?) in ([0-9.e+-]+) sec")
_STAGE = re.compile(r"\s*\[\d+/\d+\]")


DEPTH = 4  # nuejax frames named per caller (--depth)


def _caller() -> str:
    frames = [f for f in traceback.extract_stack() if "/nuejax/" in f.filename]
    return " < ".join(f"{f.filename.split('/nuejax/')[-1]}:{f.lineno}" for f in frames[2:2 + DEPTH])


def main(argv=None) -> int:
    global DEPTH
    argv = sys.argv[1:] if argv is None else list(argv)
    own, command = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, metavar="FILE.json")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--depth", type=int, default=DEPTH, help="nuejax frames named per caller (outermost first)")
    ap.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                    help="set a nuejax constant (a Python literal) before the command runs, e.g. "
                         "nuejax.inference.toys.ONE_PASS_ROWS=0 (repeatable)")
    a = ap.parse_args(own)
    DEPTH = a.depth
    if not command:
        ap.error("give the nuejax command after --")
    import jax

    import nuejax
    from nuejax.cache import enable_compilation_cache
    from nuejax.cli import main as nuejax_main

    nuejax.enable_x64()
    enable_compilation_cache()
    import ast
    import importlib

    for item in a.set:  # A/B runs of one setting (recorded in the report)
        target, value = item.split("=", 1)
        module, name = target.rsplit(".", 1)
        setattr(importlib.import_module(module), name, ast.literal_eval(value))
    records = []

    class Listen(logging.Handler):
        def emit(self, record):
            m = _FINISHED.search(record.getMessage())
            if m:
                name = m.group(1)
                # an eager operation's program is named after the operation: say who called it
                op = name[4:-1] if name.startswith("jit(") and name.endswith(")") else name
                eager = op.isidentifier() and (hasattr(jax.numpy, op.lstrip("_")) or hasattr(jax.lax, op.lstrip("_")))
                # a program compiled from a stored export (the solvers: "jit(call)") by its caller too
                records.append(dict(t=time.perf_counter(), name=name, s=float(m.group(2)),
                                    caller=_caller() if eager or name == "jit(call)" else None, eager=eager))

    handler = Listen()
    for name in ("jax._src.interpreters.pxla", "jax._src.dispatch", "jax._src.compiler"):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    jax.config.update("jax_log_compiles", True)
    stages = []

    class Stamped:  # the command's stage lines with their times, passed through unchanged
        def __init__(self, stream):
            self.stream = stream

        def write(self, text):
            for line in text.splitlines():
                if _STAGE.match(line):
                    stages.append(dict(t=time.perf_counter() - t0, line=line.strip()[:120]))
            return self.stream.write(text)

        def __getattr__(self, name):
            return getattr(self.stream, name)

    class Stopped(Exception):
        pass

    def stop(signum, frame):
        raise Stopped()

    signal.signal(signal.SIGTERM, stop)
    sys.stdout, sys.stderr = Stamped(sys.stdout), Stamped(sys.stderr)
    t0 = time.perf_counter()
    try:
        rc = nuejax_main(command) or 0
    except SystemExit as e:
        rc = e.code or 0
    except Stopped:
        rc = "stopped"
    wall = time.perf_counter() - t0
    sys.stdout, sys.stderr = sys.stdout.stream, sys.stderr.stream
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    groups = collections.defaultdict(lambda: [0, 0.0])
    for r in records:
        key = f"eager at {r['caller']}" if r["eager"] else r["name"]
        groups[key][0] += 1
        groups[key][1] += r["s"]
    top = sorted(groups.items(), key=lambda kv: -kv[1][1])
    print(f"\n{' '.join(command)}: {wall:.1f} s, {len(records)} programs compiled in "
          f"{sum(r['s'] for r in records):.1f} s (summed over threads)", file=sys.stderr)
    for key, (n, s) in top[:a.top]:
        print(f"{s:8.2f} s {n:5d}  {key[:150]}", file=sys.stderr)
    for st in stages:
        print(f"{st['t']:8.1f} s  {st['line']}", file=sys.stderr)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(dict(command=command, settings=a.set, wall_s=wall, rc=rc, jax=jax.__version__,
                           device=jax.devices()[0].device_kind, n_programs=len(records),
                           compile_s=sum(r["s"] for r in records),
                           groups=[dict(key=k, n=n, s=s) for k, (n, s) in top], stages=stages,
                           programs=[dict(t=r["t"] - t0, name=r["name"], s=r["s"], caller=r["caller"])
                                     for r in records]), f, indent=1)
    return 1 if rc == "stopped" else int(rc)


if __name__ == "__main__":
    sys.exit(main())
