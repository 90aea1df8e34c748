"""Reader for the text spectral shapes of the Borexino Phase-III open data (``*_pdfkeV__N.txt``).

Errors in a file are :class:`~nuejax.errors.FileFormatError` (a ``ValueError``) naming the file,
the row and the problem.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np

from ..errors import FileFormatError

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
    """Read one ``*_pdfkeV__N.txt`` file: rows ``lo keV, hi keV, density per keV, error``.

    Blank lines and lines starting with ``#`` are skipped; rows are numbered by their line in the
    file (from 1). Subnormal densities (|d| < 1e-300) mark empty bins and read as 0.

    Raises:
        FileNotFoundError: no file at ``path``.
        FileFormatError: the file is not UTF-8 text or has no data rows; a row without exactly 4
            comma-separated fields; a field that is not a number; a non-finite bin edge or density;
            bins that are not contiguous and increasing; a negative density; an all-zero shape.
            The message names the file, the row (and the column) and the problem.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Borexino shape file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise FileFormatError(f"{path}: not a text file ({err})") from err
    columns = ("lo keV", "hi keV", "density", "error")
    rows, lines = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) != 4:
            raise FileFormatError(f"{path}: row {number}: expected 4 comma-separated columns "
                                  f"({', '.join(columns)}), found {len(fields)}")
        values = []
        for col, field in enumerate(fields):
            try:
                values.append(float(field))
            except ValueError as err:
                raise FileFormatError(f"{path}: row {number}, column {col + 1} ({columns[col]}): "
                                      f"{field.strip()!r} is not a number") from err
        rows.append(values)
        lines.append(number)
    if not rows:
        raise FileFormatError(f"{path}: no data rows (the file is empty)")
    data = np.asarray(rows, dtype=float)
    lines = np.asarray(lines)
    lo, hi, dens = data[:, 0], data[:, 1], data[:, 2]
    bad = np.nonzero(~np.isfinite(data[:, :3]).all(axis=1))[0]
    if bad.size:
        raise FileFormatError(f"{path}: non-finite value in row {lines[bad[0]]}")
    bad = np.nonzero(hi <= lo)[0]
    if bad.size:
        r = bad[0]
        raise FileFormatError(f"{path}: bins are not contiguous and increasing: row {lines[r]} has "
                              f"hi = {hi[r]:g} <= lo = {lo[r]:g} keV")
    bad = np.nonzero(np.abs(lo[1:] - hi[:-1]) > 1e-6 * np.abs(hi[:-1]))[0]
    if bad.size:
        r = bad[0] + 1
        raise FileFormatError(f"{path}: bins are not contiguous and increasing: row {lines[r]} starts at "
                              f"{lo[r]:g} keV, the row before ends at {hi[r - 1]:g} keV")
    bad = np.nonzero(dens < -_EMPTY)[0]
    if bad.size:
        r = bad[0]
        raise FileFormatError(f"{path}: negative density {dens[r]} in row {lines[r]}")
    dens = np.where(np.abs(dens) < _EMPTY, 0.0, dens)
    if not np.any(dens > 0):
        raise FileFormatError(f"{path}: the shape is empty (all {dens.size} densities are zero)")
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
