r"""Intervals as unions of regions, and the thresholds that make them (Wilks; Cowan, Cranmer,
Gross, Vitells, *Eur. Phys. J. C* 71 (2011) 1554).

* :func:`two_sided_threshold`: :math:`\chi^2_n` quantile at CL (2.706 for one parameter at 90 %
  CL, 4.605 for two);
* :func:`one_sided_threshold`: :math:`\chi^2_1` quantile at 2 CL − 1 (1.642 at 90 % CL), the
  one-sided limit with the boundary-aware statistic :math:`\tilde q_\mu`;
* :class:`Interval`: ``(lower, upper)`` that says its CL and convention;
* :func:`interval_from_profile`, :func:`regions_from_profile`, :func:`crossings`: where a profile
  (or a Neyman construction's statistic minus its critical value) crosses a level.
"""

from __future__ import annotations

import numpy as np

from .._internal.stats import chi2_ppf

__all__ = ["DCHI2_90", "Interval", "check_cl", "crossings", "interval_from_profile", "one_sided_threshold",
           "region_containing", "regions_from_profile", "two_sided_threshold"]

#: Delta chi^2 thresholds at 90 % CL for one and two parameters (Wilks).
DCHI2_90 = {1: 2.705543454095404, 2: 4.605170185988091}


def two_sided_threshold(cl: float, ndof: int = 1) -> float:
    """:math:`\\chi^2_{n}` quantile at ``cl`` (2.706 for one parameter at 90 % CL)."""
    check_cl(cl)
    return float(chi2_ppf(cl, ndof))


def one_sided_threshold(cl: float) -> float:
    """:math:`\\chi^2_1` quantile at 2 CL − 1 (1.642 at 90 % CL): one-sided limit with
    :math:`\\tilde q_\\mu` (module docstring)."""
    check_cl(cl)
    if cl <= 0.5:
        raise ValueError(f"a one-sided limit needs cl > 0.5, got {cl}")
    return float(chi2_ppf(2.0 * cl - 1.0, 1))


def check_cl(cl):
    if not (isinstance(cl, (int, float)) and 0.0 < cl < 1.0):
        raise ValueError(f"confidence level must be a number in (0, 1), got {cl!r}")


class Interval(tuple):
    """A confidence set as a union of regions, unpacking like a tuple ``(lower, upper)``: the
    region that contains the best fit (``best``). ``regions``: every region, lowest first, each
    ``(lower, upper)``; ``cl``, ``convention`` (text), ``threshold`` (the Δχ² level). A side is
    ``None`` where the profile does not cross the threshold inside the scanned range. Where the
    set has several regions (mirror minima), ``lower``/``upper`` are one of them, and the
    convention says so."""

    def __new__(cls, lower, upper, *, cl: float, convention: str, threshold: float, regions=None, best=None):
        obj = super().__new__(cls, (lower, upper))
        obj.cl, obj.convention, obj.threshold = cl, convention, threshold
        obj.regions = tuple(tuple(r) for r in (regions if regions is not None else [(lower, upper)]))
        obj.best = best
        return obj

    def __reduce__(self):
        return (_make_interval, (self[0], self[1], self.cl, self.convention, self.threshold, self.regions, self.best))

    @property
    def lower(self):
        return self[0]

    @property
    def upper(self):
        return self[1]

    def __repr__(self) -> str:
        extra = f", regions={list(self.regions)}" if len(self.regions) > 1 else ""
        return f"Interval({self[0]!r}, {self[1]!r}, cl={self.cl}{extra}, {self.convention})"


def _make_interval(lo, hi, cl, convention, threshold, regions=None, best=None):
    return Interval(lo, hi, cl=cl, convention=convention, threshold=threshold, regions=regions, best=best)


def region_containing(regions, x) -> tuple | None:
    """The region of ``regions`` (``(lower, upper)``, ``None`` = open) that contains ``x``, or None."""
    for lo, hi in regions:
        if (lo is None or lo <= x) and (hi is None or x <= hi):
            return (lo, hi)
    return None


def interval_from_profile(x, dchi2, level):
    """Where the profile crosses ``level``, by linear interpolation around its minimum.

    Returns ``(lower, upper)``; a side that does not cross inside the scanned range is ``None``.
    """
    x = np.asarray(x)
    d = np.asarray(dchi2)
    i0 = int(np.argmin(d))
    lo = hi = None
    for i in range(i0, 0, -1):
        if d[i - 1] >= level > d[i] or d[i - 1] > level >= d[i]:
            lo = float(x[i - 1] + (level - d[i - 1]) * (x[i] - x[i - 1]) / (d[i] - d[i - 1]))
            break
    for i in range(i0, len(x) - 1):
        if d[i] < level <= d[i + 1] or d[i] <= level < d[i + 1]:
            hi = float(x[i] + (level - d[i]) * (x[i + 1] - x[i]) / (d[i + 1] - d[i]))
            break
    return lo, hi


def regions_from_profile(x, dchi2, level) -> list:
    """Every interval where the profile lies below ``level`` (a list of ``[lower, upper]``, ends
    by linear interpolation, ``None`` where the region reaches the end of the scanned range): a
    profile with two minima below ``level`` (the ε^L_ee sign degeneracy) gives two regions."""
    x = np.asarray(x, dtype=float)
    d = np.asarray(dchi2, dtype=float)
    inside = d < level
    out, start, in_region = [], None, False
    for i in range(len(x)):
        if inside[i] and not in_region:
            in_region = True
            start = None if i == 0 else float(x[i - 1] + (level - d[i - 1]) * (x[i] - x[i - 1]) / (d[i] - d[i - 1]))
        if in_region and (i == len(x) - 1 or not inside[i + 1]):
            end = None if i == len(x) - 1 else float(x[i] + (level - d[i]) * (x[i + 1] - x[i]) / (d[i + 1] - d[i]))
            out.append([start, end])
            in_region = False
    return out



def crossings(x: np.ndarray, d: np.ndarray, exact=None) -> list:
    """Regions of ``x`` where ``d <= 0``. An end between an accepted and a rejected grid point is
    linearly interpolated in ``d`` where ``d`` is continuous there; where either point is marked in
    ``exact`` (a discrete problem: ``d`` jumps where acceptance changes, and no interpolation
    locates the jump) the end stays on the last accepted point. An end at the first/last grid
    point, or next to a point without a finite ``d``, stays there."""
    d = np.asarray(d, dtype=float)
    exact = np.zeros(len(d), dtype=bool) if exact is None else np.asarray(exact, dtype=bool)
    acc = d <= 0
    regions = []
    i = 0
    n = len(x)
    while i < n:
        if not acc[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and acc[j + 1]:
            j += 1
        keep_lo = i == 0 or not np.isfinite(d[i - 1]) or exact[i] or exact[i - 1]
        keep_hi = j == n - 1 or not np.isfinite(d[j + 1]) or exact[j] or exact[j + 1]
        lo = x[i] if keep_lo else x[i - 1] + (x[i] - x[i - 1]) * d[i - 1] / (d[i - 1] - d[i])
        hi = x[j] if keep_hi else x[j] + (x[j + 1] - x[j]) * d[j] / (d[j] - d[j + 1])
        regions.append((float(lo), float(hi)))
        i = j + 1
    return regions
