"""What the benchmark scripts share: their paths, the import preamble, the command-line parser,
``run.py``'s timing statistics and the timing of the solver's launches.

A script in a subfolder (``timings/``, ``probes/``, ``accuracy/``) starts with the two lines

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
    import common  # noqa: E402  (puts the repository root on sys.path too)

after which ``import workload``, ``from common import call_stats`` and ``import nuejax`` (from this
checkout) work whichever folder the script is run from. Importing this module imports neither jax
nor numpy.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"

for _p in (str(BENCH), str(ROOT)):  # the repository root ends up first, as in the scripts' old preambles
    if _p not in sys.path:
        sys.path.insert(0, _p)


def parser(doc: str) -> argparse.ArgumentParser:
    """An argument parser described by the first line of a script's docstring."""
    return argparse.ArgumentParser(description=doc.splitlines()[0])


def compile_time(fn, *args) -> float:
    """Seconds of the first call of ``fn(*args)`` (its compilation), result blocked on."""
    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - t0


def call_stats(fn, *args, n=50) -> dict:
    """``run.py``'s timing statistics: one warm-up call, then ``n`` calls each blocked on; median and
    16th/84th percentiles in ms."""
    import jax

    jax.block_until_ready(fn(*args))
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        ts.append(time.perf_counter() - t0)
    import numpy as np

    ts = np.asarray(ts) * 1e3
    return {"median_ms": float(np.median(ts)), "p16_ms": float(np.percentile(ts, 16)),
            "p84_ms": float(np.percentile(ts, 84)), "n": n}


def call_stats_with_first(fn, *args, n=30) -> dict:
    """:func:`call_stats`, plus the first call's time (compilation) measured before them."""
    first = compile_time(fn, *args)
    return {**call_stats(fn, *args, n=n), "first_call_s": first}


def median_ms(fn, *args, n=50) -> float:
    """The median of :func:`call_stats`, in ms."""
    return call_stats(fn, *args, n=n)["median_ms"]


@contextlib.contextmanager
def timed_solver_launches(keep_inputs: bool = False):
    """Time every launch of the fits' solver program (``nuejax.inference.fitting.row_solver``)
    while the block runs: yields a list that gains ``(seconds, result)`` per launch, the seconds to
    the launch's end (``block_until_ready``), the result its rows' ``NewtonResult``; with
    ``keep_inputs`` ``(seconds, result, (problem, pins, starts))``."""
    import jax

    from nuejax.inference import fitting

    launches, solver = [], fitting.row_solver

    def timing(*args, **kw):
        f = solver(*args, **kw)

        def call(*operands):
            t = time.perf_counter()
            r = jax.block_until_ready(f(*operands))
            launches.append((time.perf_counter() - t, r) + ((operands[:3],) if keep_inputs else ()))
            return r
        return call

    fitting.row_solver = timing
    try:
        yield launches
    finally:
        fitting.row_solver = solver
