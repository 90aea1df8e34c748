"""Work ahead in a background thread: compiling the programs the process will need next while the
current work runs.

XLA compiles a program on one core and releases Python's GIL while it does, so on a machine with a
core to spare a program compiles beside the running work for free: building the pp spectrum
(a continuum) and the pep line, whose programs differ, took 25.5 s one after the other on 2 cores
and 17.4 s side by side (benchmarks/NOTES.md). A compiled program is shared by the whole process:
a later call of the same function with arguments of the same shapes finds it and only traces.

What runs here is only ever a warm-up: its result is thrown away and the caller computes its own
(or loads what the warm-up stored in the on-disk cache, under a key computed in the same thread as
the stored arrays). JAX's settings that a ``with`` block changes for one thread only are carried
over from the caller: 64-bit mode and the default device (a model build runs under
:func:`~nuejax._internal.placement.on_host`); a warm-up under other settings would compile
programs the caller never runs. Errors of a warm-up are swallowed: the caller's own call raises
them where they belong.

:func:`beside` runs real work in a thread of its own: independent stages of an analysis
(``nuejax borexino``'s magnetic-moment and NSI stages beside its fit, CNO profile and goodness of
fit), whose programs then trace, lower and compile side by side where the machine has the cores.
Their results are the same programs' on the same inputs, bit for bit (tests/test_ahead.py).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import jax

from ..cache import env_switch

__all__ = ["BESIDE_WORKERS", "ENV_AHEAD", "WARM_UP_WORKERS", "ahead", "beside", "spare_cores", "wait", "warm_ups"]

_POOLS: dict[str, ThreadPoolExecutor] = {}
_LOCK = threading.Lock()


def spare_cores() -> int:
    """Cores this process may use beyond the one that runs its main work (0 on a single core)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        n = os.cpu_count() or 1
    return max(0, n - 1)


def _pool(name: str, workers: int) -> ThreadPoolExecutor:
    with _LOCK:
        if name not in _POOLS:
            _POOLS[name] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"nuejax-{name}")
        return _POOLS[name]


def _submit(pool: ThreadPoolExecutor, run, fn, args, kwargs) -> Future:
    # the caller's thread's settings (a `with` block's), which a new thread would not see
    return pool.submit(run, fn, args, kwargs, bool(jax.config.jax_enable_x64), jax.config.jax_default_device)


def _run_with(fn, args, kwargs, x64, device):
    with jax.enable_x64(x64), jax.default_device(device):
        return fn(*args, **kwargs)


def _quiet(fn, args, kwargs, x64, device):
    try:
        _run_with(fn, args, kwargs, x64, device)
    except Exception:  # noqa: BLE001 - a warm-up only; the caller's own call raises
        pass


#: The switch: ``NUEJAX_AHEAD=0`` (or ``off``, ``false``, ``no``) runs no warm-up and nothing
#: :func:`beside` the caller's work.
ENV_AHEAD = "NUEJAX_AHEAD"


def ahead(fn, *args, **kwargs) -> Future | None:
    """Run ``fn(*args, **kwargs)`` in the background thread, its result and errors discarded;
    None (nothing started) where the process has no core to spare or :data:`ENV_AHEAD` is off.

    Raises:
        InputError: a value of :data:`ENV_AHEAD` that is neither on nor off (names the variable)."""
    if not env_switch(ENV_AHEAD) or spare_cores() < 1:
        return None
    # one thread: a second warm-up waits for the first instead of taking the main work's core
    return _submit(_pool("ahead", 1), _quiet, fn, args, kwargs)


#: Threads of :func:`beside` (fixed when the pool is first made): ``nuejax combine`` on an
#: accelerator runs its ε and mediator stages beside the μ_ν stage and, inside each stage, the
#: three models' fits beside each other; work beyond this many waits for a thread, or runs in the
#: thread that waits for it (:func:`nuejax.analyses._clock.each_beside`), so any number is safe.
BESIDE_WORKERS = 4


def beside(fn, *args, min_spare: int = 1, **kwargs) -> Future | None:
    """Run ``fn(*args, **kwargs)`` in a thread of its own, beside the caller's work: real work,
    whose result (or error) the future's ``result()`` returns (raises). None, and the caller runs
    ``fn`` itself, where the process has fewer than ``min_spare`` cores to spare or
    :data:`ENV_AHEAD` is off. The caller's thread-local JAX settings are carried over, as for
    :func:`ahead`; ``fn`` must not change process-wide state (warning filters among it:
    ``warnings.catch_warnings`` is not thread-safe). A started ``fn`` cannot be stopped: where the
    caller fails (or is interrupted) first, the process still waits for it before it exits.

    Raises:
        InputError: a value of :data:`ENV_AHEAD` that is neither on nor off (names the variable)."""
    if not env_switch(ENV_AHEAD) or spare_cores() < min_spare:
        return None
    return _submit(_pool("beside", BESIDE_WORKERS), _run_with, fn, args, kwargs)


#: Threads of :func:`warm_ups` (at most the spare cores).
WARM_UP_WORKERS = 8


def warm_ups(calls, *, min_spare: int = 1) -> list:
    """Run each ``(fn, args)`` of ``calls`` as a warm-up (result and errors discarded, as
    :func:`ahead`), up to :data:`WARM_UP_WORKERS` of them side by side (XLA compiles a program on
    one core and releases the GIL: the programs of an analysis's later stages compile at once,
    while its first stage runs). Returns their futures (empty: nothing started, where fewer than
    ``min_spare`` cores are to spare or :data:`ENV_AHEAD` is off); :func:`wait` for each before
    anything drops the compiled programs.

    Raises:
        InputError: a value of :data:`ENV_AHEAD` that is neither on nor off (names the variable)."""
    if not env_switch(ENV_AHEAD) or spare_cores() < max(1, min_spare):
        return []
    pool = _pool("warm-ups", max(1, min(WARM_UP_WORKERS, spare_cores())))
    return [_submit(pool, _quiet, fn, tuple(args), {}) for fn, args in calls]


def wait(future: Future | None) -> None:
    """Wait for a warm-up of :func:`ahead` to end (so that the caller does not compile the same
    program a second time beside it)."""
    if future is not None:
        future.result()
