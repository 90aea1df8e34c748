"""Readers for the Borexino Phase-III open data shipped in ``nuejax/data/borexino_phase3``.

- :func:`read_borexino_shape`: the Monte Carlo spectral shapes (``*_pdfkeV__N.txt``);
- :func:`read_borexino_spectrum`: the TFC-subtracted observed spectrum
  (``PRL2022_SubtractedSpectrumFit_Data.txt``), as an :class:`ObservedSpectrum`;
- :func:`read_borexino_cno_profile`: the published CNO-rate profile
  (``Phase3Final_BiULLarge_Golden_Energy_Radial_May18_HybridMethod.txt``), as a
  :class:`PublishedProfile`.

Errors in a file are :class:`~nuejax.errors.FileFormatError` (a ``ValueError``) naming the file,
the row (its line in the file, from 1), the column and the problem. Errors in what a user passes
to :class:`ObservedSpectrum` or :class:`PublishedProfile` are :class:`~nuejax.errors.InputError`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from dataclasses import field as _field
from importlib import resources
from pathlib import Path

import numpy as np

from ..detector.checks import check_edges
from ..errors import DataError, FileFormatError, InputError

__all__ = ["BorexinoShape", "ObservedSpectrum", "PublishedProfile", "packaged_borexino_cno_profile",
           "packaged_borexino_shape", "packaged_borexino_spectrum", "read_borexino_cno_profile",
           "read_borexino_shape", "read_borexino_spectrum"]

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
    file (from 1). Subnormal densities (:math:`|d| < 10^{-300}`) mark empty bins and read as 0.

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


# --------------------------------------------------------------------------------------------
# Observed spectra and published profiles
# --------------------------------------------------------------------------------------------

#: Names of the files shipped in ``nuejax/data/borexino_phase3``.
_SPECTRUM_FILE = "PRL2022_SubtractedSpectrumFit_Data.txt"
_CNO_PROFILE_FILE = "Phase3Final_BiULLarge_Golden_Energy_Radial_May18_HybridMethod.txt"

#: A decimal number without inf/nan; ``float`` alone would also take ``1_0``, ``infinity``, ...
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_NON_FINITE = re.compile(r"[+-]?(?:inf|infinity|nan)", re.IGNORECASE)


def _frozen_array(values, what, dtype=float):
    try:
        a = np.array(values, dtype=dtype)
    except (TypeError, ValueError) as err:
        raise InputError(f"{what}: not an array of numbers ({err})") from err
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False, repr=False)
class ObservedSpectrum:
    """Observed counts on contiguous bins (plain numpy data).

    Attributes:
        edges: (n+1,) strictly increasing, finite bin edges (keV for the Borexino spectrum).
        counts: (n,) observed counts, float, finite and >= 0.
        source: where the counts come from (a file, ``file:key``, a histogram's name).
        labels: optional (n,) per-bin labels, e.g. the Borexino ``N_h`` bin numbers; or None.
        reference: optional named (n,) per-bin arrays carried along with the counts, e.g.
            ``{"residual": ..., "error": ...}`` for the Borexino spectrum. Values are not checked
            (a residual may be ``-inf``).

    The arrays are read-only copies of what was passed in. :meth:`select` keeps ``labels`` and
    ``reference`` (sliced); :meth:`rebin` drops them, as merged bins have no single label and a
    residual cannot be merged.

    Raises:
        InputError: ``edges`` not 1-D with at least 2 finite, strictly increasing values;
            ``counts``, ``labels`` or an array of ``reference`` not of shape (n,).
        DataError: a count that is NaN, infinite or negative (the message names the bin).
    """

    edges: np.ndarray
    counts: np.ndarray
    source: str = ""
    labels: np.ndarray | None = None
    reference: dict = _field(default_factory=dict)

    def __post_init__(self):
        what = self._what()
        edges = _frozen_array(self.edges, f"{what}: edges")
        check_edges(edges, what)
        n = edges.size - 1
        counts = _frozen_array(self.counts, f"{what}: counts")
        if counts.shape != (n,):
            raise InputError(f"{what}: counts of shape {counts.shape} do not match the {n} bins of the edges")
        bad = np.nonzero(~np.isfinite(counts) | (counts < 0))[0]
        if bad.size:
            i = bad[0]
            raise DataError(f"{what}: bin {i} [{edges[i]:g}, {edges[i + 1]:g}] holds {counts[i]:g}; "
                            f"counts must be finite and >= 0")
        labels = None
        if self.labels is not None:
            labels = np.array(self.labels)
            if labels.shape != (n,):
                raise InputError(f"{what}: labels of shape {labels.shape} do not match the {n} bins")
            labels.setflags(write=False)
        reference = {}
        for key, values in dict(self.reference or {}).items():
            arr = _frozen_array(values, f"{what}: reference[{key!r}]")
            if arr.shape != (n,):
                raise InputError(f"{what}: reference[{key!r}] of shape {arr.shape} does not match the {n} bins")
            reference[str(key)] = arr
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "source", str(self.source))
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "reference", reference)

    def _what(self) -> str:
        return f"spectrum {self.source!r}" if self.source else "spectrum"

    def __repr__(self) -> str:
        return (f"ObservedSpectrum({self.n_bins} bins on [{self.edges[0]:g}, {self.edges[-1]:g}], "
                f"{float(self.counts.sum()):g} counts, source={self.source!r})")

    @property
    def n_bins(self) -> int:
        """Number of bins."""
        return int(self.counts.size)

    @property
    def centres(self) -> np.ndarray:
        """Bin centres, (edges[:-1] + edges[1:]) / 2."""
        return 0.5 * (self.edges[:-1] + self.edges[1:])

    @property
    def widths(self) -> np.ndarray:
        """Bin widths, diff(edges)."""
        return np.diff(self.edges)

    def _derived(self, how: str) -> str:
        return f"{self.source} ({how})" if self.source else how

    def rebin(self, k: int, *, drop_remainder: bool = False) -> ObservedSpectrum:
        """Merge every ``k`` consecutive bins into one; counts are summed exactly (correctly rounded).

        ``labels`` and ``reference`` are dropped (None and ``{}``) in the result.

        Args:
            k: bins per merged bin, an integer >= 1.
            drop_remainder: if the number of bins is not a multiple of ``k``, drop the last
                ``n_bins % k`` bins (their counts are lost) instead of raising.

        Raises:
            InputError: ``k`` is not an integer >= 1; ``n_bins`` is not a multiple of ``k`` (both
                numbers named) and ``drop_remainder`` is False; fewer than ``k`` bins.
        """
        what = self._what()
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise InputError(f"{what}: rebin factor must be an integer >= 1, got {k!r}")
        k = int(k)
        m, r = divmod(self.n_bins, k)
        if m == 0:
            raise InputError(f"{what}: cannot merge bins in groups of {k}: it has only {self.n_bins} bins")
        if r and not drop_remainder:
            raise InputError(f"{what}: cannot merge {self.n_bins} bins in groups of {k}: {self.n_bins} is "
                             f"not a multiple of {k} (remainder {r}); pass drop_remainder=True to drop "
                             f"the last {r} bins, or select() a range first")
        groups = self.counts[:m * k].reshape(m, k)
        counts = np.array([math.fsum(g) for g in groups])
        edges = self.edges[:m * k + 1:k]
        how = f"rebinned by {k}" + (f", last {r} bins dropped" if r else "")
        return ObservedSpectrum(edges, counts, source=self._derived(how))

    def select(self, lo: float, hi: float) -> ObservedSpectrum:
        """Keep the bins that lie entirely within ``[lo, hi]`` (edges compared exactly).

        ``labels`` and ``reference`` are sliced along.

        Raises:
            InputError: ``lo`` or ``hi`` not a number, or not ``lo < hi``; no bin lies within
                ``[lo, hi]`` (the message gives the range the bins span).
        """
        what = self._what()
        try:
            lo, hi = float(lo), float(hi)
        except (TypeError, ValueError) as err:
            raise InputError(f"{what}: select(lo, hi) needs two numbers, got {lo!r}, {hi!r}") from err
        if not lo < hi:
            raise InputError(f"{what}: select(lo, hi) needs lo < hi, got [{lo:g}, {hi:g}]")
        inside = np.nonzero((self.edges[:-1] >= lo) & (self.edges[1:] <= hi))[0]
        if not inside.size:
            raise InputError(f"{what}: no bin lies entirely within [{lo:g}, {hi:g}]; the bins span "
                             f"[{self.edges[0]:g}, {self.edges[-1]:g}]")
        i, j = int(inside[0]), int(inside[-1]) + 1
        return ObservedSpectrum(self.edges[i:j + 1], self.counts[i:j],
                                source=self._derived(f"bins within [{lo:g}, {hi:g}]"),
                                labels=None if self.labels is None else self.labels[i:j],
                                reference={key: v[i:j] for key, v in self.reference.items()})


def _read_lines(path, what):
    """``(Path, lines)``; a missing file is FileNotFoundError, a non-UTF-8 one a FileFormatError."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise FileFormatError(f"{path}: not a text file ({err})") from err
    return path, text.split("\n")


_SPECTRUM_COLUMNS = ("Nbins", "N_h", "Energy [keV]", "Width [keV]", "Content", "Error", "Residuals")
_FIELD = 12
_HEADER_LINES = 2
#: Largest |upper edge of a bin - lower edge of the next| accepted, as a fraction of the narrower
#: width. The packaged file reaches 0.0033 (0.009 keV): its centres are printed to 6 significant
#: digits (0.01 keV above 1000 keV), and its widths exceed the spacing of the centres by
#: 0.0005 keV on average.
_TOUCH_TOLERANCE = 1e-2


def read_borexino_spectrum(path) -> ObservedSpectrum:
    """Read the TFC-subtracted Borexino Phase-III spectrum (``PRL2022_SubtractedSpectrumFit_Data.txt``).

    The first 2 lines are headers and are skipped. Each data row holds 7 right-aligned fields of
    exactly 12 characters (84 in all), read by position since a field may fill its 12 characters
    and touch the one before (``     2.82843-0.000936334``): bin index, ``N_h``, bin centre [keV],
    bin width [keV], content (events), error (sqrt(content)) and the residual of Borexino's best
    fit. Trailing ``\\r``, tabs and blanks after a row, and blank lines, are ignored. Rows are
    numbered by their line in the file, from 1.

    The bin edges are centre -/+ width/2. Neighbouring bins must touch: the upper edge of one bin
    and the lower edge of the next may differ by at most 1 % of the narrower width (in the
    packaged file they differ by up to 0.33 %, 0.009 keV: the centres are printed to 6
    significant digits, and the widths exceed the spacing of the centres by 0.0005 keV on
    average). The edge between two bins is the average of the two; the first and last edges are
    the first bin's lower and the last bin's upper edge.

    Returns:
        :class:`ObservedSpectrum` with ``edges`` (n+1,) [keV], ``counts`` (column 5),
        ``labels`` = ``N_h`` (int) and ``reference = {"residual": ..., "error": ...}``
        (columns 7 and 6; a residual of ``-inf`` stays ``-inf``).

    Raises:
        FileNotFoundError: no file at ``path``.
        FileFormatError: the file is not UTF-8 text or has no data rows; a row that is not 84
            characters long; an empty, misaligned or non-numeric field; a non-finite value
            (``-inf`` is allowed only in the residual column, and only where the content is 0);
            bin indices that do not run 1, 2, 3, ...; a non-integer ``N_h``; a width <= 0; a
            content that is negative or not an integer; an error that is not sqrt(content) to
            1e-3 relative + 1e-6; bins that do not touch or do not increase. The message names the
            file, the line and the column.
    """
    path, lines = _read_lines(path, "Borexino spectrum")
    cols = _SPECTRUM_COLUMNS
    width_all = _FIELD * len(cols)
    rows, numbers = [], []
    for number, raw in enumerate(lines, start=1):
        if number <= _HEADER_LINES:
            continue
        line = raw.rstrip(" \t\r\f\v")
        if not line:
            continue
        if len(line) != width_all:
            c = min(len(line) // _FIELD, len(cols) - 1)
            where = "ends inside or before" if len(line) < width_all else "has text after"
            raise FileFormatError(
                f"{path}: line {number}: {len(line)} characters, expected {width_all} (7 right-aligned "
                f"fields of {_FIELD} characters: {', '.join(cols)}); the row {where} column {c + 1} "
                f"({cols[c]}): a field is missing, too wide or misaligned")
        values, texts = [], []
        for c, name in enumerate(cols):
            f = line[_FIELD * c:_FIELD * (c + 1)]
            where = f"{path}: line {number}, column {c + 1} ({name}, characters {_FIELD * c + 1}-{_FIELD * (c + 1)})"
            text = f.lstrip(" ")
            if not text:
                raise FileFormatError(f"{where}: empty field")
            if f[-1] == " ":
                raise FileFormatError(f"{where}: {f!r} is not right-aligned in its {_FIELD} characters "
                                      f"(the row is misaligned)")
            if not (_NUMBER.fullmatch(text) or _NON_FINITE.fullmatch(text)):
                raise FileFormatError(f"{where}: {text!r} is not a number")
            v = float(text)
            if not math.isfinite(v) and not (name == "Residuals" and v == -math.inf):
                extra = " (-inf is allowed only in the Residuals column)" if v == -math.inf else ""
                raise FileFormatError(f"{where}: {text!r} is not finite{extra}")
            values.append(v)
            texts.append(text)
        index, n_h, centre, width, content, error, residual = values

        def fail(c, problem, number=number):
            raise FileFormatError(f"{path}: line {number}, column {c + 1} ({cols[c]}): {problem}")

        if index != len(rows) + 1:
            fail(0, f"bin index {texts[0]}, expected {len(rows) + 1} (bin indices run 1, 2, 3, ... in order)")
        if not n_h.is_integer():
            fail(1, f"N_h = {texts[1]} is not an integer")
        if width <= 0:
            fail(3, f"width {texts[3]} keV is not positive")
        if content < 0:
            fail(4, f"negative count {texts[4]}")
        if not content.is_integer():
            fail(4, f"count {texts[4]} is not an integer")
        root = math.sqrt(content)
        if not abs(error - root) <= 1e-3 * root + 1e-6:
            fail(5, f"error {texts[5]} is not sqrt(Content) = sqrt({texts[4]}) = {root:.6g}")
        if residual == -math.inf and content != 0:
            fail(6, f"residual -inf in a bin with {texts[4]} events (-inf is allowed only where Content is 0)")
        rows.append(values)
        numbers.append(number)
    if not rows:
        raise FileFormatError(f"{path}: no data rows: the file has {len(lines)} lines, data rows start "
                              f"at line {_HEADER_LINES + 1} after {_HEADER_LINES} header lines")
    data = np.asarray(rows, dtype=float)
    centre, width = data[:, 2], data[:, 3]
    lo, hi = centre - width / 2, centre + width / 2
    gap = lo[1:] - hi[:-1]
    tol = _TOUCH_TOLERANCE * np.minimum(width[:-1], width[1:])
    bad = np.nonzero(~(np.abs(gap) <= tol))[0]
    if bad.size:
        r = bad[0] + 1
        raise FileFormatError(
            f"{path}: line {numbers[r]}, columns 3-4 (Energy [keV], Width [keV]): bins are not contiguous "
            f"and increasing: this bin starts at centre - width/2 = {lo[r]:.6g} keV, the bin on line "
            f"{numbers[r - 1]} ends at {hi[r - 1]:.6g} keV (difference {gap[r - 1]:.3g} keV, more than "
            f"{_TOUCH_TOLERANCE:g} x the width = {tol[r - 1]:.3g} keV)")
    edges = np.concatenate([lo[:1], 0.5 * (hi[:-1] + lo[1:]), hi[-1:]])
    return ObservedSpectrum(edges, data[:, 4], source=str(path), labels=data[:, 1].astype(np.int64),
                            reference={"residual": data[:, 6], "error": data[:, 5]})


def _packaged_file(name: str):
    return resources.files("nuejax") / "data" / "borexino_phase3" / name


def packaged_borexino_spectrum() -> ObservedSpectrum:
    """The TFC-subtracted Borexino Phase-III spectrum shipped with nuejax (817 bins, 320-2640 keV),
    read with :func:`read_borexino_spectrum`."""
    with resources.as_file(_packaged_file(_SPECTRUM_FILE)) as p:
        return read_borexino_spectrum(p)


@dataclass(frozen=True, eq=False, repr=False)
class PublishedProfile:
    """A published likelihood profile of one parameter, tabulated: ``delta_chi2`` = -2 Delta ln L
    at the values ``x`` of the parameter.

    Attributes:
        x: (m,) finite, strictly increasing values of the parameter, m >= 2.
        delta_chi2: (m,) finite -2 Delta ln L at ``x``.
        name: the parameter, with its unit.
        source: where the profile comes from.

    Raises:
        InputError: ``x`` and ``delta_chi2`` not 1-D of the same length >= 2; a non-finite value;
            ``x`` not strictly increasing.
    """

    x: np.ndarray
    delta_chi2: np.ndarray
    name: str = ""
    source: str = ""

    def __post_init__(self):
        what = f"profile {self.name!r}" if self.name else "profile"
        x = _frozen_array(self.x, f"{what}: x")
        y = _frozen_array(self.delta_chi2, f"{what}: delta_chi2")
        if x.ndim != 1 or x.size < 2 or y.shape != x.shape:
            raise InputError(f"{what}: x and delta_chi2 must be 1-D of the same length >= 2, got shapes "
                             f"{x.shape} and {y.shape}")
        for label, a in (("x", x), ("delta_chi2", y)):
            bad = np.nonzero(~np.isfinite(a))[0]
            if bad.size:
                raise InputError(f"{what}: {label}[{bad[0]}] is {a[bad[0]]}, not finite")
        bad = np.nonzero(np.diff(x) <= 0)[0]
        if bad.size:
            i = bad[0]
            raise InputError(f"{what}: x is not strictly increasing: x[{i + 1}] = {x[i + 1]:g} <= x[{i}] = {x[i]:g}")
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "delta_chi2", y)

    def __repr__(self) -> str:
        return (f"PublishedProfile({self.name!r}, {self.x.size} points on [{self.x[0]:g}, {self.x[-1]:g}], "
                f"minimum at {self.minimum:g}, source={self.source!r})")

    def at(self, values):
        """-2 Delta ln L at ``values`` (a number or an array), interpolated linearly between the points.

        Returns a float for a number, an array of the shape of ``values`` otherwise.

        Raises:
            InputError: a value that is not a number, NaN, or outside ``[x[0], x[-1]]`` (the first
                such value, the profile and its range are named).
        """
        what = f"profile {self.name!r}" if self.name else "profile"
        try:
            v = np.asarray(values, dtype=float)
        except (TypeError, ValueError) as err:
            raise InputError(f"{what}: at() needs numbers, got {values!r}") from err
        outside = ~((v >= self.x[0]) & (v <= self.x[-1]))
        if outside.any():
            first = float(v[outside].flat[0])
            raise InputError(f"{what}: {first:g} is outside the tabulated range [{self.x[0]:g}, {self.x[-1]:g}]")
        out = np.interp(v, self.x, self.delta_chi2)
        return float(out) if v.ndim == 0 else out

    @property
    def minimum(self) -> float:
        """The tabulated value of the parameter where ``delta_chi2`` is smallest."""
        return float(self.x[int(np.argmin(self.delta_chi2))])

    def to_dict(self) -> dict:
        """``{"name", "source", "x", "delta_chi2"}`` with plain lists (JSON-serialisable)."""
        return {"name": self.name, "source": self.source, "x": self.x.tolist(),
                "delta_chi2": self.delta_chi2.tolist()}


_PROFILE_COLUMNS = ("CNO rate", "zero", "-2 Delta ln L")


def read_borexino_cno_profile(path) -> PublishedProfile:
    """Read the published Borexino Phase-III CNO-rate profile
    (``Phase3Final_BiULLarge_Golden_Energy_Radial_May18_HybridMethod.txt``).

    Each row has exactly 3 tab- (or blank-) separated numbers: the CNO rate [cpd/100 t], a column
    of zeros, and -2 Delta ln L. Numbers may be written ``0.10``, ``7`` or ``7.29E-07``; ``inf``
    and ``nan`` are refused. Blank lines and lines starting with ``#`` are skipped; rows are
    numbered by their line in the file, from 1.

    Returns:
        :class:`PublishedProfile` with ``name="CNO rate [cpd/100 t]"``.

    Raises:
        FileNotFoundError: no file at ``path``.
        FileFormatError: the file is not UTF-8 text or has fewer than 2 rows; a row without exactly
            3 fields; a field that is not a finite number; a non-zero second column; CNO rates that
            do not increase strictly. The message names the file, the line and the column.
    """
    path, lines = _read_lines(path, "Borexino CNO profile")
    cols = _PROFILE_COLUMNS
    xs, ys, numbers = [], [], []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != len(cols):
            raise FileFormatError(f"{path}: line {number}: expected {len(cols)} tab-separated columns "
                                  f"({', '.join(cols)}), found {len(fields)}")
        values = []
        for c, text in enumerate(fields):
            v = float(text) if _NUMBER.fullmatch(text) else math.nan
            if not math.isfinite(v):
                raise FileFormatError(f"{path}: line {number}, column {c + 1} ({cols[c]}): {text!r} is not "
                                      f"a finite number")
            values.append(v)
        x, zero, y = values
        if zero != 0:
            raise FileFormatError(f"{path}: line {number}, column 2 ({cols[1]}): expected 0, found {fields[1]!r}")
        if xs and not x > xs[-1]:
            raise FileFormatError(f"{path}: line {number}, column 1 ({cols[0]}): {fields[0]} is not above "
                                  f"{xs[-1]:g} on line {numbers[-1]}; the rates must increase strictly")
        xs.append(x)
        ys.append(y)
        numbers.append(number)
    if len(xs) < 2:
        raise FileFormatError(f"{path}: {len(xs)} data rows, a profile needs at least 2")
    return PublishedProfile(np.asarray(xs), np.asarray(ys), name="CNO rate [cpd/100 t]", source=str(path))


def packaged_borexino_cno_profile() -> PublishedProfile:
    """The published Borexino Phase-III CNO-rate profile shipped with nuejax (2501 points, -7 to
    18 cpd/100 t), read with :func:`read_borexino_cno_profile`."""
    with resources.as_file(_packaged_file(_CNO_PROFILE_FILE)) as p:
        return read_borexino_cno_profile(p)
