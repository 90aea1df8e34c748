"""Build-time checks of binned inputs (edges, histogram entries), shared by the detector layer.

numpy only; they run once when a histogram or template is built or read, never under ``jit``.
Every failure is an :class:`~nuejax.errors.InputError` whose message starts with ``what`` (the
histogram or template, e.g. ``"response histogram '7Be_862'"``) and names the bin at fault.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError

__all__ = ["check_edges", "check_entries", "describe_edges"]


def describe_edges(edges) -> str:
    """``"440 bins [59.5, 499.5]"``: a short description of a binning, for error messages."""
    e = np.asarray(edges, dtype=float).ravel()
    if e.size < 2:
        return f"{e.size} edge(s)"
    return f"{e.size - 1} bins [{e[0]:g}, {e[-1]:g}]"


def check_edges(edges, what: str, axis: str = "") -> np.ndarray:
    """``edges`` as a float64 1-D array, checked: at least two, finite, strictly increasing.

    Raises:
        InputError: naming ``what``, the ``axis`` and the first offending edge index.
    """
    label = f"{what}: {axis + ' ' if axis else ''}bin edges"
    try:
        e = np.asarray(edges, dtype=float)
    except (TypeError, ValueError) as err:
        raise InputError(f"{label} are not numbers: {err}") from err
    if e.ndim != 1 or e.size < 2:
        raise InputError(f"{label} must be a 1-D array of at least 2 values, got shape {e.shape}")
    bad = np.nonzero(~np.isfinite(e))[0]
    if bad.size:
        raise InputError(f"{label}: edge {int(bad[0])} is {e[bad[0]]} (not finite)")
    bad = np.nonzero(np.diff(e) <= 0)[0]
    if bad.size:
        k = int(bad[0])
        raise InputError(f"{label} are not strictly increasing: edge {k + 1} = {e[k + 1]:g} "
                         f"<= edge {k} = {e[k]:g}")
    return e


def _bin(idx) -> str:
    idx = tuple(int(i) for i in idx)
    return str(idx[0]) if len(idx) == 1 else str(idx)


def check_entries(values, what: str, *, allow_empty: bool = False) -> np.ndarray:
    """``values`` as a float64 array, checked: finite, >= 0 and (unless ``allow_empty``) not all zero.

    Raises:
        InputError: naming ``what`` and the first offending bin (``(i, j)`` for 2-D).
    """
    try:
        v = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as err:
        raise InputError(f"{what}: entries are not numbers: {err}") from err
    bad = np.argwhere(~np.isfinite(v))
    if bad.size:
        raise InputError(f"{what}: entry in bin {_bin(bad[0])} is {v[tuple(bad[0])]} (not finite)")
    bad = np.argwhere(v < 0)
    if bad.size:
        raise InputError(f"{what}: negative entry {v[tuple(bad[0])]:g} in bin {_bin(bad[0])}")
    if not allow_empty and not np.any(v > 0):
        raise InputError(f"{what}: is empty (all {v.size} bins are zero)")
    return v
