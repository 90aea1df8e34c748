"""Chunked, sharded, resumable execution of a batch of rows (toy fits of a Neyman construction).

A long run is a fixed list of rows (generating point, tested point, toy index), cut into chunks
of a fixed size. Each chunk is one or a few launches of a compiled kernel with its rows split over
every local device (``jax.sharding``: a 1-D :class:`~jax.sharding.Mesh` over
``jax.devices()`` and a :class:`~jax.sharding.NamedSharding` of the row axis; the kernel has no
collectives). Every row is computed from its own inputs alone, so the numbers do not depend on
the number of devices, the chunk a row falls in, or the process that ran it.

With an output folder, a run writes:

* ``manifest.json``: the run's configuration (everything its numbers depend on, with hashes of
  the model and the data), the key, the row and chunk counts, the library versions;
* ``setup.npz``: the arrays computed before the toys (fits to the observed data);
* ``chunks/chunk_000012.npz``: the kernel's output for chunk 12, written atomically
  (temporary file, then ``os.replace``).

**Resume.** Started again with the same configuration (``resume=True``), a run loads the stored
set-up and skips every chunk on disk; the result is the uninterrupted run's, exactly (same rows,
same set-up). A different configuration in the folder is an error naming what differs.

**Several processes or hosts.** ``shard=(i, n)`` makes a process compute the chunks ``k`` with
``k % n == i`` (e.g. ``i = $SLURM_ARRAY_TASK_ID``); processes may share a folder or each write
their own, and :func:`merge_runs` gathers the chunks of several folders once all are done. This
is the job-array pattern of a batch system (SLURM, HTCondor) with a merge step, not a scheduler.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..errors import InputError
from .fitting import launch_size, pad_rows

__all__ = ["ACCELERATOR_LAUNCH_MIN", "RunStore", "accelerator_launch_rows", "run_rows", "merge_runs", "fingerprint", "Progress", "default_chunk", "parse_shard"]

MANIFEST = "manifest.json"
SETUP = "setup.npz"


# -- hashing -----------------------------------------------------------------------------------------
def fingerprint(*objects) -> str:
    """SHA-256 (hex, 16 characters) of PyTrees: every array leaf's dtype, shape and bytes, and the
    tree structure (static fields: names, flags, the parameter description)."""
    import re

    h = hashlib.sha256()
    for obj in objects:
        leaves, treedef = jax.tree_util.tree_flatten(obj)
        # static callables print with their memory address, which differs between processes
        h.update(re.sub(r" at 0x[0-9a-fA-F]+", "", repr(treedef)).encode())
        for leaf in leaves:
            a = np.asarray(leaf)
            h.update(f"{a.dtype}{a.shape}".encode())
            h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def parse_shard(text) -> tuple[int, int]:
    """``"i/n"`` or ``(i, n)`` with 0 <= i < n -> (i, n)."""
    try:
        i, n = (int(v) for v in (text.split("/") if isinstance(text, str) else text))
    except (TypeError, ValueError):
        raise InputError(f"shard must be 'i/n' (this process's index and the number of processes), got {text!r}") \
            from None
    if not (n >= 1 and 0 <= i < n):
        raise InputError(f"shard {i}/{n}: needs n >= 1 and 0 <= i < n")
    return i, n


# -- progress ----------------------------------------------------------------------------------------
class Progress:
    """A progress bar on stderr with rate and ETA (``tqdm``; on a stream that is not a terminal,
    a line every ``min_interval`` seconds). Rows loaded from a stored run leave the bar's total
    (it counts what this process computes, so its rate and ETA are this process's) and are
    counted beside it."""

    def __init__(self, total: int, label: str, unit: str = "toys", stream=None, min_interval: float = 2.0):
        from tqdm import tqdm

        self.total, self.label, self.unit = int(total), label, unit
        stream = sys.stderr if stream is None else stream
        tty = bool(getattr(stream, "isatty", lambda: False)())
        self.bar = tqdm(total=self.total, desc=label, unit=unit, file=stream, dynamic_ncols=tty,
                        mininterval=0.2 if tty else min_interval, ascii=not tty, leave=True)
        self.done = 0
        self.loaded = 0  # rows loaded from a stored run, not computed here

    def update(self, n: int, computed: bool = True) -> None:
        self.done += int(n)
        if computed:
            self.bar.update(int(n))
        else:  # loaded rows leave the bar (its total is what this process computes) and are named
            self.loaded += int(n)
            self.bar.total -= int(n)
            self.bar.set_postfix_str(f"{self.loaded} loaded from the run folder")
        if self.done >= self.total:
            self.bar.close()


# -- storage -------------------------------------------------------------------------------------------
def _jsonable(config: dict) -> dict:
    return json.loads(json.dumps(config, default=lambda o: np.asarray(o).tolist()))


class RunStore:
    """The output folder of one run (module docstring). ``None`` folder: nothing is stored."""

    def __init__(self, folder, config: dict, *, resume: bool):
        self.folder = None if folder is None else Path(folder)
        self.config = _jsonable(config)
        self.resume = resume
        if self.folder is None:
            return
        m = self.folder / MANIFEST
        if m.exists():
            old = json.loads(m.read_text())
            if not resume:
                raise InputError(f"{self.folder}: holds a run already; continue it (resume=True, or --resume on the "
                                 "command line) or choose another output folder")
            diff = sorted(k for k in set(old["config"]) | set(self.config) if old["config"].get(k) != self.config.get(k))
            if diff:
                def shown(v):
                    t = json.dumps(v)
                    return t if len(t) <= 60 else t[:57] + "..."

                what = "; ".join(f"{k}: stored {shown(old['config'].get(k))}, now {shown(self.config.get(k))}"
                                 for k in diff)
                raise InputError(f"{self.folder}: holds a run with different settings ({what}); choose another "
                                 "output folder to start a new run")
        elif self.folder.exists() and any(self.folder.iterdir()):
            chunks = self.folder / "chunks"
            if not chunks.exists() or any(chunks.glob("chunk_*.npz")):
                raise InputError(f"{self.folder}: exists and is not a nuejax run folder (no {MANIFEST}"
                                 + (" but chunks" if chunks.exists() else "") + "); choose another output folder")

    @property
    def chunk_dir(self) -> Path:
        return self.folder / "chunks"

    def chunk_path(self, k: int) -> Path:
        return self.chunk_dir / f"chunk_{k:06d}.npz"

    def setup(self, compute: Callable[[], dict]) -> dict:
        """The run's set-up arrays: loaded when this folder has them (a resumed run, or another
        process of the same run), else computed and stored."""
        if self.folder is not None and (self.folder / SETUP).exists() and (self.folder / MANIFEST).exists():
            with np.load(self.folder / SETUP) as z:
                return {k: z[k] for k in z.files}
        out = {k: np.asarray(v) for k, v in compute().items()}
        if self.folder is not None:
            self.chunk_dir.mkdir(parents=True, exist_ok=True)
            _atomic_savez(self.folder / SETUP, out)
            manifest = {"config": self.config, "versions": _versions(), "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
                        "format": 1}
            _atomic_write(self.folder / MANIFEST, json.dumps(manifest, indent=1))
        return out

    def load_chunk(self, k: int) -> dict | None:
        if self.folder is None:
            return None
        path = self.chunk_path(k)
        if not path.exists():
            return None
        with np.load(path) as z:
            return {n: z[n] for n in z.files}

    def save_chunk(self, k: int, out: dict) -> None:
        if self.folder is not None:
            _atomic_savez(self.chunk_path(k), out)


def _versions() -> dict:
    from .results import versions

    return versions()


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _atomic_savez(path: Path, arrays: dict) -> None:
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


# -- execution --------------------------------------------------------------------------------------------
def default_chunk() -> int:
    """Rows per chunk (per stored file): 64 launches' worth on the CPU (:func:`launch_size`),
    16384 on an accelerator, times the number of local devices."""
    n_dev = len(jax.devices())
    per = launch_size(1 << 30, None) if jax.default_backend() == "cpu" else 16384
    return int(per * (64 if jax.default_backend() == "cpu" else 1) * n_dev)


#: The fewest rows per device of an accelerator's launch (:func:`accelerator_launch_rows`).
ACCELERATOR_LAUNCH_MIN = 4096


def accelerator_launch_rows(n: int, chunk: int, n_dev: int) -> int:
    """Rows per device of an accelerator's launches for a run of ``n`` rows in chunks of
    ``chunk``: the next power of two that holds a chunk's share of one device, at least
    :data:`ACCELERATOR_LAUNCH_MIN`, at most that share of a full chunk. Every launch of the run
    has this size (one compiled shape per run), and runs of different lengths share a few sizes.
    Launches had been padded to the full chunk: `nuejax xenonnt`'s CLs construction (2800 toy
    fits) and its Feldman-Cousins one (1500) each ran 16384 rows on one H200 (benchmarks/NOTES.md)."""
    share = -(-min(int(n), int(chunk)) // max(1, int(n_dev)))
    return max(1, min(-(-int(chunk) // max(1, int(n_dev))), max(ACCELERATOR_LAUNCH_MIN, 1 << (share - 1).bit_length())))


def _out_of_memory(err: Exception) -> bool:
    return "RESOURCE_EXHAUSTED" in str(err) or "Out of memory" in str(err)


#: The rows per device that a launch on an accelerator last had to fall back to after running out
#: of memory, per (fitted parameters, starts per row): later runs of the process start there
#: instead of rediscovering it. On an H100 each halving from 16384 toy fits of the xenon model
#: (113 GiB asked) recompiled for minutes, once per construction of `nuejax xenonnt`
#: (2026-11-27, benchmarks/NOTES.md). Kept on disk too (:func:`_remembered_rows`), per device kind.
_ROWS_THAT_FIT: dict = {}
#: The file in the cache folder (nuejax.cache.cache_dir) that keeps :data:`_ROWS_THAT_FIT`
#: between processes: {"<device kind>|<fitted parameters>|<starts per row>": rows per device}.
ROWS_FILE = "launch_rows.json"


def _rows_key(n_par: int, starts_per_row: int) -> str:
    return f"{jax.devices()[0].device_kind}|{int(n_par)}|{int(starts_per_row)}"


def _remembered_rows(n_par: int, starts_per_row: int) -> int | None:
    """The rows per device that fit at the last out-of-memory fallback of this process, else of an
    earlier process on the same kind of device (the cache folder's :data:`ROWS_FILE`; nothing
    when the cache is off or the file is unreadable: then the launch finds it again)."""
    from ..cache import cache_dir, cache_enabled

    if (n_par, starts_per_row) in _ROWS_THAT_FIT:
        return _ROWS_THAT_FIT[(n_par, starts_per_row)]
    if not cache_enabled():
        return None
    try:
        got = json.loads((cache_dir() / ROWS_FILE).read_text()).get(_rows_key(n_par, starts_per_row))
    except (OSError, ValueError, AttributeError):
        return None
    return int(got) if isinstance(got, int) and got >= 1 else None


def _remember_rows(n_par: int, starts_per_row: int, rows: int) -> None:
    """Record ``rows`` per device for this process and in the cache folder (read, update, atomic
    replace: two processes may write at once; the lower value is kept, as both ran out above it)."""
    from ..cache import cache_dir, cache_enabled

    _ROWS_THAT_FIT[(n_par, starts_per_row)] = rows
    if not cache_enabled():
        return
    path = cache_dir() / ROWS_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            table = json.loads(path.read_text())
            table = table if isinstance(table, dict) else {}
        except (OSError, ValueError):
            table = {}
        key = _rows_key(n_par, starts_per_row)
        old = table.get(key)
        table[key] = int(rows) if not isinstance(old, int) else min(int(old), int(rows))
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(table, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError:  # a read-only cache: the process still keeps it
        pass


def _launch(kernel, rows: dict, mesh: Mesh, per_launch: int) -> tuple:
    """Run ``kernel`` on the rows, split over the mesh's devices, in launches of exactly
    ``per_launch`` rows per device (the last padded with copies of its first row, dropped after:
    one compiled shape per run). A launch that runs out of device memory is retried with half as
    many rows per device (down to one; each row depends on its own inputs alone, so the numbers
    do not change): the rows an accelerator holds at once depend on the model (the xenon model's
    toy fits asked an H100 for 113 GiB at 16384 rows). Returns ``(outputs, rows per device used)``."""
    n = len(next(iter(rows.values())))
    n_dev = mesh.devices.size
    sharding = NamedSharding(mesh, PartitionSpec("rows"))
    # On one device, the default one, the rows stay there uncommitted, as a kept kernel's program
    # was compiled for (nuejax._internal.exported): rows placed by a one-device NamedSharding made
    # the toy kernel compile a second time, 9 s of `nuejax xenonnt`'s first run on an H200.
    default = n_dev == 1 and mesh.devices.flat[0] in jnp.zeros(()).devices()
    place = jnp.asarray if default else (lambda a: jax.device_put(a, sharding))
    outs = []
    a = 0
    while a < n:
        step = per_launch * n_dev
        part = {k: v[a:a + step] for k, v in rows.items()}
        m = len(next(iter(part.values())))
        try:
            part = {k: place(pad_rows(jnp.asarray(v), step)) for k, v in part.items()}
            res = kernel(part)
            outs.append({k: np.asarray(v)[:m] for k, v in res.items()})
        except Exception as err:  # JAX raises its runtime error type, which moved between versions
            if per_launch == 1 or not _out_of_memory(err):
                raise
            per_launch = max(1, per_launch // 2)
            continue
        a += m
    return {k: np.concatenate([o[k] for o in outs]) for k in outs[0]}, per_launch


def run_rows(kernel: Callable[[dict], dict], rows: dict, *, chunk: int, store: RunStore | None = None,
             shard: tuple[int, int] = (0, 1), progress: Progress | None = None, n_par: int = 1,
             starts_per_row: int = 1, cheap: bool = False) -> dict | None:
    """Evaluate ``kernel`` on every row of ``rows`` (numpy arrays with a common leading length),
    chunk by chunk (module docstring). Returns the concatenated outputs, or ``None`` when this
    process (``shard``) did its part and chunks of other processes are still missing.
    ``starts_per_row``: fits per row (a multi-start design), counted in the CPU's launch size;
    ``cheap``: the rows' fits run side by side on the CPU (:func:`~nuejax.inference.fitting.launch_size`)."""
    n = len(next(iter(rows.values())))
    chunk = max(1, int(chunk))
    n_chunks = -(-n // chunk)
    i_shard, n_shard = shard
    devices = np.asarray(jax.devices())
    mesh = Mesh(devices, ("rows",))
    per = max(1, launch_size(1 << 30, None, cheap) // max(1, starts_per_row)) if jax.default_backend() == "cpu" \
        else min(chunk, _remembered_rows(n_par, starts_per_row) or chunk, accelerator_launch_rows(n, chunk, devices.size))
    results: dict[int, dict] = {}
    for k in range(n_chunks):
        rows_k = min(chunk, n - k * chunk)
        got = store.load_chunk(k) if store is not None else None
        if got is None and k % n_shard == i_shard:
            part = {name: v[k * chunk:k * chunk + rows_k] for name, v in rows.items()}
            asked = min(per, -(-chunk // devices.size))
            got, per = _launch(kernel, part, mesh, asked)
            if per < asked:
                _remember_rows(n_par, starts_per_row, per)
            if store is not None:
                store.save_chunk(k, got)
            if progress is not None:
                progress.update(rows_k, computed=True)
        elif got is not None and progress is not None:
            progress.update(rows_k, computed=False)
        if got is not None:
            results[k] = got
    if len(results) < n_chunks:
        return None
    return {name: np.concatenate([results[k][name] for k in range(n_chunks)]) for name in results[0]}


def merge_runs(folders, out=None) -> Path:
    """Gather the chunks of several folders of one run (processes with ``shard``) into ``out``
    (default: the first folder). Raises :class:`~nuejax.errors.InputError` when the folders hold
    different runs or a chunk is missing from all of them (naming it)."""
    folders = [Path(f) for f in folders]
    if not folders:
        raise InputError("merge_runs: no folder given")
    manifests = []
    for f in folders:
        if not (f / MANIFEST).exists():
            raise InputError(f"{f}: not a nuejax run folder (no {MANIFEST})")
        manifests.append(json.loads((f / MANIFEST).read_text()))
    for f, m in zip(folders[1:], manifests[1:]):
        if m["config"] != manifests[0]["config"]:
            diff = sorted(k for k in set(m["config"]) | set(manifests[0]["config"])
                          if m["config"].get(k) != manifests[0]["config"].get(k))
            raise InputError(f"{f}: holds a different run than {folders[0]} ({', '.join(diff)} differ)")
    setups = []
    for f in folders:
        with np.load(f / SETUP) as z:
            setups.append({k: z[k] for k in z.files})
    for f, s in zip(folders[1:], setups[1:]):
        if set(s) != set(setups[0]):  # folders of two versions of one run's set-up
            raise InputError(f"{f}: its set-up holds {sorted(set(s) ^ set(setups[0]))} where {folders[0]}'s does "
                             "not (or the other way round): the processes ran different versions; rerun them on one")
        for k, v in s.items():
            if not np.allclose(v, setups[0][k], rtol=1e-9, atol=0.0, equal_nan=True):
                raise InputError(f"{f}: its set-up array {k!r} differs from {folders[0]}'s beyond rounding "
                                 "(the processes fitted the observed data differently); rerun them on one set-up")
    out = folders[0] if out is None else Path(out)
    if out.resolve() not in [f.resolve() for f in folders]:
        if (out / MANIFEST).exists():
            old = json.loads((out / MANIFEST).read_text())
            if old["config"] != manifests[0]["config"]:
                raise InputError(f"{out}: holds a different run; merge into a new folder")
        elif (out / "chunks").exists() and any((out / "chunks").glob("chunk_*.npz")):
            raise InputError(f"{out}: holds chunks of an unknown run; merge into a new folder")
        (out / "chunks").mkdir(parents=True, exist_ok=True)
        shutil.copy2(folders[0] / MANIFEST, out / MANIFEST)
        shutil.copy2(folders[0] / SETUP, out / SETUP)
    n_chunks = int(manifests[0]["config"]["n_chunks"])
    missing = []
    for k in range(n_chunks):
        name = f"chunk_{k:06d}.npz"
        dest = out / "chunks" / name
        if dest.exists():
            continue
        src = next((f / "chunks" / name for f in folders if (f / "chunks" / name).exists()), None)
        if src is None:
            missing.append(k)
            continue
        shutil.copy2(src, dest)
    if missing:
        raise InputError(f"merge_runs: chunk(s) {missing[:10]}{' ...' if len(missing) > 10 else ''} of {n_chunks} "
                         f"are in none of the folders: run the missing shards first")
    return out
