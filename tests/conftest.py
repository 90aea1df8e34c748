"""Tests run in float64: opt in explicitly, as users must (see nuejax.precision)."""
import nuejax

nuejax.enable_x64()
