"""Floating-point precision policy.

nuejax computes in double precision by default: the reweighting closure (paper Sec. VI.A) and
likelihood differences of O(1) on top of -2 ln L ~ 1e4 need ~1e-12 relative accuracy, which
float32 cannot give. JAX, however, runs in float32 unless ``jax_enable_x64`` is set, and that
flag is process-wide. nuejax never flips it behind your back at import time; instead:

* call :func:`enable_x64` (or set the environment variable ``JAX_ENABLE_X64=1``) once, before
  building anything, to opt in to float64 -- the command-line tool does this for you;
* every builder that creates fixed tensors takes a ``dtype`` argument (default float64) and
  calls :func:`resolve_dtype`, which raises :class:`PrecisionError` if float64 is requested
  while JAX is in float32 mode, instead of silently truncating;
* float32 is a supported, explicit choice (``dtype=jnp.float32``) whose error is measured in
  ``docs/benchmarks.md``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["PrecisionError", "enable_x64", "x64_enabled", "resolve_dtype"]


class PrecisionError(RuntimeError):
    """Requested precision is not available in the current JAX configuration."""


def enable_x64() -> None:
    """Switch JAX to 64-bit mode (process-wide ``jax_enable_x64``); call before building models."""
    jax.config.update("jax_enable_x64", True)


def x64_enabled() -> bool:
    """True when JAX creates float64 arrays."""
    return bool(jax.config.jax_enable_x64)


def resolve_dtype(dtype=None) -> np.dtype:
    """Return the numpy dtype to build with, failing loudly on a precision mismatch.

    ``None`` means float64. Asking for float64 while JAX is in 32-bit mode raises
    :class:`PrecisionError` rather than letting JAX downcast silently.
    """
    dt = np.dtype(np.float64 if dtype is None else dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise PrecisionError(f"nuejax supports float32 and float64, not {dt}")
    if dt == np.float64 and not x64_enabled():
        raise PrecisionError(
            "nuejax needs float64 but JAX is in 32-bit mode. Call nuejax.enable_x64() "
            "(or set JAX_ENABLE_X64=1) before building, or pass dtype=jnp.float32 explicitly."
        )
    return dt


def as_array(x, dtype) -> jax.Array:
    """``jnp.asarray`` with the resolved dtype (helper for builders)."""
    return jnp.asarray(x, dtype=resolve_dtype(dtype))
