"""Stage results of the analysis commands kept in the on-disk cache and reused by a later run.

A stage of ``nuejax borexino``, ``nuejax xenonnt`` or ``nuejax combine`` (a fit and its profile
scans, a toy construction, the mediator curves), or a fit or answer of ``nuejax run SPEC``
(:data:`~nuejax.analyses.spec.REUSED_KINDS`), is a deterministic function of its inputs: the
model it fits (or what builds it), the data, its grids and options, nuejax's own code and data,
the libraries and the machine's JAX backend and device kind. :func:`reused` keeps what a stage
returned, with the lines it said, in the package's cache folder (:mod:`nuejax.cache`, kind
``stage``), under a key that hashes all of these: every array of each model (its PyTree leaves)
and its structure (:func:`~nuejax.cache.treedef_digest`), the data, the stage's arguments, the
versions of iminuit and scipy, and the process's :func:`~nuejax.cache.fingerprint` (every source
and data file of the package, the versions of JAX, jaxlib and numpy, the backend, device kind,
CPU flags and ``XLA_FLAGS``) with the JAX settings of the moment (``jax_enable_x64``, the matmul
precision). A later run whose stage has the same key says the stored lines again, with a line
that says the stage was reused and how long it took when it ran, and returns the stored results
instead of computing them: a second run with the same inputs takes seconds, and a run with one
option changed (``--toys``, ``--masses``) computes only the stages that read it.

What is stored is every field of each result (:func:`encode`: arrays with their dtype, floats to
the last bit, NaN and infinities kept), so a reused result equals the computed one, field for
field (tests/test_reuse.py; a reused run writes the same files as the run that computed).
Warnings a stage raised while it computed (a second minimum within 1 of the best one) are not
raised again; the results keep what they report (``FitResult.minima``).

``--recompute`` (``reuse=False``) computes every stage and stores it again; ``NUEJAX_REUSE=0``
computes every stage and stores none (the test suite runs so), as does ``NUEJAX_CACHE=0``, which
keeps the whole cache off; ``nuejax cache --clear`` empties it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.metadata
import json
import threading
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from ..cache import (REUSE_SWITCH, CacheWarning, argument_key, cache_enabled, env_switch, fingerprint, has_entry,
                     is_cached, load_entry, store_entry, treedef_digest)
from ..inference.results import (CLsResult, CoverageResult, FeldmanCousinsResult, FitResult, GoodnessOfFit,
                                 ImpactsResult, Scan2DResult, ScanResult)

__all__ = ["CommandStages", "ENV_SWITCH", "KIND", "RunStages", "StageRecorder", "computed_always", "decode", "encode", "is_stored",
           "reuse_enabled", "reused", "stage_arguments", "stages_of_run"]

#: the cache kind of the stored stages (file names ``stage-<command>_<stage>-<key>.npz``)
KIND = "stage"
#: the switch of stage reuse: ``NUEJAX_REUSE=0`` (or ``off``, ``false``, ``no``) computes every
#: stage and stores none (the test suite runs so, to test the computations)
ENV_SWITCH = REUSE_SWITCH


def reuse_enabled() -> bool:
    """Whether stages are stored and reused: the cache on (:func:`~nuejax.cache.cache_enabled`)
    and ``$NUEJAX_REUSE`` not off.

    Raises:
        InputError: a value of ``$NUEJAX_REUSE`` that is neither on nor off (names it)."""
    return cache_enabled() and env_switch(ENV_SWITCH)


_RESULTS = {c.__name__: c for c in (CLsResult, CoverageResult, FeldmanCousinsResult, FitResult, GoodnessOfFit,
                                    ImpactsResult, Scan2DResult, ScanResult)}


class _NotStorable(TypeError):
    """A stage's value that :func:`encode` cannot write exactly."""


def encode(value):
    """``value`` (results, numbers, strings, arrays, and tuples, lists and string-keyed dicts of
    them) as JSON data, each kind tagged so that :func:`decode` rebuilds it exactly: a result of
    :mod:`nuejax.inference.results` field by field, a numpy array by dtype, shape and elements, a
    numpy scalar by dtype, a tuple apart from a list; floats as Python's JSON writes them (the
    shortest form that reads back to the same double; NaN and ±Infinity as such).

    Raises:
        TypeError: anything else (a model, a function, a dict with other keys), named.
    """
    if value is None or type(value) in (bool, str):
        return value
    if type(value) is int or type(value) is float:
        return value
    if type(value) in _RESULTS.values():  # field by field: every array, float and type kept as it is
        return {"__result__": type(value).__name__,
                "fields": {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, jax.Array):
        if value.weak_type:  # a strongly typed reload could promote differently
            raise _NotStorable("a weakly typed JAX array")
        return {"__jax__": encode(np.asarray(value))}
    if isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.kind not in "biuf" or value.dtype.itemsize > 8:  # (JSON holds no wider float)
            raise _NotStorable(f"{'an array' if isinstance(value, np.ndarray) else 'a numpy scalar'} of dtype "
                               f"{value.dtype}")
        if isinstance(value, np.generic):
            return {"__scalar__": value.dtype.str, "value": value.item()}
        return {"__array__": value.dtype.str, "shape": list(value.shape), "value": value.ravel().tolist()}
    if type(value) is tuple:
        return {"__tuple__": [encode(v) for v in value]}
    if type(value) is list:
        return [encode(v) for v in value]
    if type(value) is dict:
        bad = [k for k in value if type(k) is not str or k.startswith("__")]
        if bad:
            raise _NotStorable(f"a dict with the key {bad[0]!r}")
        return {k: encode(v) for k, v in value.items()}
    raise _NotStorable(f"an object of type {type(value).__module__}.{type(value).__qualname__}")


def decode(data):
    """The value that :func:`encode` turned into ``data``."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "__result__" in data:
        return _RESULTS[data["__result__"]](**{k: decode(v) for k, v in data["fields"].items()})
    if "__array__" in data:
        return np.asarray(data["value"], dtype=np.dtype(data["__array__"])).reshape(data["shape"])
    if "__jax__" in data:
        return jnp.asarray(decode(data["__jax__"]))
    if "__scalar__" in data:
        return np.dtype(data["__scalar__"]).type(data["value"])
    if "__tuple__" in data:
        return tuple(decode(v) for v in data["__tuple__"])
    return {k: decode(v) for k, v in data.items()}


def _tree_key(value):
    """A model (any PyTree) as :func:`~nuejax.cache.argument_key` can hash it: its structure's
    digest and its leaves (arrays on the host); the value itself where its structure has a static
    field that cannot be hashed."""
    leaves, treedef = jax.tree_util.tree_flatten(value)
    host = [np.asarray(v) for v in leaves]
    digest = treedef_digest(treedef, [jax.ShapeDtypeStruct(h.shape, h.dtype, weak_type=bool(getattr(v, "weak_type", False)))
                                      for v, h in zip(leaves, host)])
    if digest is None:  # left as it is: the key cannot hash it, so the stage is computed (and says so)
        return value
    return ("tree", type(value).__qualname__, digest, host)


def stage_arguments(**arguments) -> dict:
    """A stage's arguments for its key: numbers, strings, arrays and containers of them as they
    are; a PyTree node (a model) by its structure and leaves (:func:`_tree_key`); anything else
    (a frozen dataclass such as a calibration result) as :func:`~nuejax.cache.argument_key`
    encodes it, field by field. What the key cannot encode exactly leaves the stage computed.
    Empty where reuse is off (:func:`reuse_enabled`: no key is made, no array copied to the host)."""
    if not reuse_enabled():
        return {}

    def keyable(v):
        if v is None or isinstance(v, (bool, int, float, str, np.ndarray, np.generic, jax.Array)):
            return v
        if type(v) in (tuple, list):
            return type(v)(keyable(x) for x in v)
        if type(v) is dict:
            return {k: keyable(x) for k, x in v.items()}
        leaves = jax.tree_util.tree_leaves(v)
        if len(leaves) == 1 and leaves[0] is v:  # not a PyTree node
            return v
        return _tree_key(v)

    return {k: keyable(v) for k, v in arguments.items()}


def is_stored(command: str, stage: str, arguments: dict) -> bool:
    """Whether :func:`reused` would find the stage in the cache now (its file exists; not read):
    a command skips the work it would do ahead for a stage it will not compute."""
    return reuse_enabled() and is_cached(KIND, f"{command}-{stage}", _keyed(arguments))


def _keyed(arguments: dict) -> dict:
    """A stage's arguments as its key holds them: with :func:`_environment`."""
    return {**arguments, "environment": _environment()}


class StageRecorder:
    """The progress callback a computing stage gets: passes every line on to ``say`` (a
    :class:`~nuejax.analyses._clock.StageClock` or branch) and keeps it, the lines of the
    stage's own branches (work it runs beside) included, in the order ``say`` gets them."""

    def __init__(self, say):
        self._say = say
        self.lines: list[str] = []

    def __call__(self, msg: str) -> None:
        self.lines.append(msg)
        self._say(msg)

    def branch(self):
        return self._say.branch()

    def replay(self, branch) -> None:
        self.lines.extend(msg for _, msg in branch.lines)
        self._say.replay(branch)


def _environment() -> dict:
    """What a stage's results depend on besides its arguments and the cache's fingerprint: the
    versions of the libraries its fits call (MIGRAD's iminuit, scipy's special functions) and the
    JAX settings its toys draw with (the pseudo-random generator and its partitioning): part of
    every stage's key and of each run's record (:func:`stages_of_run`)."""
    return {**_library_versions(), "prng": str(jax.config.jax_default_prng_impl),
            "threefry_partitionable": bool(jax.config.jax_threefry_partitionable)}


@functools.lru_cache(maxsize=1)
def _library_versions() -> dict:
    out = {}
    for name in ("iminuit", "scipy"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


class RunStages:
    """What :func:`stages_of_run` yields: ``all_stored``, whether every stage that the last run
    with the same options had is in the cache now; ``stages``, the (label, key) of each stage of
    this run so far; ``reused``, how many of them were reused."""

    def __init__(self, all_stored: bool):
        self.all_stored = all_stored
        self.stages: list = []
        self.reused = 0


#: the run under way (:func:`stages_of_run`), else None
_RUN: RunStages | None = None
_LOCK = threading.Lock()


@contextlib.contextmanager
def stages_of_run(command: str, options: dict):
    """Around a run of ``command`` with ``options`` (JSON-encodable): yields a :class:`RunStages`
    whose ``all_stored`` says whether every stage that the last run with these options had will
    be found in the cache (its key's file is there, made by this code and environment: the key
    begins with the code's fingerprint, the record holds :func:`_environment`), and afterwards
    remembers this run's stages (kind ``stages``) for the next. The command line leaves out the
    programs it would load ahead (:func:`~nuejax._internal.exported.programs_of_run`) where the
    run will reuse every stage and call none of them (a stage computed after all, its key changed
    by an input that is not an option, loads its programs as it goes), and keeps the last run's
    programs in the index where some stages were reused."""
    global _RUN
    if not reuse_enabled():
        yield RunStages(False)
        return
    record = {"command": command, "options": json.dumps(options, sort_keys=True, default=str),
              "environment": _environment()}
    last = load_entry("stages", command, record)
    prefix = fingerprint()[:12]
    try:
        stages = [] if last is None else json.loads(last["keys"].tobytes().decode())
    except Exception:  # noqa: BLE001 - an entry of another layout: as if there were none
        stages = []
    run = RunStages(bool(stages) and all(key.startswith(prefix) and has_entry(KIND, label, key)
                                         for label, key in stages))
    with _LOCK:
        _RUN = run
    try:
        yield run
    finally:
        with _LOCK:
            _RUN = None
        if run.stages:
            store_entry("stages", command, record,
                        {"keys": np.frombuffer(json.dumps(sorted(run.stages)).encode(), dtype=np.uint8)})


def computed_always(command: str, stage: str) -> None:
    """Count a stage that is computed every time (never stored) in the run under way
    (:func:`stages_of_run`), so that the next run with the same options is not taken for one
    that reuses everything (and loads its programs ahead)."""
    with _LOCK:
        if _RUN is not None:
            _RUN.stages.append((f"{command}-{stage}", ""))


def _say_reused(say, lines, computed) -> None:
    """Say a reused stage's ``lines``, after its first (a stage's own header) one saying it was
    reused, when it was computed and how long it took (``computed``: (seconds, date); None: no
    such line)."""
    note = [] if computed is None else \
        [f"      (reused from the cache: computed {'on ' + computed[1] + ' ' if computed[1] else ''}in "
         f"{computed[0]:.1f} s by an earlier run; --recompute to redo)"]
    head = 1 if lines and lines[0].startswith("[") else 0
    for msg in lines[:head] + note + lines[head:]:
        say(msg)


def reused(command: str, stage: str, arguments: dict, say, compute, *, reuse: bool = True, note: bool = True,
           record: list | None = None):
    """``compute(say)``, or what it returned for the same key before (module docstring).

    ``arguments``: everything the stage reads besides nuejax's code and data, made with
    :func:`stage_arguments`. On a hit the stored lines are said again (after the stage's first
    line, one saying it was reused) and the stored value is returned; otherwise ``compute`` runs
    with a :class:`StageRecorder` and its value is stored (also where ``reuse`` is False: a
    recomputed stage replaces the stored one). A value or an argument that cannot be stored
    exactly, or a cache that cannot be written, leaves the stage computed every time, with a
    :class:`~nuejax.cache.CacheWarning`. ``note=False``: no line saying the stage was reused (a
    step inside a stage that says so itself); ``record``: a list that gains ``stage`` where it was
    reused (the commands list them in their summaries, ``reused_stages``)."""
    if not reuse_enabled():
        return compute(say)
    label = f"{command}-{stage}"
    arguments = _keyed(arguments)
    try:
        key = argument_key(KIND, arguments)
    except TypeError:  # an argument that cannot be hashed: computed (and not stored, which warns below)
        key = None
    with _LOCK:
        if _RUN is not None and key is not None:
            _RUN.stages.append((label, key))
    if reuse:
        entry = load_entry(KIND, label, arguments)
        if entry is not None:
            try:
                stored = json.loads(entry["json"].tobytes().decode())
                value, lines, seconds = decode(stored["value"]), list(stored["lines"]), float(stored["seconds"])
                when = stored.get("computed")
            except Exception as err:  # noqa: BLE001 - an entry of another layout: computed again below
                warnings.warn(f"nuejax cache: stage {label} could not be reused ({type(err).__name__}: {err}); "
                              "computing it", CacheWarning, stacklevel=2)
            else:
                with _LOCK:
                    if _RUN is not None:
                        _RUN.reused += 1
                    if record is not None:
                        record.append(stage)
                _say_reused(say, lines, (seconds, when) if note else None)
                return value
    rec = StageRecorder(say)
    t0 = time.perf_counter()
    value = compute(rec)
    seconds = time.perf_counter() - t0
    try:
        text = json.dumps({"value": encode(value), "lines": rec.lines, "seconds": seconds,
                           "computed": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())})
    except (TypeError, ValueError, RecursionError) as err:  # _NotStorable names what it refused
        what = str(err) if isinstance(err, _NotStorable) else f"what JSON cannot hold ({type(err).__name__}: {err})"
        warnings.warn(f"nuejax cache: stage {label} is not stored: it returned {what}", CacheWarning, stacklevel=2)
    else:
        if not store_entry(KIND, label, arguments, {"json": np.frombuffer(text.encode(), dtype=np.uint8)}):
            warnings.warn(f"nuejax cache: stage {label} could not be stored (an argument that cannot be hashed, "
                          "or a folder that cannot be written)", CacheWarning, stacklevel=2)
    return value


class CommandStages:
    """The stages of one run of a command: :meth:`wrap` makes each a stage as
    :func:`~nuejax.analyses._clock.with_stages_beside` runs it, computed or reused (:func:`reused`);
    ``reused`` lists the names of those reused (the summaries' ``reused_stages``)."""

    def __init__(self, command: str, reuse: bool = True):
        self.command, self.reuse = command, reuse
        self.reused: list[str] = []

    def wrap(self, name: str, arguments: dict, fn):
        """``fn(say, in_turn)`` as the stage ``name`` with the key ``arguments``
        (:func:`stage_arguments`): ``stage(say, in_turn=False)``."""
        return lambda say, in_turn=False: reused(self.command, name, arguments, say, lambda say: fn(say, in_turn),
                                                 reuse=self.reuse, record=self.reused)
