"""The analysis commands' progress lines, timed: when each numbered stage ("[2/6] ...") began.

The commands report these under ``phase_start_seconds`` in their JSON, so that a timing run
(benchmarks/timings/command_times.py) says where a command's time goes without a profiler.
"""

from __future__ import annotations

import time

__all__ = ["StageClock"]


class StageClock:
    """A progress callback that records the time (seconds since it was made) at which each stage
    line, a message starting ``[k/n]``, was first said; other messages are passed on untouched."""

    def __init__(self, progress=None):
        self._progress = progress
        self._t0 = time.perf_counter()
        self.starts: dict[str, float] = {}

    def __call__(self, msg: str) -> None:
        if msg.startswith("[") and "]" in msg:
            self.starts.setdefault(msg[1:msg.index("]")], round(self.elapsed(), 3))
        if self._progress is not None:
            self._progress(msg)

    def elapsed(self) -> float:
        return time.perf_counter() - self._t0
