"""Programs kept across processes: a jitted function's traced and lowered program stored in the
on-disk cache (:mod:`jax.export`), so that a later process skips tracing and lowering it.

A warm ``nuejax borexino`` on 2 CPU cores spent 5.3 s of 34 s tracing, lowering and loading its
six solver programs, every run, although JAX's persistent compilation cache already held their
compiled code: that cache starts from the lowered program (benchmarks/NOTES.md).
:func:`persistent` wraps a jitted function. Called outside any trace, with concrete arrays, it
looks the call's signature up in the process, then in the on-disk cache
(:func:`nuejax.cache.cached`, kind ``program``), and only on a miss traces the function
(``jax.export.export``), stores the serialized program and calls it. The compiled code still
comes from JAX's compilation cache (:func:`nuejax.cache.enable_compilation_cache`).

The key of an entry is the cache's (:func:`nuejax.cache.argument_key`: the package's source and
data, the versions of JAX and the machine, ``jax_enable_x64`` and the default matmul precision)
with the function's tag (its options: the whole tag, while the file name keeps its first 60
characters) and :func:`nuejax.cache.treedef_digest` of the arguments: their treedef
node by node, its static fields by value (a pickle of it differed between a first and a later
process holding equal fields), and every leaf's shape, dtype and weak type. Arguments split over
several devices (rows of a Neyman construction over the GPUs of a host) must be placed by a
``NamedSharding``; the program is then exported for that mesh (``jax.export`` records the number
of devices), and the mesh's axes, shape and each argument's partition join the key. Where a call
cannot be keyed (a static field of a type the cache cannot encode, another multi-device
placement), or the program cannot be exported or stored, the call goes to the jitted function
itself: the result is the same program's (tests/test_exported.py).

On with the on-disk cache (``NUEJAX_CACHE``); ``NUEJAX_EXPORTED=0`` turns this part off alone.

**Loaded ahead.** A stored program still costs its loading in every process: JAX's compilation
cache deserializes the executable (0.6-3.0 s per solver program on an H200, where a warm
``nuejax combine`` loads ten, each in the stage that first needs it: benchmarks/NOTES.md).
:func:`programs_of_run` remembers, per command and options, which programs a run called; the next
run with them loads those in background threads from its start (:func:`programs_ahead`, where
cores are to spare and ``NUEJAX_AHEAD`` is on), so that a stage finds its program ready or
waits for the load already under way. A program the run then does not need costs only its
thread's time; one it needs and the list does not hold loads as before.
"""

from __future__ import annotations

import json
import pickle  # the output treedef, stored beside the program
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import jax
import numpy as np

__all__ = ["persistent", "exported_enabled", "programs_ahead", "programs_of_run", "settle_ahead", "AHEAD_WORKERS"]

#: Threads that load a run's programs ahead (:func:`programs_ahead`), at most the spare cores.
AHEAD_WORKERS = 4

_LOCK = threading.Lock()
# argument key -> (tag, arguments, weak types) of every program called since the run began
# (programs_of_run), first call first; None outside a run
_RUN: dict | None = None
_AHEAD: dict = {}  # argument key -> Future of a program loaded ahead (its runner, or None)


def exported_enabled() -> bool:
    """Whether :func:`persistent` keeps programs (the on-disk cache on, ``NUEJAX_EXPORTED`` not off)."""
    from ..cache import cache_enabled, env_switch

    return cache_enabled() and env_switch("NUEJAX_EXPORTED")


def _is_concrete(leaf) -> bool:
    return isinstance(leaf, (np.ndarray, np.generic, jax.Array)) and not isinstance(leaf, jax.core.Tracer)


def _placement(leaf):
    """The mesh placement of a leaf split over several devices (its ``NamedSharding``), None for
    a leaf on one device; raises TypeError for another multi-device placement (not kept)."""
    sharding = getattr(leaf, "sharding", None)
    if sharding is None or len(sharding.device_set) <= 1:
        return None
    if not isinstance(sharding, jax.sharding.NamedSharding):
        raise TypeError(f"a {type(sharding).__name__} over several devices")
    return sharding


def _spec(leaf):
    weak = bool(getattr(leaf, "weak_type", False))
    return jax.ShapeDtypeStruct(np.shape(leaf), leaf.dtype, weak_type=weak, sharding=_placement(leaf))


def _describe(spec) -> str:
    """A spec's placement by value: one device, or the mesh's axes, shape and partition."""
    s = spec.sharding
    if s is None:
        return "one"
    mesh = s.mesh
    return (f"{tuple(mesh.axis_names)}|{tuple(mesh.devices.shape)}|{getattr(mesh, 'axis_types', None)}|{s.spec}|"
            f"{s.memory_kind}|{mesh.devices.flat[0].platform}")


def _load_or_export(jitted, tag: str, treedef, specs, records=None, record_as=None):
    """A callable on the flat leaves returning the output PyTree, or None (use ``jitted``);
    ``records[record_as]``: the program's argument key and what :func:`programs_ahead` needs to
    load it."""
    from ..cache import cached, treedef_digest

    sig = treedef_digest(treedef, specs)
    if sig is None:
        return None
    arguments = {"signature": sig, "tag": tag}  # the file name holds the tag only in part (60 characters)
    placed = tuple(_describe(s) for s in specs)
    if any(p != "one" for p in placed):  # a program split over a mesh: its layout is part of the key
        arguments["placement"] = placed
    key = _key(arguments)
    if key is not None:
        if records is not None and "placement" not in arguments:  # one over a mesh loads where its call is
            records[record_as] = (key, (tag, arguments, [bool(sp.weak_type) for sp in specs]))
        with _LOCK:
            ahead = _AHEAD.pop(key, None)
        # loaded ahead, or being loaded: wait for it; not started yet: load it here instead
        if ahead is not None and not ahead.cancel():
            run = ahead.result()
            if run is not None:
                return run
    made = {}

    def build():
        def flat(*leaves):
            out = jitted(*jax.tree_util.tree_unflatten(treedef, leaves))
            out_leaves, made["tree"] = jax.tree_util.tree_flatten(out)
            return tuple(out_leaves)

        made["exp"] = jax.export.export(jax.jit(flat))(*specs)
        return {"program": np.frombuffer(made["exp"].serialize(), dtype=np.uint8),
                "out_tree": np.frombuffer(pickle.dumps(made["tree"], protocol=4), dtype=np.uint8)}

    try:
        entry = cached("program", tag, arguments, build)
        exp, out_tree = _decoded(entry, made.get("exp"))
    except Exception as err:  # not exportable here (e.g. no flatbuffers): the jitted function
        from ..cache import warn_once

        warn_once(("program", tag, type(err).__name__),
                   f"nuejax cache: program {tag!r} not kept across processes ({type(err).__name__}: {err}); "
                   "it is traced in every process")
        return None
    # a program that splits its work over a mesh of its own runs only where its arguments are on
    # as many devices (jax.export refuses the call otherwise): else the jitted function
    if exp.nr_devices != max((len(sp.sharding.device_set) for sp in specs if sp.sharding is not None), default=1):
        return None
    # compiled here, under the signature's lock, so that a second thread waits instead of
    # compiling it again (a program over a mesh compiles at its first call)
    return _runner(exp, out_tree, None if exp.nr_devices > 1 else [bool(sp.weak_type) for sp in specs])


def _decoded(entry, exp=None):
    """(the exported program, its output's treedef) of a stored entry; ``exp``: the program
    already at hand (just exported), not deserialized again."""
    if exp is None:
        exp = jax.export.deserialize(bytearray(np.asarray(entry["program"]).tobytes()))
    return exp, pickle.loads(np.asarray(entry["out_tree"]).tobytes())


def _runner(exp, out_tree, weak=None):
    """The callable on the flat leaves of the stored program ``exp``; ``weak`` (a flag per
    argument: weakly typed, which the stored program does not record): its executable compiled
    (or loaded from JAX's compilation cache) here, for the arguments' shapes and types and the
    default device, which the first call then finds (a call with arguments committed to another
    device compiles its own)."""
    call = jax.jit(exp.call)
    if weak is not None:
        call.lower(*(jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=w) for a, w in zip(exp.in_avals, weak))).compile()

    def run(*leaves):
        return jax.tree_util.tree_unflatten(out_tree, call(*leaves))

    return run


def _key(arguments):
    from ..cache import argument_key

    try:
        return argument_key("program", arguments)
    except TypeError:
        return None


def _load_ahead(tag, arguments, weak, x64, device):
    """The runner of a stored program with its executable loaded, or None (not stored, not loadable)."""
    from ..cache import load_entry

    with jax.enable_x64(x64), jax.default_device(device):
        entry = load_entry("program", tag, arguments)
        if entry is None:
            return None
        try:
            exp, out_tree = _decoded(entry)
            if exp.nr_devices != 1 or len(weak) != len(exp.in_avals):
                return None
            return _runner(exp, out_tree, weak)
        except Exception:  # noqa: BLE001 - the caller loads it itself and reports what fails
            return None


def _index_arguments(name: str, options: dict) -> dict:
    return {"run": str(name), "options": json.dumps(options, sort_keys=True, default=repr)}


def programs_ahead(name: str, options: dict) -> int:
    """Start loading, in background threads (:data:`AHEAD_WORKERS`, at most the spare cores), the
    programs that the last run of ``name`` with ``options`` called (:func:`programs_of_run`), in
    the order it first called them. Returns how many were started (0 with the cache or this part
    off, ``NUEJAX_AHEAD`` off, no core to spare or no run remembered)."""
    from ..cache import env_switch
    from .ahead import ENV_AHEAD, spare_cores

    if not exported_enabled() or not env_switch(ENV_AHEAD) or spare_cores() < 1:
        return 0
    try:
        programs = [(str(t), dict(a), [bool(w) for w in weak]) for t, a, weak in _last_programs(name, options)]
    except Exception:  # noqa: BLE001 - an index of another layout: as if there were none
        return 0
    if not programs:
        return 0
    pool = ThreadPoolExecutor(max_workers=min(AHEAD_WORKERS, spare_cores()), thread_name_prefix="nuejax-programs")
    x64, device, started = bool(jax.config.jax_enable_x64), jax.config.jax_default_device, 0
    with _LOCK:
        for tag, arguments, weak in programs:
            if "placement" in arguments:  # a program over a mesh is loaded where its call is
                continue
            key = _key(arguments)
            if key is None or key in _AHEAD:
                continue
            _AHEAD[key] = pool.submit(_load_ahead, tag, arguments, weak, x64, device)
            started += 1
    pool.shutdown(wait=False)  # its threads end when their loads do
    return started


def settle_ahead() -> None:
    """End the loads ahead: those not started are dropped, those running waited for (before
    ``jax.clear_caches()``, which must not drop programs while another thread compiles, and
    which would drop the loaded ones anyway)."""
    with _LOCK:
        pending = list(_AHEAD.values())
        _AHEAD.clear()
    for ahead in pending:
        if not ahead.cancel():
            ahead.exception()  # waits; a load's failure is the caller's to meet (it loads in place)


def _last_programs(name: str, options: dict) -> list:
    """The programs the last run of ``name`` with ``options`` called, as its index holds them
    (JSON lists ``[tag, arguments, weak types]``; [] where there is none or it cannot be read)."""
    from ..cache import load_entry

    index = load_entry("index", str(name), _index_arguments(name, options))
    if index is None:
        return []
    try:
        return list(json.loads(np.asarray(index["programs"]).tobytes().decode()))
    except Exception:  # noqa: BLE001 - an index of another layout: as if there were none
        return []


@contextmanager
def programs_of_run(name: str, options: dict, merge=lambda: False):
    """Around a run (a command ``name`` with ``options``, JSON-encodable): load ahead what its
    last run called (:func:`programs_ahead`; the ``with`` gives how many loads started), and
    afterwards remember what this one called, in the on-disk cache (kind ``index``), for the
    next: instead of the last run's programs, or after them where ``merge()`` is true at the end
    (a run that computed only some of its work: nuejax.analyses.reuse). The loads not started by
    then are dropped; the process still waits at its exit for those running (up to
    :data:`AHEAD_WORKERS`, a few seconds)."""
    global _RUN
    from ..cache import store_entry

    with _LOCK:
        _RUN = {}
    started = programs_ahead(name, options)
    try:
        yield started
    finally:
        with _LOCK:
            used, _RUN = [list(v) for v in (_RUN or {}).values()], None
            pending = list(_AHEAD.values())
            _AHEAD.clear()
        for ahead in pending:  # loads not started: not needed by this run after all
            ahead.cancel()
        if used and exported_enabled():
            if merge():
                before = _last_programs(name, options)
                seen = {json.dumps(p, sort_keys=True) for p in before}
                used = before + [p for p in used if json.dumps(p, sort_keys=True) not in seen]
            store_entry("index", str(name), _index_arguments(name, options),
                        {"programs": np.frombuffer(json.dumps(used).encode(), dtype=np.uint8)})


def persistent(jitted, tag: str):
    """``jitted`` (a ``jax.jit`` function) whose programs are kept across processes (module
    docstring); ``tag`` names the function in the entries' file names and keys."""
    memo: dict = {}
    building: dict = {}  # signature -> lock held while one thread loads or exports its program
    records: dict = {}  # signature -> (argument key, (tag, arguments, weak types)) of its stored program

    def program(args):
        """(leaves, the program's runner or None: the jitted function), or None (not kept)."""
        leaves, treedef = jax.tree_util.tree_flatten(args)
        # inside a trace: the caller's program holds this one
        if not all(_is_concrete(v) for v in leaves) or not exported_enabled():
            return None
        try:
            sig = (treedef, tuple(_spec(v) for v in leaves))
            known = sig in memo
        except TypeError:  # an unhashable static field, or a placement that is not a mesh's
            return None
        if not known:
            # one thread loads (or exports) and compiles a signature's program; another that
            # needs it meanwhile (a stage beside a warm-up of :func:`prepare`) waits for it
            with _LOCK:
                lock = building.setdefault(sig, threading.Lock())
            with lock:
                if sig not in memo:
                    memo[sig] = _load_or_export(jitted, tag, treedef, sig[1], records, sig)
        if _RUN is not None and sig in records:  # the programs of the run (programs_of_run)
            key, record = records[sig]
            with _LOCK:
                if _RUN is not None:
                    _RUN.setdefault(key, record)
        return leaves, memo[sig]

    def call(*args):
        found = program(args)
        if found is None or found[1] is None:
            return jitted(*args)
        return found[1](*found[0])

    def prepare(*args) -> None:
        """Load or export, and compile, the program of a call with ``args`` (their shapes and
        types), without running it: a warm-up whose work the later call finds (where programs
        are kept, a call meanwhile waits for it; otherwise it may compile the program too)."""
        found = program(args)
        if found is None or found[1] is None:
            jitted.lower(*args).compile()

    def cache_size() -> int:
        # programs this wrapper holds: those compiled by ``jitted`` and those loaded or exported
        # here, so a test that no call recompiles sees either kind (jax.jit's own ``_cache_size``)
        return jitted._cache_size() + sum(run is not None for run in memo.values())

    call.__wrapped__ = jitted
    call._cache_size = cache_size
    call.prepare = prepare
    return call
