"""ROOT I/O through uproot: 2-D response histograms (TH2) and 1-D templates / data (TH1).

Every problem is an error naming the file, the key and what is wrong: a missing key, a wrong
object type, mismatched or non-monotonic binning, NaN, negative or empty content.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["RootInputError", "read_th1", "read_th2", "write_hists", "read_response_histogram", "read_template"]


class RootInputError(ValueError):
    """A ROOT file does not hold what nuejax needs; the message names the file and key."""


def _uproot():
    try:
        import uproot
    except ImportError as err:  # pragma: no cover - uproot is a dependency
        raise ImportError("nuejax ROOT I/O needs uproot: pip install uproot") from err
    return uproot


def _open(path):
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"ROOT file not found: {path}")
    return _uproot().open(path)


def _get(f, path, key, kind):
    if key not in f:
        available = ", ".join(sorted(k.split(";")[0] for k in f.keys()))
        raise RootInputError(f"{path}: no key {key!r} (available: {available or 'none'})")
    obj = f[key]
    cls = obj.classname
    if not cls.startswith(kind):
        raise RootInputError(f"{path}:{key}: is a {cls}, expected a {kind}")
    return obj


def _check_edges(path, key, axis, edges, expected):
    if edges.ndim != 1 or edges.size < 2 or np.any(~np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
        raise RootInputError(f"{path}:{key}: {axis} bin edges are not strictly increasing")
    if expected is not None:
        expected = np.asarray(expected, dtype=float)
        if expected.shape != edges.shape or not np.allclose(edges, expected, rtol=1e-9, atol=1e-12):
            raise RootInputError(
                f"{path}:{key}: {axis} binning does not match: file has {edges.size - 1} bins "
                f"[{edges[0]:g}, {edges[-1]:g}], expected {expected.size - 1} bins [{expected[0]:g}, {expected[-1]:g}]")


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
    """Read a TH1 as ``(values, edges)`` (no under/overflow), validated."""
    with _open(path) as f:
        h = _get(f, path, key, "TH1")
        values = np.asarray(h.values(flow=False), dtype=float)
        edges = np.asarray(h.axis().edges(), dtype=float)
    _check_edges(path, key, "x", edges, expected_edges)
    _check_content(path, key, values, allow_empty)
    return values, edges


def read_th2(path, key, *, expected_x_edges=None, expected_y_edges=None):
    """Read a TH2 as ``(values[x, y], x_edges, y_edges)``, validated.

    For a response histogram x is the true recoil energy T and y the observable (N_p).
    """
    with _open(path) as f:
        h = _get(f, path, key, "TH2")
        values = np.asarray(h.values(flow=False), dtype=float)
        xe = np.asarray(h.axis(0).edges(), dtype=float)
        ye = np.asarray(h.axis(1).edges(), dtype=float)
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
    """
    from ..detector.montecarlo import ResponseHistogram

    values, xe, ye = read_th2(path, key, expected_y_edges=expected_obs_edges)
    if not n_generated >= values.sum():
        raise RootInputError(f"{path}:{key}: n_generated = {n_generated:g} is below the histogram's "
                             f"{values.sum():g} entries")
    if xe[0] < 0:
        raise RootInputError(f"{path}:{key}: recoil axis starts at {xe[0]:g} MeV < 0")
    return ResponseHistogram(values, xe, ye, float(n_generated), name=name or key)


def read_template(path, key, obs_edges):
    """A TH1 background template on exactly the model's observable binning, normalised to unit sum
    (multiply by the fraction of decays inside the window if the histogram holds only those)."""
    values, _ = read_th1(path, key, expected_edges=np.asarray(obs_edges))
    return values / values.sum()
