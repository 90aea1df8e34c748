"""Named fit parameters: defaults, bounds, fixed flags and Gaussian constraints.

Parameter *values* are a PyTree -- a plain ``dict`` of name -> scalar -- so the likelihood is a
pure function of them and ``jax.grad``/``vmap``/``jit`` compose. The *description* of the
parameters (:class:`ParameterSet`) is static, hashable metadata.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError
from ..physics.cross_section import check_mu_nu_unit

__all__ = ["Parameter", "ParameterSet", "unknown_name_message"]


def unknown_name_message(name, known, what: str = "parameter") -> str:
    """``unknown parameter 'eps_ee_l'; did you mean 'eps_ee_L'? known: ...`` (case-insensitive match first)."""
    known = tuple(known)
    lower = {k.lower(): k for k in known}
    close = [lower[str(name).lower()]] if str(name).lower() in lower else difflib.get_close_matches(str(name), known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown {what} {name!r}{hint} (known: {', '.join(known)})"


def _is_traced(v) -> bool:
    return isinstance(v, jax.core.Tracer)


def _on_device(values: dict) -> dict:
    """Host values (numpy) as device arrays, put there in one transfer, in the mapping's order
    (``device_put`` returns a dict's keys sorted). On a GPU, one eager ``jnp.asarray`` per value
    was a small program launch each (about 0.2 ms on an H100 host): the two parameter mappings a
    fit builds took 25 ms of a 0.3 s fit, 7 ms this way (``benchmarks/probes/fit_overhead_probe.py``,
    paper workload)."""
    out = jax.device_put(values)
    return {k: out[k] for k in values}


@dataclass(frozen=True)
class Parameter:
    """One fit parameter.

    ``constraint = (centre, sigma)`` declares a Gaussian auxiliary measurement of the parameter:
    a model makes it a :class:`~nuejax.model.constraints.GaussianConstraint` term
    (:func:`~nuejax.model.constraints.parameter_terms`), which adds ((value - centre)/sigma)^2 to
    -2 ln L (paper Eq. logL) and whose centre toys redraw.
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
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ParameterError(f"parameter name must be an identifier string, got {self.name!r}")
        for what in ("value", "lower", "upper"):
            v = getattr(self, what)
            if not isinstance(v, (int, float, np.floating, np.integer)) or isinstance(v, bool):
                raise ParameterError(f"parameter {self.name}: {what} must be a number, got {v!r}")
        if math.isnan(self.lower) or math.isnan(self.upper):
            raise ParameterError(f"parameter {self.name}: bounds must not be NaN, got [{self.lower}, {self.upper}]")
        if not self.lower < self.upper:
            raise ParameterError(f"parameter {self.name}: lower bound {self.lower} is not below upper bound "
                                 f"{self.upper} (reversed or equal bounds; fix the parameter instead)")
        if not math.isfinite(self.value):
            raise ParameterError(f"parameter {self.name}: value must be finite, got {self.value}")
        if not self.lower <= self.value <= self.upper:
            raise ParameterError(f"parameter {self.name}: value {self.value} outside bounds [{self.lower}, {self.upper}]")
        if self.constraint is not None:
            if not isinstance(self.constraint, (tuple, list)) or len(self.constraint) != 2:
                raise ParameterError(f"parameter {self.name}: constraint must be (centre, sigma), got {self.constraint!r}")
            c, w = (float(v) for v in self.constraint)
            if not math.isfinite(c):
                raise ParameterError(f"parameter {self.name}: constraint centre must be finite, got {c}")
            if not (math.isfinite(w) and w > 0):
                raise ParameterError(f"parameter {self.name}: constraint width must be finite and > 0, got {w}")
            object.__setattr__(self, "constraint", (c, w))  # a tuple: the set stays hashable


@dataclass(frozen=True)
class ParameterSet:
    """An ordered, immutable set of :class:`Parameter` (hashable: usable as static jit metadata)."""

    parameters: tuple

    def __post_init__(self):
        if not isinstance(self.parameters, tuple):
            object.__setattr__(self, "parameters", tuple(self.parameters))
        for p in self.parameters:
            if not isinstance(p, Parameter):
                raise ParameterError(f"ParameterSet holds Parameter objects, got {type(p).__name__}: {p!r}")
        names = [p.name for p in self.parameters]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ParameterError(f"duplicate parameter names: {sorted(dup)}")

    # -- lookup -------------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Parameter:
        for p in self.parameters:
            if p.name == name:
                return p
        raise ParameterError(unknown_name_message(name, self.names))

    def __contains__(self, name) -> bool:
        return name in self.names

    def __len__(self) -> int:
        return len(self.parameters)

    def __iter__(self):
        """The :class:`Parameter` objects, in order."""
        return iter(self.parameters)

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
        """A copy with fields of parameter ``name`` replaced (value, lower, upper, fixed, constraint);
        the new parameter is validated (:class:`~nuejax.errors.ParameterError`)."""
        self[name]
        bad = set(fields) - {"value", "lower", "upper", "fixed", "constraint", "unit", "doc"}
        if bad:
            raise ParameterError(f"parameter {name}: cannot update field(s) {sorted(bad)}")
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
        dt = np.dtype(dtype or jnp.result_type(float))
        return _on_device({p.name: np.asarray(p.value, dtype=dt) for p in self.parameters})

    def values(self, overrides: Mapping | None = None, **kw) -> dict:
        """Defaults with some values replaced: ``values({'eps_ee_L': 0.05})`` or ``values(eps_ee_L=0.05)``.

        Raises :class:`~nuejax.errors.ParameterError` for an unknown name (with the closest valid
        one), a NaN/inf value or a value outside the parameter's bounds (arrays are checked
        element by element; traced values inside ``jit`` are not checked).
        """
        dt = np.dtype(jnp.result_type(float))
        host = {p.name: np.asarray(p.value, dtype=dt) for p in self.parameters}
        arrays = {}
        for k, v in {**self.check_overrides(overrides, "value"), **kw}.items():
            self[k]
            self.check_value(k, v)
            if k == "mu_nu":  # in 1e-11 mu_B: a value like 3e-11 was meant in mu_B
                check_mu_nu_unit(v)
            if isinstance(v, (jax.Array, jax.core.Tracer)):
                arrays[k] = jnp.asarray(v, dtype=dt)  # stays where it is (or traced)
            else:
                host[k] = np.asarray(v, dtype=dt)
        dev = _on_device({k: h for k, h in host.items() if k not in arrays})
        return {p.name: arrays[p.name] if p.name in arrays else dev[p.name] for p in self.parameters}

    def check_value(self, name: str, value, what: str = "value") -> None:
        """Raise :class:`~nuejax.errors.ParameterError` if ``value`` of ``name`` is not finite or
        outside the bounds (no-op for traced values)."""
        if _is_traced(value):
            return
        p = self[name]
        try:
            v = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as err:
            raise ParameterError(f"parameter {name}: {what} {value!r} is not a number") from err
        if not np.all(np.isfinite(v)):
            raise ParameterError(f"parameter {name}: {what} {value!r} is not finite")
        if np.any(v < p.lower) or np.any(v > p.upper):
            raise ParameterError(f"parameter {name}: {what} {value!r} outside its bounds [{p.lower}, {p.upper}]")

    def bounds(self, names: Iterable[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        names = self.free_names if names is None else tuple(names)
        return (np.array([self[n].lower for n in names]), np.array([self[n].upper for n in names]))

    def check(self, params: Mapping, what: str = "value") -> None:
        """Raise :class:`~nuejax.errors.ParameterError` for an unknown name (naming the closest
        valid one), a missing parameter, or a non-finite or out-of-bound value."""
        if not isinstance(params, Mapping):
            raise ParameterError(f"parameters must be a mapping name -> value (e.g. model.parameters.values()), "
                                 f"got {type(params).__name__}")
        for k in params:
            if k not in self.names:
                raise ParameterError(unknown_name_message(k, self.names))
        for p in self.parameters:
            if p.name not in params:
                raise ParameterError(f"parameter {p.name} missing (start from model.parameters.values())")
            self.check_value(p.name, params[p.name], what)

    def check_overrides(self, overrides: Mapping | None, what: str = "start") -> dict:
        """Validate a partial mapping (starting or fixed values): known names, finite, inside bounds."""
        if overrides is None:
            return {}
        if not isinstance(overrides, Mapping):
            raise ParameterError(f"{what} values must be a mapping name -> value, got {type(overrides).__name__}")
        for k, v in overrides.items():
            if k not in self.names:
                raise ParameterError(unknown_name_message(k, self.names))
            self.check_value(k, v, what)
        return dict(overrides)

    def table(self) -> str:
        """A readable table of the parameters."""
        rows = [f"{'name':<16}{'value':>12}{'lower':>10}{'upper':>10}  {'fixed':<6}{'constraint':<20}unit"]
        for p in self.parameters:
            c = "" if p.constraint is None else f"{p.constraint[0]:g} ± {p.constraint[1]:g}"
            rows.append(f"{p.name:<16}{p.value:>12.6g}{p.lower:>10.4g}{p.upper:>10.4g}  {str(p.fixed):<6}{c:<20}{p.unit}")
        return "\n".join(rows)
