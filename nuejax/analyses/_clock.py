"""The analysis commands' progress lines, timed: when each numbered stage ("[2/6] ...") began.

The commands report these under ``phase_start_seconds`` in their JSON, so that a timing run
(benchmarks/timings/command_times.py) says where a command's time goes without a profiler. A
stage that runs beside the others (``nuejax borexino`` on a machine with cores to spare) keeps its
lines in a :class:`StageBranch` and says them in the stages' order; its start is still the time it
began.
"""

from __future__ import annotations

import time
from concurrent.futures import wait

from .._internal.ahead import beside

__all__ = ["StageBranch", "StageClock", "each_beside", "with_stages_beside"]


class StageClock:
    """A progress callback that records the time (seconds since it was made) at which each stage
    line, a message starting ``[k/n]``, was first said (``starts``), and every line with the time
    it was said (``lines``; a line of work run beside, :meth:`replay`, with the time that work said
    it: the commands report them under ``progress_seconds``, so that a run says when each model's
    fits ended); messages are passed on untouched."""

    def __init__(self, progress=None):
        self._progress = progress
        self._t0 = time.perf_counter()
        self.starts: dict[str, float] = {}
        self.lines: list[tuple[float, str]] = []

    def __call__(self, msg: str) -> None:
        self._say(round(self.elapsed(), 3), msg)

    def _say(self, at: float, msg: str) -> None:
        if msg.startswith("[") and "]" in msg:
            self.starts.setdefault(msg[1:msg.index("]")], at)
        self.lines.append((at, msg))
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
            self._say(at, msg)

    def timed_lines(self) -> list:
        """``[[seconds, line], ...]`` of every line said (:attr:`lines`, stripped), for a JSON summary."""
        return [[at, msg.strip()] for at, msg in self.lines]


class StageBranch:
    """The lines of a stage run beside the others (:meth:`StageClock.branch`), with the time of
    each on the parent's clock."""

    def __init__(self, parent: StageClock):
        self._parent = parent
        self.lines: list[tuple[float, str]] = []

    def __call__(self, msg: str) -> None:
        self.lines.append((round(self._parent.elapsed(), 3), msg))

    def branch(self) -> "StageBranch":
        """A branch of this branch (work split again inside a stage run beside): its lines join
        this one's with :meth:`replay`, times on the same clock."""
        return StageBranch(self._parent)

    def replay(self, branch: "StageBranch") -> None:
        """Keep ``branch``'s lines after this one's."""
        self.lines.extend(branch.lines)


def with_stages_beside(say: StageClock, main, stages: dict, *, min_spare: int, allowed: bool = True):
    """``main()`` with the independent ``stages`` ({key: ``fn(say, in_turn)``}) beside it, each in a
    thread of its own (:func:`~nuejax._internal.ahead.beside`, where ``allowed`` and ``min_spare``
    cores are to spare) saying its lines into a :class:`StageBranch`; a stage that could not start
    beside runs in turn after ``main``, its lines said as they come. Returns ``(main's result,
    {key: stage's result})``; the stages' lines come after ``main``'s, in ``stages``' order. Every
    stage beside has ended before this returns or raises (also where ``main`` raised), so a
    caller's ``warnings.catch_warnings`` block around it outlives them."""
    branches = {k: say.branch() for k in stages}
    running = {k: beside(fn, branches[k], False, min_spare=min_spare) if allowed else None
               for k, fn in stages.items()}
    try:
        first = main()
    finally:
        wait([f for f in running.values() if f is not None])
    out = {}
    for k, fn in stages.items():
        if running[k] is not None:
            out[k] = running[k].result()
            say.replay(branches[k])
        else:
            out[k] = fn(say, True)
    return first, out


def each_beside(say, fn, items: dict, *, min_spare: int, allowed: bool = True, first=None) -> dict:
    """``{key: fn(key, value, say_k)}`` for every item of ``items``: the ``first`` (a key; default
    the first item) in this thread, each other in a thread of its own
    (:func:`~nuejax._internal.ahead.beside`, where ``allowed`` and ``min_spare`` cores are to
    spare; else all in this thread, in ``items``' order). Give ``first`` the longest call: this
    thread starts at once, while the others may wait for a thread. A call that
    has not started in its thread when this thread is done with its own runs here instead, so
    that calls nested in work already beside (a stage run beside splitting its own work) never
    wait for a thread that waits for them, whatever the number of threads. Where any runs beside,
    each call says its lines into a branch of ``say`` (a :class:`StageClock` or
    :class:`StageBranch`), said after every call has ended, in ``items``' order, so the output
    does not depend on which ended first (also where a call raised: the first error in ``items``'
    order is raised after every line is said); where none does, the calls say them to ``say`` as
    they come. On an accelerator the fits of independent models then compile side by side and
    their launches fill each other's gaps. Every call beside has ended before this returns or
    raises."""
    keys = list(items)
    if first is not None and first not in items:
        raise KeyError(f"each_beside: first={first!r} is not one of the items {keys}")
    own = keys[0] if first is None else first
    order = [own] + [k for k in keys if k != own]  # the order of the calls; lines keep ``items``'
    branches = {k: say.branch() for k in keys}
    running = {}
    try:
        for k in order:
            running[k] = beside(fn, k, items[k], branches[k], min_spare=min_spare) if allowed and k != own else None
        if all(f is None for f in running.values()):  # all in turn here, in ``items``' order: lines said as they come
            return {k: fn(k, items[k], say) for k in keys}
        out, errors = {}, {}
        for k in order:
            f = running[k]
            if f is None or f.cancel():  # this thread's own, or one no thread has taken yet
                try:
                    out[k] = fn(k, items[k], branches[k])
                except Exception as err:  # noqa: BLE001 - raised below, after every line is said
                    errors[k] = err
    finally:
        wait([f for f in running.values() if f is not None and not f.cancelled()])
    for k in keys:
        f = running[k]
        if f is not None and not f.cancelled():
            try:
                out[k] = f.result()
            except Exception as err:  # noqa: BLE001 - raised below, after every line is said
                errors[k] = err
        say.replay(branches[k])
    for k in keys:
        if k in errors:
            raise errors[k]
    return {k: out[k] for k in keys}
