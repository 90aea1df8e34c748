"""Checks at the front door: observed counts, parameter mappings and the model protocol.

Every function here runs once, eagerly, on concrete values, before anything is compiled; the
jitted likelihood itself carries no checks, so the cost per call does not change.
"""

from __future__ import annotations

import warnings
from typing import Mapping

import jax
import numpy as np

from ..errors import DataError, ModelProtocolError
from .parameters import ParameterSet

__all__ = ["NonIntegerCountsWarning", "check_data", "check_model", "check_params", "is_traced", "model_n_obs"]


class NonIntegerCountsWarning(UserWarning):
    """Observed counts are not integers (the Poisson likelihood still evaluates: Asimov data and
    weighted events are legitimate, but raw data should be integer counts)."""


def is_traced(x) -> bool:
    """True for values inside ``jit``/``vmap``/``grad`` tracing (those cannot be checked)."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(x))


def check_data(data, n_obs: int | None = None, *, batch: bool = False, name: str = "data",
               warn_non_integer: bool = True) -> np.ndarray:
    """Validate observed counts and return them as a float numpy array.

    ``batch=False``: shape (n_obs,); ``batch=True``: shape (n, n_obs) (one row per data set).
    Raises :class:`~nuejax.errors.DataError` naming the row and bin of the first bad count
    (NaN, inf, negative) or the shape that does not match; nothing is broadcast. Non-integer
    counts emit :class:`NonIntegerCountsWarning` (Asimov data are non-integer on purpose).
    """
    if is_traced(data):
        return data
    if hasattr(data, "values") and callable(data.values) and hasattr(data, "axes"):  # hist / UHI objects
        data = data.values()
    try:
        n = np.asarray(data, dtype=float)
    except (TypeError, ValueError) as err:
        raise DataError(f"{name}: cannot be read as an array of counts ({type(data).__name__}): {err}") from err
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


class _StaticModel:
    """A model that is not a JAX PyTree, carried through ``jit`` as static (identity-hashed)
    metadata: its arrays become compile-time constants (register it as a PyTree to avoid that)."""

    def __init__(self, model):
        self.model = model

    def __hash__(self):
        return id(self.model)

    def __eq__(self, other):
        return isinstance(other, _StaticModel) and other.model is self.model

    def __getattr__(self, name):
        if name == "model":
            raise AttributeError(name)
        return getattr(self.model, name)


# the wrapper itself is the metadata: JAX compares it by identity, never with the model's own __eq__
jax.tree_util.register_pytree_node(_StaticModel, lambda m: ((), m), lambda aux, _: aux)


def check_model(model):
    """The model protocol of :mod:`nuejax.inference`: an object with ``.parameters`` (a
    :class:`~nuejax.model.ParameterSet`) and a jax-traceable ``.nll(params, data)``; ``n_obs``
    is optional (used to check the data's length). Raises
    :class:`~nuejax.errors.ModelProtocolError` saying what is missing. A model that is not a
    JAX PyTree is wrapped so that it can pass through ``jit`` as static metadata.
    """
    if isinstance(model, _StaticModel):
        return model
    missing = [a for a in ("parameters", "nll") if not hasattr(model, a)]
    if missing:
        raise ModelProtocolError(f"{type(model).__name__} is not a nuejax model: it lacks {', '.join(missing)} "
                                 "(a model needs .parameters, a ParameterSet, and .nll(params, data) -> -2 ln L)")
    if not isinstance(model.parameters, ParameterSet):
        raise ModelProtocolError(f"{type(model).__name__}.parameters must be a nuejax ParameterSet, "
                                 f"got {type(model.parameters).__name__}")
    if not callable(model.nll):
        raise ModelProtocolError(f"{type(model).__name__}.nll must be callable as nll(params, data)")
    leaves = jax.tree_util.tree_leaves(model)
    if len(leaves) == 1 and leaves[0] is model:  # not a registered PyTree
        return _StaticModel(model)
    return model


def model_n_obs(model) -> int | None:
    n = getattr(model, "n_obs", None)
    return None if n is None else int(n)


def check_params(parameters: ParameterSet, params: Mapping, what: str = "value") -> None:
    """Full parameter mapping: known names, none missing, finite, within bounds (eager only)."""
    if is_traced(params):
        return
    parameters.check(params, what)
