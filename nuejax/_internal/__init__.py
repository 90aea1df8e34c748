"""Internals shared by several layers of nuejax (no public API; import from the submodules)."""

__all__ = []
