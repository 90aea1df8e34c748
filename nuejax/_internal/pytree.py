"""Helpers for the frozen dataclasses that are JAX PyTrees (``jax.tree_util.register_dataclass``)."""

from dataclasses import field

__all__ = ["static_field"]


def static_field(**kw):
    """A dataclass field that is static PyTree metadata (names, flags, shapes: hashed into the
    compiled code's cache key), not a leaf (arrays: what changes per call)."""
    return field(metadata=dict(static=True), **kw)
