"""ROOT I/O through uproot: 2-D response histograms (TH2) and 1-D templates / data (TH1).

Every problem is a :class:`RootInputError` (a :class:`~nuejax.errors.FileFormatError`, hence a
``ValueError``) naming the file, the key and what is wrong: a file that is not ROOT, truncated or
damaged (the uproot, zlib or I/O error is chained as ``__cause__``), a missing key, a wrong object
type, mismatched or non-monotonic binning, NaN, negative or empty content. A missing file is a
``FileNotFoundError``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import FileFormatError, InputError

__all__ = ["RootInputError", "read_th1", "read_th2", "write_hists", "read_response_histogram", "read_template"]


class RootInputError(FileFormatError):
    """A ROOT file cannot be read or does not hold what nuejax needs; the message names the file
    and key. A :class:`~nuejax.errors.FileFormatError`, hence an ``InputError`` and ``ValueError``."""


def _uproot():
    try:
        import uproot
    except ImportError as err:  # pragma: no cover - uproot is a dependency
        raise ImportError("nuejax ROOT I/O needs uproot: pip install uproot") from err
    return uproot


def _why(err: BaseException) -> str:
    cls = type(err)
    kind = cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"
    text = " ".join(str(err).split())
    return f"{kind}: {text}" if text else kind


def _open(path):
    """Open ``path`` with uproot; a missing file is FileNotFoundError, anything unreadable a
    RootInputError (not a ROOT file, truncated, damaged header)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"ROOT file not found: {path}")
    uproot = _uproot()
    try:
        f = uproot.open(path)
    except Exception as err:  # uproot raises ValueError, OSError, struct/deserialization errors
        raise RootInputError(f"{path}: cannot open as a ROOT file ({_why(err)})") from err
    try:
        end, size = int(f.file.fEND), path.stat().st_size
    except Exception as err:
        f.close()
        raise RootInputError(f"{path}: damaged ROOT header ({_why(err)})") from err
    if size < end:
        f.close()
        raise RootInputError(f"{path}: file is truncated: its header says {end} bytes, the file has {size}")
    return f


def _get(f, path, key, kind):
    try:
        present = key in f
        available = "" if present else ", ".join(sorted(k.split(";")[0] for k in f.keys()))
    except Exception as err:
        raise RootInputError(f"{path}: cannot read the list of keys, the file is damaged ({_why(err)})") from err
    if not present:
        raise RootInputError(f"{path}: no key {key!r} (available: {available or 'none'})")
    try:
        obj = f[key]
        cls = obj.classname
    except Exception as err:  # zlib.error, uproot DeserializationError, OSError on a damaged record
        raise RootInputError(f"{path}:{key}: cannot read the object, the file is damaged ({_why(err)})") from err
    if not cls.startswith(kind):
        raise RootInputError(f"{path}:{key}: is a {cls}, expected a {kind}")
    return obj


def _read(path, key, kind):
    """``(values, [edges per axis])`` of histogram ``key``, every uproot error a RootInputError."""
    with _open(path) as f:
        h = _get(f, path, key, kind)
        try:
            values = np.asarray(h.values(flow=False), dtype=float)
            n_axes = 1 if kind == "TH1" else 2
            edges = [np.asarray(h.axis(i).edges(), dtype=float) for i in range(n_axes)]
        except Exception as err:
            raise RootInputError(f"{path}:{key}: cannot read the histogram's contents or axes "
                                 f"({_why(err)})") from err
    if values.shape != tuple(e.size - 1 for e in edges):
        raise RootInputError(f"{path}:{key}: content of shape {values.shape} does not match the axes "
                             f"({', '.join(str(e.size - 1) for e in edges)} bins)")
    return values, edges


def _check_edges(path, key, axis, edges, expected):
    bad = np.nonzero(~np.isfinite(edges))[0] if edges.ndim == 1 else []
    if edges.ndim != 1 or edges.size < 2 or len(bad) or np.any(np.diff(edges) <= 0):
        where = f" (edge {int(bad[0])} is {edges[bad[0]]})" if len(bad) else ""
        raise RootInputError(f"{path}:{key}: {axis} bin edges are not strictly increasing{where}")
    if expected is not None:
        expected = np.asarray(expected, dtype=float)
        if expected.shape != edges.shape or not np.allclose(edges, expected, rtol=1e-9, atol=1e-12):
            exp = (f"{expected.size - 1} bins [{expected[0]:g}, {expected[-1]:g}]" if expected.ndim == 1
                   and expected.size >= 2 else f"edges of shape {expected.shape}")
            raise RootInputError(
                f"{path}:{key}: {axis} binning does not match: file has {edges.size - 1} bins "
                f"[{edges[0]:g}, {edges[-1]:g}], expected {exp}")


def _check_content(path, key, values, allow_empty=False):
    bad = ~np.isfinite(values)
    if bad.any():
        raise RootInputError(f"{path}:{key}: NaN or infinite content in bin {tuple(int(i) for i in np.argwhere(bad)[0])}")
    neg = values < 0
    if neg.any():
        idx = tuple(int(i) for i in np.argwhere(neg)[0])
        raise RootInputError(f"{path}:{key}: negative content {values[idx]:g} in bin {idx}")
    if not allow_empty and not np.any(values > 0):
        raise RootInputError(f"{path}:{key}: histogram is empty")


def read_th1(path, key, *, expected_edges=None, allow_empty=False):
    """Read a TH1 as ``(values, edges)`` (no under/overflow), validated.

    Raises:
        FileNotFoundError: no file at ``path``.
        RootInputError: the file is not ROOT, truncated or damaged; no ``key``; not a TH1; bad or
            unexpected binning; NaN, infinite or negative content (names the bin); empty content
            (unless ``allow_empty``).
    """
    values, (edges,) = _read(path, key, "TH1")
    _check_edges(path, key, "x", edges, expected_edges)
    _check_content(path, key, values, allow_empty)
    return values, edges


def read_th2(path, key, *, expected_x_edges=None, expected_y_edges=None):
    """Read a TH2 as ``(values[x, y], x_edges, y_edges)``, validated.

    For a response histogram x is the true recoil energy T and y the observable (N_p).

    Raises:
        FileNotFoundError: no file at ``path``.
        RootInputError: as :func:`read_th1` (an empty histogram is always an error).
    """
    values, (xe, ye) = _read(path, key, "TH2")
    _check_edges(path, key, "x", xe, expected_x_edges)
    _check_edges(path, key, "y", ye, expected_y_edges)
    _check_content(path, key, values)
    return values, xe, ye


def write_hists(path, hists: dict) -> None:
    """Write histograms to a new ROOT file: ``{key: (values, edges)}`` for TH1D,
    ``{key: (values, x_edges, y_edges)}`` for TH2D."""
    uproot = _uproot()
    with uproot.recreate(path) as f:
        for key, h in hists.items():
            arrays = tuple(np.asarray(a, dtype=float) for a in h)
            if len(arrays) not in (2, 3):
                raise ValueError(f"{key}: expected (values, edges) or (values, x_edges, y_edges)")
            f[key] = arrays


def read_response_histogram(path, key, *, n_generated: float, expected_obs_edges=None, name: str | None = None):
    """A TH2 response histogram N_ij (x: true recoil T [MeV], y: observable) as a
    :class:`~nuejax.detector.montecarlo.ResponseHistogram`.

    ``n_generated`` is the number (sum of weights) of generated events of the component,
    including those outside the histogram -- ROOT histograms do not carry it, and the reweighting
    needs it for the scale s of paper Eq. (Rij).

    Raises:
        FileNotFoundError: no file at ``path``.
        RootInputError: as :func:`read_th2`; ``n_generated`` not finite or below the histogram's
            entries; a recoil axis starting below 0; anything else
            :meth:`ResponseHistogram.validate <nuejax.detector.montecarlo.ResponseHistogram.validate>`
            refuses (the message names file and key).
    """
    from ..detector.montecarlo import ResponseHistogram

    values, xe, ye = read_th2(path, key, expected_y_edges=expected_obs_edges)
    try:
        n_generated = float(n_generated)
    except (TypeError, ValueError) as err:
        raise RootInputError(f"{path}:{key}: n_generated must be a number, got {n_generated!r}") from err
    if not np.isfinite(n_generated):
        raise RootInputError(f"{path}:{key}: n_generated = {n_generated:g} is not finite")
    if not n_generated >= values.sum():
        raise RootInputError(f"{path}:{key}: n_generated = {n_generated:g} is below the histogram's "
                             f"{values.sum():g} entries")
    if xe[0] < 0:
        raise RootInputError(f"{path}:{key}: recoil axis starts at {xe[0]:g} MeV < 0")
    try:
        return ResponseHistogram(values, xe, ye, n_generated, name=name or key)
    except InputError as err:
        raise RootInputError(f"{path}:{key}: {err}") from err


def read_template(path, key, obs_edges):
    """A TH1 background template on exactly the model's observable binning, normalised to unit sum
    (multiply by the fraction of decays inside the window if the histogram holds only those).

    Raises:
        FileNotFoundError: no file at ``path``.
        RootInputError: as :func:`read_th1`; in particular a binning other than ``obs_edges`` (both
            binnings named), a NaN, infinite or negative bin, or an empty template.
    """
    values, _ = read_th1(path, key, expected_edges=np.asarray(obs_edges))
    return values / values.sum()
