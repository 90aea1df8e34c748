"""Validation against the paper: the closure test and injection-recovery (``docs/validation.md``)."""

__all__ = []
