"""Observed spectra from histogram objects: UHI histograms (``hist``, ``boost-histogram``, uproot
TH1), ``np.histogram`` output and TH1s in ROOT files, as :class:`~nuejax.io.borexino.ObservedSpectrum`.

``hist`` is never imported here: any object that follows the UHI ``PlottableHistogram`` protocol
(``.axes`` and ``.values()``) is accepted.

Every problem is an :class:`~nuejax.errors.InputError` (a ``ValueError``) naming the histogram,
the bin or edge at fault and the problem; problems with a ROOT file are
:class:`~nuejax.io.root.RootInputError` naming the file and key.
"""

from __future__ import annotations

import numpy as np

from ..detector.checks import check_edges
from ..errors import InputError
from .borexino import ObservedSpectrum
from .root import RootInputError, read_th1

__all__ = ["read_spectrum_th1", "spectrum_from_hist"]


def _axis_edges(axis, what):
    """Edges of a UHI axis: ``axis.edges`` (an array, or a method as on uproot's TAxis), else the
    protocol's ``len(axis)`` and ``axis[i] -> (lo, hi)``."""
    traits = getattr(axis, "traits", None)
    if traits is not None and getattr(traits, "discrete", False):
        raise InputError(f"{what}: the axis is categorical (discrete); an observed spectrum needs a "
                         f"regular or variable numeric binning")
    edges = getattr(axis, "edges", None)
    try:
        if callable(edges):
            edges = edges()
        if edges is None:
            bounds = np.asarray([axis[i] for i in range(len(axis))], dtype=float)
            if bounds.ndim != 2 or bounds.shape[1] != 2 or bounds.shape[0] < 1:
                raise InputError(f"{what}: the axis does not give (lower, upper) bin bounds")
            gaps = np.nonzero(bounds[1:, 0] != bounds[:-1, 1])[0]
            if gaps.size:
                i = gaps[0]
                raise InputError(f"{what}: bins {i} and {i + 1} do not touch: bin {i} ends at "
                                 f"{bounds[i, 1]:g}, bin {i + 1} starts at {bounds[i + 1, 0]:g}")
            edges = np.concatenate([bounds[:, 0], bounds[-1:, 1]])
        return np.asarray(edges, dtype=float)
    except InputError:
        raise
    except Exception as err:
        raise InputError(f"{what}: cannot read the bin edges of the axis ({type(err).__name__}: {err})") from err


def _check_counts(counts, edges, what):
    n = edges.size - 1
    if counts.shape != (n,):
        raise InputError(f"{what}: {counts.shape} values do not match the {n} bins of the edges (a 1-D "
                         f"histogram of {n} bins needs {n} values)")
    bad = np.nonzero(~np.isfinite(counts) | (counts < 0))[0]
    if bad.size:
        i = bad[0]
        raise InputError(f"{what}: bin {i} [{edges[i]:g}, {edges[i + 1]:g}] holds {counts[i]:g}; counts "
                         f"must be finite and >= 0")


def _match_edges(edges, expected, what, error=InputError):
    """Raise ``error`` unless ``edges`` equal ``expected`` (same bins, edges to 1e-9 relative)."""
    expected = np.asarray(expected, dtype=float)
    if expected.ndim != 1 or expected.size < 2:
        raise InputError(f"{what}: expected_edges must be 1-D with at least 2 values, got shape {expected.shape}")
    hint = ("; use ObservedSpectrum.rebin(k) or .select(lo, hi) (from spectrum_from_hist without "
            "expected_edges) to bring it to the expected binning")
    if edges.size != expected.size:
        raise error(f"{what}: binning does not match: {edges.size - 1} bins [{edges[0]:g}, {edges[-1]:g}], "
                    f"expected {expected.size - 1} bins [{expected[0]:g}, {expected[-1]:g}]{hint}")
    differ = np.nonzero(~np.isclose(edges, expected, rtol=1e-9, atol=1e-12))[0]
    if differ.size:
        i = differ[0]
        raise error(f"{what}: binning does not match: edge {i} is {float(edges[i])!r}, expected {float(expected[i])!r} "
                    f"(first of {differ.size} differing edges; compared to 1e-9 relative){hint}")


def spectrum_from_hist(obj, *, expected_edges=None, name: str | None = None) -> ObservedSpectrum:
    """An :class:`~nuejax.io.borexino.ObservedSpectrum` from a 1-D histogram.

    Args:
        obj: a UHI ``PlottableHistogram`` -- anything with ``.axes`` (whose ``axes[0]`` has
            ``.edges``, as an array or a method, or follows the UHI axis protocol) and
            ``.values()``, e.g. a ``hist.Hist``, a ``boost_histogram.Histogram`` or an uproot TH1
            (flow bins are not used); or a tuple ``(counts, edges)`` as ``np.histogram`` returns.
        expected_edges: if given, the histogram's binning must be this one: the same number of
            bins, every edge equal to 1e-9 relative.
        name: the spectrum's ``source``; default the histogram's ``name`` attribute, if any, else
            its type.

    Raises:
        InputError: ``obj`` is neither a histogram nor a ``(counts, edges)`` pair; a histogram
            that is not 1-D or has a categorical axis; edges not finite and strictly increasing;
            values whose number does not match the bins; a NaN, infinite or negative value (names
            the bin, 0-based, and its edges); a binning other than ``expected_edges`` (names the
            first differing edge and both values).
    """
    if isinstance(obj, tuple) and len(obj) == 2:
        source = name or "(counts, edges)"
        what = f"histogram {source!r}"
        try:
            counts = np.asarray(obj[0], dtype=float)
            edges = np.asarray(obj[1], dtype=float)
        except (TypeError, ValueError) as err:
            raise InputError(f"{what}: (counts, edges) must be arrays of numbers ({err})") from err
    elif hasattr(obj, "axes") and hasattr(obj, "values"):
        source = name or getattr(obj, "name", None) or type(obj).__name__
        what = f"histogram {source!r}"
        try:
            axes = list(obj.axes)
        except Exception as err:
            raise InputError(f"{what}: cannot read its axes ({type(err).__name__}: {err})") from err
        if len(axes) != 1:
            raise InputError(f"{what}: is {len(axes)}-dimensional, expected a 1-D histogram")
        edges = _axis_edges(axes[0], what)
        try:
            counts = np.asarray(obj.values(), dtype=float)
        except Exception as err:
            raise InputError(f"{what}: cannot read its values ({type(err).__name__}: {err})") from err
    else:
        raise InputError(f"expected a 1-D histogram (an object with .axes and .values(), e.g. hist.Hist "
                         f"or an uproot TH1) or a (counts, edges) tuple, got {type(obj).__name__}")
    check_edges(edges, what)
    _check_counts(counts, edges, what)
    if expected_edges is not None:
        _match_edges(edges, expected_edges, what)
    return ObservedSpectrum(edges, counts, source=str(source))


def read_spectrum_th1(path, key, *, expected_edges=None) -> ObservedSpectrum:
    """An :class:`~nuejax.io.borexino.ObservedSpectrum` from the TH1 ``key`` of a ROOT file, read with
    :func:`~nuejax.io.root.read_th1` (no under/overflow); ``source`` is ``"path:key"``.

    An all-zero histogram is accepted (zero observed events is valid data).

    Raises:
        FileNotFoundError: no file at ``path``.
        RootInputError: as :func:`~nuejax.io.root.read_th1` (not ROOT, damaged, no ``key``, not a
            TH1, bad binning, NaN, infinite or negative content); a binning other than
            ``expected_edges`` (names the file, key, the first differing edge and both values).
    """
    values, edges = read_th1(path, key, allow_empty=True)
    source = f"{path}:{key}"
    if expected_edges is not None:
        _match_edges(edges, expected_edges, source, error=RootInputError)
    return ObservedSpectrum(edges, values, source=source)
