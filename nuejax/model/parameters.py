"""Named fit parameters: defaults, bounds, fixed flags and Gaussian constraints.

Parameter *values* are a PyTree -- a plain ``dict`` of name -> scalar -- so the likelihood is a
pure function of them and ``jax.grad``/``vmap``/``jit`` compose. The *description* of the
parameters (:class:`ParameterSet`) is static, hashable metadata.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

import jax.numpy as jnp
import numpy as np

__all__ = ["Parameter", "ParameterSet"]


@dataclass(frozen=True)
class Parameter:
    """One fit parameter.

    ``constraint = (centre, sigma)`` adds the Gaussian pull ((value - centre)/sigma)^2 to
    -2 ln L (paper Eq. logL).
    """

    name: str
    value: float
    lower: float = -math.inf
    upper: float = math.inf
    fixed: bool = False
    constraint: tuple | None = None
    unit: str = ""
    doc: str = ""

    def __post_init__(self):
        if not self.lower <= self.value <= self.upper:
            raise ValueError(f"parameter {self.name}: default {self.value} outside bounds [{self.lower}, {self.upper}]")
        if self.constraint is not None and not self.constraint[1] > 0:
            raise ValueError(f"parameter {self.name}: constraint width must be > 0, got {self.constraint[1]}")


@dataclass(frozen=True)
class ParameterSet:
    """An ordered, immutable set of :class:`Parameter` (hashable: usable as static jit metadata)."""

    parameters: tuple

    def __post_init__(self):
        names = [p.name for p in self.parameters]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"duplicate parameter names: {sorted(dup)}")

    # -- lookup -------------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Parameter:
        for p in self.parameters:
            if p.name == name:
                return p
        raise KeyError(f"unknown parameter {name!r}; known: {', '.join(self.names)}")

    def __contains__(self, name) -> bool:
        return name in self.names

    def __len__(self) -> int:
        return len(self.parameters)

    @property
    def names(self) -> tuple:
        return tuple(p.name for p in self.parameters)

    @property
    def free_names(self) -> tuple:
        return tuple(p.name for p in self.parameters if not p.fixed)

    @property
    def constrained_names(self) -> tuple:
        return tuple(p.name for p in self.parameters if p.constraint is not None)

    # -- modification (returns new sets) --------------------------------------------------------
    def update(self, name: str, **fields) -> "ParameterSet":
        """A copy with fields of parameter ``name`` replaced (value, lower, upper, fixed, constraint)."""
        self[name]
        return ParameterSet(tuple(replace(p, **fields) if p.name == name else p for p in self.parameters))

    def fix(self, *names: str, **values) -> "ParameterSet":
        """Fix ``names`` (at their defaults) and ``name=value`` pairs (at that value)."""
        out = self
        for n in names:
            out = out.update(n, fixed=True)
        for n, v in values.items():
            out = out.update(n, fixed=True, value=float(v))
        return out

    def release(self, *names: str) -> "ParameterSet":
        out = self
        for n in names:
            out = out.update(n, fixed=False)
        return out

    # -- values ---------------------------------------------------------------------------------
    def defaults(self, dtype=None) -> dict:
        """Default values as the parameter PyTree (dict of 0-d arrays)."""
        return {p.name: jnp.asarray(p.value, dtype=dtype or jnp.result_type(float)) for p in self.parameters}

    def values(self, overrides: Mapping | None = None, **kw) -> dict:
        """Defaults with some values replaced: ``values({'eps_ee_L': 0.05})`` or ``values(eps_ee_L=0.05)``."""
        out = self.defaults()
        for k, v in {**(overrides or {}), **kw}.items():
            self[k]
            out[k] = jnp.asarray(v, dtype=out[k].dtype)
        return out

    def free_vector(self, params: Mapping) -> jnp.ndarray:
        """The free parameters' values, in order, as a 1-D array."""
        return jnp.stack([jnp.asarray(params[n]) for n in self.free_names])

    def from_free_vector(self, x, base: Mapping | None = None) -> dict:
        """Parameter PyTree with the free parameters taken from ``x`` (fixed ones from ``base`` or defaults)."""
        out = dict(self.defaults() if base is None else base)
        for i, n in enumerate(self.free_names):
            out[n] = x[..., i]
        return out

    def bounds(self, names: Iterable[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        names = self.free_names if names is None else tuple(names)
        return (np.array([self[n].lower for n in names]), np.array([self[n].upper for n in names]))

    def check(self, params: Mapping) -> None:
        """Raise ``ValueError`` naming any parameter that is missing, non-finite or out of bounds."""
        for p in self.parameters:
            if p.name not in params:
                raise ValueError(f"parameter {p.name} missing")
            v = np.asarray(params[p.name])
            if not np.all(np.isfinite(v)):
                raise ValueError(f"parameter {p.name} is not finite: {v}")
            if np.any(v < p.lower) or np.any(v > p.upper):
                raise ValueError(f"parameter {p.name} = {v} outside its bounds [{p.lower}, {p.upper}]")
        extra = set(params) - set(self.names)
        if extra:
            raise ValueError(f"unknown parameter(s) {sorted(extra)}")

    def pulls(self, params: Mapping):
        """Sum of Gaussian constraint terms ((value - centre)/sigma)^2 (paper Eq. logL)."""
        total = jnp.zeros((), dtype=jnp.result_type(float))
        for p in self.parameters:
            if p.constraint is not None:
                c, s = p.constraint
                total = total + ((params[p.name] - c) / s) ** 2
        return total

    def table(self) -> str:
        """A readable table of the parameters."""
        rows = [f"{'name':<16}{'value':>12}{'lower':>10}{'upper':>10}  {'fixed':<6}{'constraint':<20}unit"]
        for p in self.parameters:
            c = "" if p.constraint is None else f"{p.constraint[0]:g} ± {p.constraint[1]:g}"
            rows.append(f"{p.name:<16}{p.value:>12.6g}{p.lower:>10.4g}{p.upper:>10.4g}  {str(p.fixed):<6}{c:<20}{p.unit}")
        return "\n".join(rows)
