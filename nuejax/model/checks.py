"""Checks at the front door: observed counts and parameter mappings (the model protocol:
:mod:`nuejax.model.protocol`).

Every function here runs once, eagerly, on concrete values, before anything is compiled; the
jitted likelihood itself carries no checks, so the cost per call does not change.
"""

from __future__ import annotations

import warnings
from typing import Mapping

import jax
import numpy as np

from ..errors import DataError
from .parameters import ParameterSet

__all__ = ["NonIntegerCountsWarning", "check_data", "check_params", "float_array", "is_traced", "user_stacklevel"]


class NonIntegerCountsWarning(UserWarning):
    """Observed counts are not integers (the Poisson likelihood still evaluates: Asimov data and
    weighted events are legitimate, but raw data should be integer counts)."""


def is_traced(x) -> bool:
    """True for values inside ``jit``/``vmap``/``grad`` tracing (those cannot be checked)."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(x))


def check_data(data, n_obs: int | None = None, *, batch: bool = False, name: str = "data",
               warn_non_integer: bool = True, edges=None) -> np.ndarray:
    """Validate observed counts and return them as a float numpy array.

    ``batch=False``: shape (n_obs,); ``batch=True``: shape (n, n_obs) (one row per data set).
    Raises :class:`~nuejax.errors.DataError` naming the row and bin of the first bad count
    (NaN, inf, negative) or the shape that does not match; nothing is broadcast. Non-integer
    counts emit :class:`NonIntegerCountsWarning` with ``warn_non_integer`` (for raw data read from
    a file: Asimov data are non-integer on purpose, so fits do not warn). A histogram object (UHI:
    ``hist.Hist``, boost-histogram, an uproot TH1) is read with
    :func:`~nuejax.io.histograms.spectrum_from_hist`, its binning checked against ``edges`` where
    given (an InputError names the first edge that differs).
    """
    if is_traced(data):
        return data
    if hasattr(data, "values") and callable(data.values) and hasattr(data, "axes"):  # hist / UHI objects
        from ..io.histograms import spectrum_from_hist

        known = edges is not None and not is_traced(edges)  # a model inside jit has traced edges
        data = spectrum_from_hist(data, expected_edges=np.asarray(edges, dtype=float) if known else None,
                                  name=getattr(data, "name", None) or name).counts
    n = float_array(data, name, "an array of counts")
    want = 2 if batch else 1
    shape_txt = "(n_sets, n_obs)" if batch else "(n_obs,)"
    if n.ndim != want:
        raise DataError(f"{name}: expected a {want}-D array of shape {shape_txt}"
                        + (f" with n_obs = {n_obs}" if n_obs is not None else "") + f", got shape {n.shape}")
    if n_obs is not None and n.shape[-1] != n_obs:
        raise DataError(f"{name}: has {n.shape[-1]} bins, the model has {n_obs} observable bins "
                        f"(shape {n.shape}; nothing is broadcast)")
    if n.size == 0:
        raise DataError(f"{name}: is empty (shape {n.shape})")
    bad = ~np.isfinite(n) | (n < 0)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        where = f"bin {idx[-1]}" + (f" of row {idx[0]}" if batch else "")
        raise DataError(f"{name}: invalid count {n[idx]} in {where} (counts must be finite and >= 0)")
    if warn_non_integer and np.any(n != np.round(n)):
        idx = tuple(int(i) for i in np.argwhere(n != np.round(n))[0])
        warnings.warn(f"{name}: non-integer count {n[idx]:.6g} in bin {idx[-1]} (fine for Asimov or weighted "
                      "data; raw data should be integer counts)", NonIntegerCountsWarning,
                      stacklevel=user_stacklevel())
    return n


def float_array(data, name: str, what: str) -> np.ndarray:
    """``data`` as a float numpy array; :class:`~nuejax.errors.DataError` saying it cannot be read as ``what``."""
    try:
        return np.asarray(data, dtype=float)
    except (TypeError, ValueError) as err:
        raise DataError(f"{name}: cannot be read as {what} ({type(data).__name__}): {err}") from err


def user_stacklevel() -> int:
    """``stacklevel`` that points a warning at the first frame outside nuejax (the user's call),
    so that nested nuejax calls on one user line give one warning."""
    import os
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    level, frame = 1, sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(root + os.sep):
        frame = frame.f_back
        level += 1
    return level


def check_params(parameters: ParameterSet, params: Mapping, what: str = "value") -> None:
    """Full parameter mapping: known names, none missing, finite, within bounds (eager only)."""
    if is_traced(params):
        return
    parameters.check(params, what)
