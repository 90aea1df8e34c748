"""The analysis commands' progress lines, timed: when each numbered stage ("[2/6] ...") began.

The commands report these under ``phase_start_seconds`` in their JSON, so that a timing run
(benchmarks/timings/command_times.py) says where a command's time goes without a profiler. A
stage that runs beside the others (``nuejax borexino`` on a machine with cores to spare) keeps its
lines in a :class:`StageBranch` and says them in the stages' order; its start is still the time it
began.
"""

from __future__ import annotations

import time

__all__ = ["StageBranch", "StageClock"]


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

    def branch(self) -> "StageBranch":
        """A clock for a stage that runs beside the others (in another thread): it keeps its lines
        and their times until :meth:`replay` says them here, in the stages' order."""
        return StageBranch(self)

    def replay(self, branch: "StageBranch") -> None:
        """Say ``branch``'s lines now; each stage's start is the time the branch said it."""
        for at, msg in branch.lines:
            if msg.startswith("[") and "]" in msg:
                self.starts.setdefault(msg[1:msg.index("]")], at)
            if self._progress is not None:
                self._progress(msg)


class StageBranch:
    """The lines of a stage run beside the others (:meth:`StageClock.branch`), with the time of
    each on the parent's clock."""

    def __init__(self, parent: StageClock):
        self._parent = parent
        self.lines: list[tuple[float, str]] = []

    def __call__(self, msg: str) -> None:
        self.lines.append((round(self._parent.elapsed(), 3), msg))
