"""Reader for the text spectral shapes of the Borexino Phase-III open data (``*_pdfkeV__N.txt``)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np

__all__ = ["BorexinoShape", "read_borexino_shape", "packaged_borexino_shape"]

#: Subnormal fill values (~1e-313) mark empty bins in these files.
_EMPTY = 1e-300


class BorexinoShape:
    """A piecewise-constant density on contiguous keV bins: ``edges`` (n+1,), ``density`` (n,) per keV."""

    def __init__(self, edges, density, source=""):
        self.edges = np.asarray(edges, dtype=float)
        self.density = np.asarray(density, dtype=float)
        self.source = source

    @property
    def integral(self) -> float:
        """Sum of density x width (the rate above the first edge, as the files are normalised)."""
        return float(np.sum(self.density * np.diff(self.edges)))

    def cdf(self, energy_kev):
        """Cumulative content below ``energy_kev`` (piecewise linear, exact for the histogram)."""
        cum = np.concatenate([[0.0], np.cumsum(self.density * np.diff(self.edges))])
        return np.interp(energy_kev, self.edges, cum, left=0.0, right=cum[-1])


def read_borexino_shape(path) -> BorexinoShape:
    """Read one ``*_pdfkeV__N.txt`` file; errors name the file, the row and the problem."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Borexino shape file not found: {path}")
    try:
        data = np.loadtxt(path, delimiter=",", ndmin=2)
    except ValueError as err:
        raise ValueError(f"{path}: cannot parse as comma-separated numbers: {err}") from err
    if data.shape[1] != 4:
        raise ValueError(f"{path}: expected 4 columns (lo keV, hi keV, density, error), found {data.shape[1]}")
    lo, hi, dens = data[:, 0], data[:, 1], data[:, 2]
    if not np.all(np.isfinite(data[:, :3])):
        row = int(np.nonzero(~np.isfinite(data[:, :3]).all(axis=1))[0][0])
        raise ValueError(f"{path}: non-finite value in row {row + 1}")
    if np.any(hi <= lo) or np.any(np.abs(lo[1:] - hi[:-1]) > 1e-6 * np.abs(hi[:-1])):
        raise ValueError(f"{path}: bins are not contiguous and increasing")
    if np.any(dens < -_EMPTY):
        row = int(np.nonzero(dens < -_EMPTY)[0][0])
        raise ValueError(f"{path}: negative density {dens[row]} in row {row + 1}")
    dens = np.where(np.abs(dens) < _EMPTY, 0.0, dens)
    if not np.any(dens > 0):
        raise ValueError(f"{path}: the shape is empty")
    return BorexinoShape(np.concatenate([lo, hi[-1:]]), dens, source=str(path))


def packaged_borexino_shape(stem: str) -> BorexinoShape:
    """Read a shape shipped in ``nuejax/data/borexino_phase3`` by its stem, e.g. ``Ext_K40``."""
    folder = resources.files("nuejax") / "data" / "borexino_phase3"
    matches = [f for f in folder.iterdir() if f.name.startswith(stem + "_pdfkeV")]
    if len(matches) != 1:
        names = sorted(f.name.split("_pdfkeV")[0] for f in folder.iterdir() if "_pdfkeV" in f.name)
        raise KeyError(f"no packaged Borexino shape {stem!r}; available: {', '.join(names)}")
    with resources.as_file(matches[0]) as p:
        return read_borexino_shape(p)
