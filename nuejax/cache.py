"""On-disk cache of the fixed tensors of a model build.

Building the default model compiles about 160 small XLA programs (the analytic response
histograms, SM spectra and precomputed cross sections of nine spectra, and eight background
templates; 13 s of a fresh process on 2 CPU cores). Their outputs depend only on the builder's arguments and on nuejax's own code and
data, so :func:`cached` stores them once and later builds load them (docs/model.md, "On-disk
cache of model tensors"); so is the response calibration of the Borexino Phase-III analysis
(:func:`~nuejax.detector.calibration.calibrate_response`).

Where: ``$NUEJAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/nuejax``, else ``~/.cache/nuejax``.
``NUEJAX_CACHE=0`` (or ``off``, ``false``, ``no``) disables it. :func:`cache_info` reports
its size, :func:`clear_cache` empties it (``nuejax cache``, ``nuejax cache --clear``). After every
write, stale entries (of other code) are removed, oldest first, while the folder holds more than
``$NUEJAX_CACHE_MAX_MB`` (default 2000 MB; :func:`prune_cache`). The analysis commands keep
their stages' results here too, reused by a later run with the same inputs
(:mod:`nuejax.analyses.reuse`; ``NUEJAX_REUSE=0`` or ``--recompute`` computes them).

The key of an entry hashes (blake2b):

* every argument of the builder: arrays by kind (JAX or numpy), dtype, shape, weak type and
  bytes; dataclasses and named tuples (ResponseParams, QuenchingTable, OscillationParams,
  ResponseHistogram) by class and field values; numbers, strings, flags and dtypes by type and
  value;
* the process's :func:`fingerprint`: the bytes of every ``nuejax/**/*.py`` and every file under
  ``nuejax/data/`` (so any change of code or data makes new keys), the versions of nuejax,
  JAX, jaxlib, numpy and Python, the JAX backend and device kind, the CPU's instruction-set
  flags and ``XLA_FLAGS`` (compiled code may round differently elsewhere; on the CPU backend
  without the flags that change no entry there, :func:`environment`);
* the JAX settings read at call time: ``jax_enable_x64``, ``jax_default_matmul_precision`` and
  ``jax_default_device``.

An entry is one uncompressed ``.npz`` file: the flattened PyTree's leaves, its pickled treedef
and a JSON header holding the full key, which a load checks. Storing the PyTree generically means
a change of the tensors' classes needs no change here (the source fingerprint retires old
entries). A writer writes a temporary file in the cache folder and ``os.replace`` s it into
place, so concurrent builders never expose a half-written entry. The documented fallback: an
entry that cannot be read (corrupt, truncated, foreign) is a miss -- warned once per file,
rebuilt and overwritten; a folder that cannot be written leaves the build uncached, warned once;
arguments that cannot be keyed (a traced value, an unknown object) skip the cache, warned once
per type. The result is then exactly the uncached one.

The treedef is unpickled on a load, so the cache folder must be as trusted as your code: do not
point ``NUEJAX_CACHE_DIR`` at a folder others can write.

Compiled programs: :func:`enable_compilation_cache` switches on JAX's own persistent compilation
cache in the ``xla/`` sub-folder (the commands do so before they compile anything; library users
call it themselves, since it changes JAX's global configuration). Its entries are keyed by JAX
(the program, the compile options, ``XLA_FLAGS``, the devices, the JAX version), so they need no
fingerprint here. JAX's own eviction is off (with it on, every stored program read an access-time
file of every other one under a file lock, which made a long run's compiling quadratic in its
programs); instead :func:`prune_compiled_programs` keeps the folder under
``$NUEJAX_CACHE_MAX_MB`` once per process, when the cache is switched on. ``NUEJAX_COMPILATION_CACHE=0`` (or
``NUEJAX_CACHE=0``) keeps it off; a folder already set by the user
(``JAX_COMPILATION_CACHE_DIR``) is kept.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import os
import pickle
import platform
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from .errors import InputError

__all__ = ["CacheWarning", "cache_dir", "cache_enabled", "cached", "has_entry", "is_cached", "load_entry", "store_entry", "argument_key", "fingerprint", "source_digest",
           "treedef_digest", "env_switch", "warn_once",
           "environment", "cache_info", "clear_cache", "prune_cache", "enable_compilation_cache",
           "prune_compiled_programs",
           "compilation_cache_dir", "ENV_DIR", "ENV_SWITCH", "ENV_MAX_MB", "ENV_COMPILATION_SWITCH", "REUSE_SWITCH"]

#: Environment variable naming the cache folder.
ENV_DIR = "NUEJAX_CACHE_DIR"
#: Environment variable switching the cache off (``0``, ``off``, ``false``, ``no``) or on.
ENV_SWITCH = "NUEJAX_CACHE"
#: the switch of the analysis commands' stage reuse (:mod:`nuejax.analyses.reuse`), read there
REUSE_SWITCH = "NUEJAX_REUSE"
#: Environment variable with the size [MB] above which a write removes stale entries (default 2000).
ENV_MAX_MB = "NUEJAX_CACHE_MAX_MB"
DEFAULT_MAX_MB = 2000.0
#: Environment variable switching JAX's persistent compilation cache (:func:`enable_compilation_cache`) off.
ENV_COMPILATION_SWITCH = "NUEJAX_COMPILATION_CACHE"
#: Version of the entry layout below; part of every key.
FORMAT_VERSION = 1

_OFF = ("0", "off", "false", "no")
_ON = ("", "1", "on", "true", "yes")
#: ``<kind>-<label>-<key>.npz``; :func:`clear_cache` removes only files of this form (and the
#: temporary files of writers), never anything else in a folder a user may have shared.
_ENTRY = re.compile(r"^(?P<kind>[a-z]+)-(?P<label>[A-Za-z0-9_.]+)-(?P<env>[0-9a-f]{12})(?P<args>[0-9a-f]{28})\.npz$")
_TMP = re.compile(r"^\.tmp-.*\.npz$")

_warned: set = set()

T = TypeVar("T")


class CacheWarning(UserWarning):
    """An entry of the on-disk cache could not be read or written; the build went on uncached."""


def warn_once(tag, message: str) -> None:
    """A :class:`CacheWarning` with ``message``, once per process for each ``tag``."""
    if tag not in _warned:
        _warned.add(tag)
        warnings.warn(message, CacheWarning, stacklevel=3)


def env_switch(name: str) -> bool:
    """The on/off switch ``$name``: True when unset or empty (module docstring's values).

    Raises:
        InputError: any other value than the accepted ones (names the variable)."""
    value = os.environ.get(name, "").strip().lower()
    if value in _OFF:
        return False
    if value in _ON:
        return True
    raise InputError(f"{name}={os.environ[name]!r}: expected one of {', '.join(_OFF)} (off) "
                     f"or {', '.join(v for v in _ON if v)} (on)")


def cache_enabled() -> bool:
    """False when ``$NUEJAX_CACHE`` is ``0``, ``off``, ``false`` or ``no`` (any case); True when it is
    unset, empty, ``1``, ``on``, ``true`` or ``yes``.

    Raises:
        InputError: any other value (names the variable and the accepted values).
    """
    return env_switch(ENV_SWITCH)


def cache_dir() -> Path:
    """The cache folder: ``$NUEJAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/nuejax``, else
    ``~/.cache/nuejax`` (read at every call; not created here)."""
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "nuejax"
    return Path.home() / ".cache" / "nuejax"


# ---------------------------------------------------------------------------------------------
# keys


def _package_files(root: Path) -> list:
    """Every ``*.py`` of the package and every file under ``data/``, sorted by relative path."""
    files = {p for p in root.rglob("*.py") if "__pycache__" not in p.parts}
    files |= {p for p in (root / "data").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def _cpu_flags() -> str:
    # XLA:CPU compiles for the host's instruction set (FMA, AVX-512), which can change the last
    # bit of a result: a folder shared by different machines must not mix their entries.
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def source_digest(root: Path) -> str:
    """Hex digest of the package at ``root``: the relative path, size and bytes of every ``*.py``
    under it and of every file under ``root/data``."""
    h = hashlib.blake2b(digest_size=20)
    for path in _package_files(Path(root)):
        data = path.read_bytes()
        h.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def environment() -> dict:
    """The versions and machine an entry was computed with (part of :func:`fingerprint`). XLA's
    flags are part of it, except on the CPU backend two kinds that change no entry there:

    * its ``--xla_gpu_*`` flags: the commands add two of them (``nuejax.runtime.GPU_XLA_FLAGS``), so
      that a model a command cached on the CPU is the entry the Python API finds too (and the
      reverse);
    * ``--xla_force_host_platform_device_count`` (virtual CPU devices): entries are computed on
      the default device alone, and a model built on four virtual devices equals the one built on
      one bit for bit (tests/test_multidevice.py builds it afresh on four and compares), so runs
      with 1, 2 and 4 devices share their models."""
    from . import __version__

    dev = jax.devices()[0]
    backend = jax.default_backend()
    flags = os.environ.get("XLA_FLAGS", "").split()
    if backend == "cpu":
        flags = [f for f in flags
                 if not f.startswith(("--xla_gpu_", "--xla_force_host_platform_device_count="))]
    return dict(format=FORMAT_VERSION, nuejax=__version__, jax=jax.__version__, jaxlib=_jaxlib_version(),
                numpy=np.__version__, python=sys.version.split()[0], machine=platform.machine(),
                backend=backend, device=getattr(dev, "device_kind", ""), cpu=_cpu_flags(), xla_flags=" ".join(flags))


@functools.lru_cache(maxsize=None)
def fingerprint() -> str:
    """Hex digest of what every entry depends on besides its arguments: :func:`source_digest` of
    the installed package and :func:`environment`; computed once per process (it reads about
    1.3 MB of files: about 10 ms)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(source_digest(Path(__file__).resolve().parent).encode())
    h.update(json.dumps(environment(), sort_keys=True).encode())
    return h.hexdigest()


def _jaxlib_version() -> str:
    try:
        import jaxlib

        return jaxlib.__version__
    except (ImportError, AttributeError):
        return ""


class _Unkeyable(TypeError):
    """An argument that :func:`argument_key` cannot describe exactly."""


def _feed(h, x) -> None:
    """Add a tagged, unambiguous encoding of ``x`` to the hash ``h``."""
    if x is None:
        h.update(b"N;")
    elif isinstance(x, jax.core.Tracer):
        raise _Unkeyable("a traced JAX value")
    elif isinstance(x, (np.ndarray, np.generic, jax.Array)):
        # Before the Python scalars: np.float64 subclasses float, but as a strongly typed value
        # it can promote differently from a Python float, so the two must not share a key. A
        # JAX array and a numpy one of the same bits are told apart too: a builder may treat
        # them differently (jnp against np functions).
        tag = (b"j" + (b"w" if x.weak_type else b"s")) if isinstance(x, jax.Array) else b"n"
        a = np.asarray(x)
        if a.dtype == object:
            raise _Unkeyable("an object array")
        h.update(b"A" + tag + a.dtype.str.encode() + repr(a.shape).encode())
        h.update(hashlib.blake2b(a.tobytes(), digest_size=20).digest())  # tobytes: C order whatever the strides
    elif isinstance(x, bool):
        h.update(b"B1;" if x else b"B0;")
    elif isinstance(x, int):
        h.update(b"I%d;" % x)
    elif isinstance(x, float):
        h.update(b"F" + x.hex().encode() + b";")
    elif isinstance(x, complex):
        h.update(b"C" + x.real.hex().encode() + b"," + x.imag.hex().encode() + b";")
    elif isinstance(x, str):
        b = x.encode()
        h.update(b"S%d:" % len(b) + b)
    elif isinstance(x, bytes):
        h.update(b"Y%d:" % len(x) + x)
    elif isinstance(x, np.dtype):
        h.update(b"D" + x.str.encode() + b";")
    elif isinstance(x, enum.Enum):
        h.update(b"E" + type(x).__qualname__.encode() + b"." + x.name.encode() + b";")
    elif isinstance(x, tuple) and hasattr(x, "_fields"):  # named tuple
        h.update(b"T" + f"{type(x).__module__}.{type(x).__qualname__}".encode() + b"(")
        for name in x._fields:
            _feed(h, name)
            _feed(h, getattr(x, name))
        h.update(b")")
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        h.update(b"K" + f"{type(x).__module__}.{type(x).__qualname__}".encode() + b"(")
        for f in dataclasses.fields(x):
            _feed(h, f.name)
            _feed(h, getattr(x, f.name))
        h.update(b")")
    elif isinstance(x, (tuple, list)):
        h.update(b"L(" if isinstance(x, list) else b"U(")
        for item in x:
            _feed(h, item)
        h.update(b")")
    elif isinstance(x, dict):
        h.update(b"M(")
        for k in sorted(x, key=repr):
            _feed(h, k)
            _feed(h, x[k])
        h.update(b")")
    else:
        raise _Unkeyable(f"an object of type {type(x).__module__}.{type(x).__qualname__}")


def treedef_digest(treedef, leaves=()) -> str | None:
    """Hex digest (40 digits) of a PyTree structure by value, node by node: each node's type and
    auxiliary data (the static fields of a dataclass node) encoded as :func:`argument_key`
    encodes arguments, then each ``leaves`` entry's shape, dtype and weak type
    (``jax.ShapeDtypeStruct``). Equal structures give one digest in every process (a pickle of
    the treedef does not: its memo follows shared objects). None where a static field has a type
    that cannot be encoded."""
    h = hashlib.blake2b(digest_size=20)

    def node(t):
        data = t.node_data()
        if data is None:  # a leaf
            h.update(b"*;")
            return
        kind, aux = data
        h.update(f"<{kind.__module__}.{kind.__qualname__}".encode())
        _feed(h, aux)
        for child in t.children():
            node(child)
        h.update(b">")

    try:
        node(treedef)
    except _Unkeyable:
        return None
    for s in leaves:
        h.update(f"{tuple(s.shape)}|{np.dtype(s.dtype).str}|{bool(getattr(s, 'weak_type', False))};".encode())
    return h.hexdigest()


def argument_key(kind: str, arguments: dict) -> str:
    """Hex key (40 digits) of an entry: the first 12 from :func:`fingerprint`, the other 28 from
    ``kind``, ``arguments`` (name -> value, encoded as the module docstring says) and the JAX
    settings of the moment.

    Raises:
        TypeError: an argument that cannot be encoded exactly (a traced value, an unknown object);
            :func:`cached` then builds without the cache.
    """
    h = hashlib.blake2b(digest_size=14)
    _feed(h, (FORMAT_VERSION, fingerprint(), kind, bool(jax.config.jax_enable_x64),
              str(jax.config.jax_default_matmul_precision), str(jax.config.jax_default_device)))
    _feed(h, dict(arguments))
    return fingerprint()[:12] + h.hexdigest()


# ---------------------------------------------------------------------------------------------
# entries


class _Unstorable(TypeError):
    """A value whose leaves :func:`_store` cannot write exactly."""


def _encode_leaf(leaf):
    """(numpy array, kind) of one leaf; kind says what :func:`_decode_leaf` rebuilds."""
    if isinstance(leaf, jax.core.Tracer):
        raise _Unstorable("a traced JAX value")
    if isinstance(leaf, jax.Array):
        if leaf.weak_type:  # a reload would be strongly typed and could promote differently
            raise _Unstorable("a weakly typed JAX array")
        return np.asarray(leaf), "jax"
    if isinstance(leaf, np.ndarray):
        if leaf.dtype == object:
            raise _Unstorable("an object array")
        return leaf, "numpy"
    if isinstance(leaf, np.generic):
        return np.asarray(leaf), "numpy-scalar"
    for kind in (bool, int, float, complex):  # bool before int
        if type(leaf) is kind:
            return np.asarray(leaf), kind.__name__
    raise _Unstorable(f"a leaf of type {type(leaf).__module__}.{type(leaf).__qualname__}")


def _decode_leaf(a: np.ndarray, kind: str):
    if kind == "jax":
        return jnp.asarray(a)
    if kind == "numpy":
        return a
    if kind == "numpy-scalar":
        return a[()]
    if kind in ("bool", "int", "float", "complex"):
        return {"bool": bool, "int": int, "float": float, "complex": complex}[kind](a.item())
    raise ValueError(f"unknown leaf kind {kind!r}")


def _store(path: Path, key: str, value) -> None:
    """Write ``value`` (a PyTree) to ``path`` atomically (temporary file + ``os.replace``)."""
    leaves, treedef = jax.tree_util.tree_flatten(value)
    encoded = [_encode_leaf(leaf) for leaf in leaves]
    header = dict(format=FORMAT_VERSION, key=key, kinds=[k for _, k in encoded], created=time.time())
    arrays = {f"leaf_{i:05d}": a for i, (a, _) in enumerate(encoded)}
    arrays["__header__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    try:
        tree_bytes = pickle.dumps(treedef, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as err:  # e.g. a node class defined inside a function
        raise _Unstorable(f"a tree structure that cannot be pickled ({type(err).__name__}: {err})") from err
    arrays["__treedef__"] = np.frombuffer(tree_bytes, dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=path.parent)
    try:
        # no fsync: a file left incomplete by a crash fails its zip CRC or header on the next
        # load and is rebuilt, which is cheaper than syncing every entry
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


_MISSING = object()


def _load(path: Path, key: str):
    """The PyTree stored at ``path`` under ``key``, or ``_MISSING`` if there is no file.

    Raises:
        Exception: of any type for a file that is not a complete entry of ``key`` (corrupt,
            truncated, another key); :func:`cached` treats it as a miss.
    """
    try:
        f = open(path, "rb")
    except (FileNotFoundError, NotADirectoryError):  # no entry (or no folder) yet
        return _MISSING
    with f, np.load(f, allow_pickle=False) as z:
        header = json.loads(z["__header__"].tobytes().decode())
        if header.get("format") != FORMAT_VERSION or header.get("key") != key:
            raise ValueError(f"holds key {header.get('key')!r}, not {key!r}")
        treedef = pickle.loads(z["__treedef__"].tobytes())
        kinds = header["kinds"]
        if len(kinds) != treedef.num_leaves or len(z.files) != len(kinds) + 2:
            raise ValueError(f"has {len(z.files) - 2} leaves, its tree {treedef.num_leaves}")
        # every member is read to its end, so zipfile checks its CRC-32
        leaves = [_decode_leaf(z[f"leaf_{i:05d}"], k) for i, k in enumerate(kinds)]
    return jax.tree_util.tree_unflatten(treedef, leaves)


def _safe_label(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", label)[:60] or "_"


def _entry_path(kind: str, label: str, key: str) -> Path:
    return cache_dir() / f"{kind}-{_safe_label(label)}-{key}.npz"


def has_entry(kind: str, label: str, key: str) -> bool:
    """Whether an entry of ``kind`` and ``label`` is stored under ``key`` (an
    :func:`argument_key`; a file of its name, not read). False with the cache disabled."""
    return cache_enabled() and _entry_path(kind, label, key).exists()


def is_cached(kind: str, label: str, arguments: dict) -> bool:
    """Whether :func:`cached` would find an entry for (``kind``, ``arguments``) now (a file of its
    name; not read). False with the cache disabled or unkeyable arguments."""
    if not cache_enabled():
        return False
    try:
        return _entry_path(kind, label, argument_key(kind, arguments)).exists()
    except _Unkeyable:
        return False


def load_entry(kind: str, label: str, arguments: dict):
    """The value :func:`cached` or :func:`store_entry` stored for (``kind``, ``arguments``), or
    None: no entry, an unreadable one, unkeyable arguments or the cache disabled (a lookup that
    never builds)."""
    if not cache_enabled():
        return None
    try:
        key = argument_key(kind, arguments)
        value = _load(_entry_path(kind, label, key), key)
    except Exception:  # noqa: BLE001 - unkeyable or unreadable: as if there were none
        return None
    return None if value is _MISSING else value


def store_entry(kind: str, label: str, arguments: dict, value) -> bool:
    """Store ``value`` for (``kind``, ``arguments``) in place of what is there (an entry that
    changes from run to run, which :func:`cached` never rewrites); the write is atomic. Returns
    whether it was stored (False with the cache disabled, unkeyable arguments, an unstorable
    value or an unwritable folder: nothing is raised)."""
    if not re.fullmatch(r"[a-z]+", kind):
        raise ValueError(f"cache kind must be lowercase letters, got {kind!r}")
    if not cache_enabled():
        return False
    try:
        key = argument_key(kind, arguments)
        _store(_entry_path(kind, label, key), key, value)
    except (OSError, TypeError):  # _Unkeyable and _Unstorable are TypeErrors
        return False
    return True


def cached(kind: str, label: str, arguments: dict, build: Callable[[], T]) -> T:
    """``build()``, or the entry stored for (``kind``, ``arguments``) if there is one.

    ``kind`` (lowercase letters) and ``label`` name the file, ``<kind>-<label>-<key>.npz`` in
    :func:`cache_dir`; ``arguments`` must hold everything ``build`` depends on besides nuejax's
    code and data (module docstring). A miss builds, stores and returns the built value; a hit
    returns the stored one: same PyTree, leaves of the same types and dtypes (JAX arrays as JAX
    arrays, numpy as numpy), same bits. With the cache disabled this is ``build()``.

    Exceptions of ``build`` propagate and nothing is stored. Unreadable entries, unwritable
    folders and unkeyable arguments fall back to ``build()`` with a :class:`CacheWarning`.
    """
    if not re.fullmatch(r"[a-z]+", kind):
        raise ValueError(f"cache kind must be lowercase letters, got {kind!r}")
    if not cache_enabled():
        return build()
    _max_bytes()  # a bad size limit is an error before anything is built
    try:
        key = argument_key(kind, arguments)
    except _Unkeyable as err:
        warn_once(("key", str(err)), f"nuejax cache: not cached: {kind} {label!r} has {err} as an argument")
        return build()
    path = _entry_path(kind, label, key)
    try:
        value = _load(path, key)
    except Exception as err:  # the documented fallback: any unreadable entry is a miss
        warn_once(("load", str(path)), f"nuejax cache: unreadable entry {path} ({type(err).__name__}: {err}); "
                                        "rebuilding it")
        value = _MISSING
    if value is not _MISSING:
        return value
    value = build()
    try:
        _store(path, key, value)
        prune_cache()
    except (OSError, _Unstorable) as err:
        # once per folder and cause (an errno, or what could not be stored)
        cause = err.errno if isinstance(err, OSError) else str(err)
        warn_once(("store", str(path.parent), type(err).__name__, cause),
                   f"nuejax cache: could not store {kind} {label!r} in {path.parent} "
                   f"({type(err).__name__}: {err}); building without the cache")
    return value


# ---------------------------------------------------------------------------------------------
# housekeeping


def _entries(folder: Path) -> list:
    try:
        return [p for p in folder.iterdir() if _ENTRY.match(p.name) or _TMP.match(p.name)]
    except FileNotFoundError:
        return []


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except FileNotFoundError:  # removed by another process meanwhile
        return 0


def cache_info() -> dict:
    """What the cache holds: ``path``, ``enabled``, ``entries`` and ``bytes`` (all nuejax entries
    in the folder), ``current_entries``/``current_bytes`` (those of this code, data and
    environment, :func:`fingerprint`; the others are stale), ``temporary_files`` (of writers
    running now or killed), ``by_kind`` (kind -> [entries, bytes]), and ``compiled_programs`` /
    ``compiled_bytes`` (JAX's compilation cache in :func:`compilation_cache_dir`). Reads only
    file names and sizes."""
    folder = cache_dir()
    env = fingerprint()[:12]
    info = dict(path=str(folder), enabled=cache_enabled(), entries=0, bytes=0, current_entries=0,
                current_bytes=0, temporary_files=0, by_kind={})
    for p in _entries(folder):
        size = _size(p)
        m = _ENTRY.match(p.name)
        if m is None:
            info["temporary_files"] += 1
            info["bytes"] += size
            continue
        info["entries"] += 1
        info["bytes"] += size
        n, b = info["by_kind"].get(m["kind"], (0, 0))
        info["by_kind"][m["kind"]] = [n + 1, b + size]
        if m["env"] == env:
            info["current_entries"] += 1
            info["current_bytes"] += size
    compiled = [p for p in _compiled_files(compilation_cache_dir()) if p.name.endswith("-cache")]
    info["compiled_programs"] = len(compiled)
    info["compiled_bytes"] = sum(_size(p) for p in compiled)
    return info


def clear_cache(*, stale_only: bool = False, kinds=None) -> tuple:
    """Remove the cache's entries (and writers' temporary files) from :func:`cache_dir`; with
    ``stale_only``, only entries of other code, data or environments than this process's; with
    ``kinds`` (a collection of entry kinds, e.g. ``{"stage", "stages"}``: the analysis commands'
    stored results), only entries of those kinds. Without either, the compiled programs of
    :func:`compilation_cache_dir` go too (JAX keys them by its version itself, so none of them is
    stale in this sense). Other files in the folder are left alone. Returns ``(files removed,
    bytes freed)``."""
    env = fingerprint()[:12] if stale_only else None
    kinds = None if kinds is None else set(kinds)
    n = freed = 0
    files = _entries(cache_dir()) + ([] if stale_only or kinds is not None else _compiled_files(compilation_cache_dir()))
    for p in files:
        m = _ENTRY.match(p.name)
        if stale_only and (m is None or m["env"] == env):
            continue
        if kinds is not None and (m is None or m["kind"] not in kinds):
            continue
        size = _size(p)
        try:
            p.unlink()
        except FileNotFoundError:
            continue
        n += 1
        freed += size
    return n, freed


def _max_bytes() -> float:
    """``$NUEJAX_CACHE_MAX_MB`` in bytes (default :data:`DEFAULT_MAX_MB`).

    Raises:
        InputError: a value that is not a number >= 0 (names the variable)."""
    raw = os.environ.get(ENV_MAX_MB, "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_MAX_MB
    except ValueError:
        mb = -1.0
    if not mb >= 0:
        raise InputError(f"{ENV_MAX_MB}={raw!r}: expected a size in MB (a number >= 0)")
    return mb * 1e6


def prune_cache() -> tuple:
    """Keep the folder under ``$NUEJAX_CACHE_MAX_MB``: while the entries take more, remove stale
    ones (of other code, data or environments than this process's; every code change makes the
    next build write a new set), least recently modified first. Entries of the current code are
    never removed here, so the folder can stay above the limit. Called after every write.
    Another process of other code may find an entry gone: for it that is a miss (a rebuild).
    Returns ``(files removed, bytes freed)``."""
    limit = _max_bytes()
    env = fingerprint()[:12]
    entries = [(p, _ENTRY.match(p.name)) for p in _entries(cache_dir())]
    total = sum(_size(p) for p, _ in entries)
    stale = []
    for p, m in entries:
        if m is not None and m["env"] != env:
            try:
                st = p.stat()
            except FileNotFoundError:
                continue
            stale.append((st.st_mtime, st.st_size, p))
    return _remove_oldest(stale, total, limit)


def _remove_oldest(files: list, total: float, limit: float) -> tuple:
    """Remove ``files`` (``(time, size, path)``), oldest time first, while ``total`` bytes exceed
    ``limit``; a file already gone (another process) is skipped. Returns ``(files removed, bytes
    freed)``."""
    n = freed = 0
    for _, size, p in sorted(files, key=lambda t: t[0]):
        if total <= limit:
            break
        try:
            p.unlink()
        except FileNotFoundError:
            continue
        n, freed, total = n + 1, freed + size, total - size
    return n, freed


# ---------------------------------------------------------------------------------------------
# JAX's persistent compilation cache


def compilation_cache_dir() -> Path:
    """Where :func:`enable_compilation_cache` puts compiled programs: ``xla/`` in :func:`cache_dir`."""
    return cache_dir() / "xla"


def enable_compilation_cache(path=None, *, min_compile_time_s: float = 0.0) -> Path | None:
    """Switch on JAX's persistent compilation cache (``jax_compilation_cache_dir``) in ``path``
    (default :func:`compilation_cache_dir`), so that a later process loads the programs this one
    compiled instead of compiling them again (docs/benchmarks.md, "Compilation cache", has what
    it saves per command).

    Every program that took at least ``min_compile_time_s`` to compile is stored (JAX's default
    is 1 s; most of a model build is programs of 10-100 ms). JAX's least-recently-used eviction
    is switched off (``jax_compilation_cache_max_size = -1``): it takes a file lock around every
    read and write and, on every write, reads an access-time file of every stored program, so a
    run that compiles N programs did O(N²) file reads (a test run of 7000 programs spent a third
    of its time there; docs/benchmarks.md). The folder is kept under ``$NUEJAX_CACHE_MAX_MB``
    here instead, once per call (:func:`prune_compiled_programs`). Without JAX's lock, two
    processes writing the same program write the same bytes; a reader that meets a file being
    written gets JAX's "Error reading persistent compilation cache entry" warning and compiles
    the program itself. Call it before the first compilation: JAX decides once per process
    whether it uses the cache (a later call resets that decision through JAX's private
    ``reset_cache``).

    Returns the folder in use, or None when ``NUEJAX_COMPILATION_CACHE`` or ``NUEJAX_CACHE`` is off.
    A folder the user set already (``JAX_COMPILATION_CACHE_DIR`` or ``jax.config``) is kept and
    returned, with their settings.

    Raises:
        InputError: a bad value of one of the switches (names the variable).
    """
    on = env_switch(ENV_COMPILATION_SWITCH)  # both read, so that a typo in either is reported
    if not (cache_enabled() and on):
        return None
    current = jax.config.jax_compilation_cache_dir
    if current:
        return Path(current)
    folder = Path(path).expanduser() if path is not None else compilation_cache_dir()
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_time_s))
    jax.config.update("jax_compilation_cache_max_size", -1)
    prune_compiled_programs(folder)
    try:
        from jax._src import compilation_cache as _cc

        if _cc.is_initialized() or getattr(_cc, "_cache_checked", False):
            _cc.reset_cache()
    except (ImportError, AttributeError):  # a JAX without these private names: the switch applies
        pass  # from the next process on, as documented above
    return folder


def prune_compiled_programs(folder=None, limit=None) -> tuple:
    """Keep JAX's compiled programs in ``folder`` (default :func:`compilation_cache_dir`) under
    ``limit`` bytes (default ``$NUEJAX_CACHE_MAX_MB``): while they take more, remove the least
    recently used ones, by the later of the file's access and modification times (JAX writes
    each program once; how often the access time is updated depends on the file system's mount
    options, so on some it is the time of writing). One pass over the folder, run by
    :func:`enable_compilation_cache`. Another process may find a program gone: for it that is a
    miss (it compiles the program again). Returns ``(files removed, bytes freed)``."""
    folder = Path(folder) if folder is not None else compilation_cache_dir()
    limit = _max_bytes() if limit is None else float(limit)
    programs = []
    for p in _compiled_files(folder):
        try:
            st = p.stat()
        except FileNotFoundError:
            continue
        programs.append((max(st.st_atime, st.st_mtime), st.st_size, p))
    return _remove_oldest(programs, sum(size for _, size, _ in programs), limit)


def _compiled_files(folder: Path) -> list:
    try:
        return [p for p in folder.iterdir() if p.name.endswith(("-cache", "-atime"))]
    except (FileNotFoundError, NotADirectoryError):
        return []


def describe_bytes(n: int) -> str:
    """``n`` bytes in B, kB, MB, GB or TB (powers of 1000)."""
    if n < 1000:
        return f"{n} B"
    for unit in ("kB", "MB", "GB", "TB"):
        n /= 1000
        if n < 1000 or unit == "TB":
            return f"{n:.1f} {unit}"
