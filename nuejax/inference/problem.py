"""The fit problem: a model, its data and auxiliary measurements, which parameters are fitted,
their bounds and starts, checked once and shared by every fit, scan, toy and construction.

:class:`FitProblem` owns the map between the parameter dict and the vector a minimiser works on:
``params(x, fixed)`` builds the dict from the fitted values ``x`` (names ``names``), the values set
per point ``fixed`` (names ``fixed_names``, a scan's or a construction's parameters of interest)
and every other parameter's value (``values``, in the model's parameter order: fixed values and
starts), and ``objective(x, fixed)`` is −2 ln L there
(:func:`~nuejax.model.protocol.negative_log_likelihood`, with the problem's data and auxiliary
measurements). It is a JAX PyTree: the model's arrays, the values, the data and the auxiliary
measurements are leaves (what changes per call), the names and bounds static (what a compiled
solver is specialised to), so a batch of fits is ``vmap`` over data, auxiliary measurements, fixed
values or starts (optimistix's ``fn(y, args)``: ``docs/inference.md``).

The values travel as one array, not a dict of scalars: each argument array of a compiled call
costs host time (on an H100 a mapping of 29 scalars added about 0.3 ms to a 0.46 ms value +
gradient, ``benchmarks/probes/dispatch_probe.py``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._internal.pytree import static_field
from ..errors import DataError, ParameterError
from ..model.parameters import unknown_name_message
from ..model.protocol import check_model, negative_log_likelihood

__all__ = ["FitProblem", "Pins", "flatten_aux", "pin_penalty", "unflatten_aux"]


class Pins(NamedTuple):
    """Per-point values of some fitted coordinates, given in place of ``fixed`` values
    (:meth:`FitProblem.objective`): the coordinates where ``mask`` holds are taken at ``values``
    whatever ``x`` says, and a decoupled quadratic :func:`pin_penalty` keeps the solver's Hessian
    positive definite there. A profile scan of any parameters of interest of a model is then one
    problem (the parameters of interest among the fitted ones, in the model's order) and one
    compiled program, whatever is scanned (:func:`~nuejax.inference.scan.profile_points`); the
    mask is data, not structure."""

    mask: jax.Array  # (d,) bool
    values: jax.Array  # (d,)


def pin_penalty(x, pins: Pins):
    """sum over pinned coordinates of (x - value)²: zero where x holds the pinned values."""
    return jnp.sum(jnp.where(pins.mask, (x - pins.values) ** 2, 0.0))



@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class FitProblem:
    """A checked fit problem (module docstring). Build with :meth:`create`."""

    model: object
    values: jax.Array  # (n_par,) every parameter's value, in value_names order
    data: jax.Array | None
    aux_flat: jax.Array | None  # (n_aux,) or (n_sets, n_aux): the auxiliary measurements, flat
    names: tuple = static_field()  # fitted (profiled) parameters
    fixed_names: tuple = static_field(default=())  # parameters set per point (scans, constructions)
    lower: tuple = static_field(default=())
    upper: tuple = static_field(default=())
    value_names: tuple = static_field(default=())
    aux_shapes: tuple = static_field(default=())  # the shape of each term's measurement

    @classmethod
    def create(cls, model, data, *, names=None, fixed_names=(), init: Mapping | None = None, aux=None,
               batch: bool = False, exclude=()) -> "FitProblem":
        """Check everything a fit needs, once.

        Args:
            model: a model of the protocol (:class:`~nuejax.model.protocol.AbstractModel`).
            data: counts, (n_obs,), or (n, n_obs) with ``batch``.
            names: the fitted parameters (default: the free ones, less ``fixed_names`` and ``exclude``).
            fixed_names: parameters whose values are given per point (their bounds are checked
                where the points are made).
            init: starting values of fitted parameters and values of fixed ones (scalars; with
                ``batch``, arrays of shape (n,) of fitted parameters are per-data-set starts, kept
                apart: :meth:`batch_starts`).
            aux: the auxiliary measurements (one entry per constraint term; default: nominal),
                with a leading axis n with ``batch`` if they differ per data set.
        Raises:
            ModelProtocolError: not a model. ParameterError: unknown, repeated or no fitted names,
            bad start values. DataError: bad data or auxiliary measurements (names the row, bin
            or term).
        """
        model = check_model(model)
        ps = model.parameters
        fixed_names = (fixed_names,) if isinstance(fixed_names, str) else tuple(fixed_names)
        for n in fixed_names:
            ps[n]
        if names is None:
            names = tuple(n for n in ps.free_names if n not in fixed_names and n not in exclude)
        else:
            names = (names,) if isinstance(names, str) else tuple(names)
            for n in names:
                if n not in ps.names:
                    raise ParameterError(unknown_name_message(n, ps.names))
            dup = {n for n in names if names.count(n) > 1} | (set(names) & set(fixed_names))
            if dup:
                raise ParameterError(f"parameter(s) {sorted(dup)} listed twice (fitted and fixed, or repeated)")
        if not names:
            raise ParameterError("no parameter to fit: every parameter is fixed (release some with "
                                 "model.release(...))")
        init = ps.check_overrides(init, "start")
        arrays = {k: v for k, v in init.items() if np.ndim(v) > 0}
        if arrays and not batch:
            raise ParameterError(f"start values must be scalars, got arrays for {sorted(arrays)}")
        # no NonIntegerCountsWarning here: fits see Asimov and weighted data on purpose; readers of
        # raw data files warn, naming the file (nuejax.analyses.limits.read_counts)
        counts = model.likelihood.check_data(data, batch=batch, warn_non_integer=False)
        dtype = jnp.result_type(float)
        if arrays:
            n_sets = counts.shape[0]
            for k, v in arrays.items():
                if k not in names:
                    raise ParameterError(f"per-data-set start values are for fitted parameters; {k} is not fitted")
                if np.shape(v) != (n_sets,):
                    raise ParameterError(f"start values of {k} have shape {np.shape(v)}, expected ({n_sets},)")
        host = {p.name: float(p.value) for p in ps.parameters}
        host.update({k: float(v) for k, v in init.items() if k not in arrays})
        values = jax.device_put(np.array([host[n] for n in ps.names], dtype=dtype))
        lo, hi = ps.bounds(names)
        aux, per_set = _checked_aux(model, aux, counts.shape[0] if batch else None)
        shapes = tuple(tuple(np.shape(a)) for a in model.aux())
        flat = flatten_aux(aux, shapes, counts.shape[0] if per_set else None)
        problem = cls(model, values, jnp.asarray(counts, dtype=dtype), flat, names, fixed_names,
                      tuple(float(v) for v in lo), tuple(float(v) for v in hi), ps.names, shapes)
        if model.n_obs is None:  # a user model without n_obs: at least the length must be consistent
            try:
                jax.eval_shape(lambda pr: pr.objective(pr.start(), _zeros(pr)),
                               problem.row(0) if batch else problem)
            except Exception as err:  # noqa: BLE001 - report what the model said about this data
                raise ParameterError(f"the model fails on data of shape {counts.shape[-1:]}: {err}") from err
        return problem

    # -- names <-> vectors ----------------------------------------------------------------------
    def params(self, x, fixed=()) -> dict:
        """The full parameter dict at the fitted values ``x`` and the per-point values ``fixed``
        (or :class:`Pins` of fitted coordinates)."""
        if isinstance(fixed, Pins):
            x, fixed = jnp.where(fixed.mask, fixed.values, x), ()
        # each value taken once (the same dict as filling value_names and overwriting): every
        # index is an operation to trace, and this runs in every derivative of every solver
        src = {n: (self.values, i) for i, n in enumerate(self.value_names)}
        src.update({n: (fixed, i) for i, n in enumerate(self.fixed_names)})
        src.update({n: (x, i) for i, n in enumerate(self.names)})
        return {n: a[i] for n, (a, i) in src.items()}

    def vector(self, params: Mapping, names=None):
        """The values of ``names`` (default: the fitted ones) in ``params``, stacked (last axis)."""
        names = self.names if names is None else names
        return jnp.stack([jnp.asarray(params[n]) for n in names], axis=-1)

    def value(self, name: str):
        """The problem's value of ``name`` (its start or fixed value)."""
        return self.values[self.value_names.index(name)]

    def start(self) -> jax.Array:
        """The start of the fitted parameters."""
        return jnp.stack([self.value(n) for n in self.names])

    def batch_starts(self, n: int, init: Mapping | None = None) -> jax.Array:
        """Starts (n, d): the per-data-set start arrays of ``init`` (as checked by :meth:`create`)
        where given, else :meth:`start`."""
        x0 = np.broadcast_to(np.asarray(self.start()), (n, len(self.names))).copy()
        for i, k in enumerate(self.names):
            if init is not None and k in init and np.ndim(init[k]) > 0:
                x0[:, i] = np.asarray(init[k], dtype=float)
        return jnp.asarray(x0, dtype=self.values.dtype)

    def host_params(self, x=None) -> dict:
        """Every parameter's value as Python floats, the fitted ones from ``x`` (numpy) where given."""
        host = np.asarray(jax.device_get(self.values), dtype=float)
        out = {n: float(v) for n, v in zip(self.value_names, host)}
        if x is not None:
            out.update({n: float(v) for n, v in zip(self.names, np.asarray(x, dtype=float))})
        return out

    @property
    def bounds(self) -> tuple:
        return np.asarray(self.lower), np.asarray(self.upper)

    # -- the objective --------------------------------------------------------------------------
    @property
    def aux(self) -> tuple:
        """The auxiliary measurements, one array per constraint term (from the flat ``aux_flat``)."""
        return unflatten_aux(self.aux_flat, self.aux_shapes)

    def objective(self, x, fixed=()):
        """−2 ln L at the fitted values ``x`` and per-point values ``fixed`` (no checks: pure);
        with :class:`Pins`, plus their :func:`pin_penalty` (zero at the pinned values)."""
        nll = negative_log_likelihood(self.model, self.params(x, fixed), self.data, self.aux)
        return nll + pin_penalty(x, fixed) if isinstance(fixed, Pins) else nll

    # -- derived problems -----------------------------------------------------------------------
    def with_names(self, names, fixed_names=()) -> "FitProblem":
        """The same model, data and values with other fitted and per-point parameters."""
        ps = self.model.parameters
        lo, hi = ps.bounds(tuple(names)) if names else ((), ())
        return dataclasses.replace(self, names=tuple(names), fixed_names=tuple(fixed_names),
                                   lower=tuple(float(v) for v in lo), upper=tuple(float(v) for v in hi))

    def full(self) -> "FitProblem":
        """The problem whose compiled program every fit and scan of this model shares: the model's
        free parameters and this problem's fitted and per-point ones, all fitted, in the model's
        order, none per point. A fit of some of them runs it with the others pinned
        (:meth:`held_pins`, and the per-point ones per row), so that fits and scans of different
        parameters of interest of one model compile one solver program
        (:func:`~nuejax.inference.scan.profile_points`, :func:`~nuejax.inference.fitting.multistart`)."""
        keep = set(self.names) | set(self.fixed_names) | set(self.model.parameters.free_names)
        return self.with_names(tuple(v for v in self.value_names if v in keep))

    def held_pins(self, n: int) -> Pins:
        """Pins (n rows, in the coordinates of :meth:`full`) of the coordinates this problem
        neither fits nor sets per point, at their values here; the per-point coordinates are left
        unpinned, for the caller to set."""
        wide = self.full().names
        held = [i for i, v in enumerate(wide) if v not in set(self.names) | set(self.fixed_names)]
        mask = np.zeros((n, len(wide)), dtype=bool)
        values = np.zeros((n, len(wide)))
        if held:
            host = self.host_params()
            mask[:, held] = True
            values[:, held] = [host[wide[i]] for i in held]
        return Pins(mask, values)

    def with_values(self, values: Mapping) -> "FitProblem":
        """The same problem with some parameters' values (starts, fixed values) replaced."""
        host = self.host_params()
        host.update({k: float(v) for k, v in values.items()})
        arr = jax.device_put(np.array([host[n] for n in self.value_names], dtype=self.values.dtype))
        return dataclasses.replace(self, values=arr)

    def row(self, i: int) -> "FitProblem":
        """Data set ``i`` of a batch problem (its auxiliary measurements too, where batched)."""
        aux = self.aux_flat[i] if self.aux_batched else self.aux_flat
        return dataclasses.replace(self, data=self.data[i], aux_flat=aux)

    @property
    def aux_batched(self) -> bool:
        """Whether the auxiliary measurements have a leading data-set axis (a batch of toys)."""
        return self.aux_flat is not None and self.aux_flat.ndim == 2


def flatten_aux(aux, shapes: tuple, n_sets: int | None = None) -> jax.Array:
    """The auxiliary measurements (one array per term, of ``shapes``, each with a leading axis
    ``n_sets`` where given) as one flat array, (n_aux,) or (n_sets, n_aux)."""
    lead = () if n_sets is None else (n_sets,)
    parts = [jnp.reshape(jnp.asarray(a), lead + (-1,)) for a in aux]
    if not parts:
        return jnp.zeros(lead + (0,), dtype=jnp.result_type(float))
    if n_sets is not None:
        parts = [jnp.broadcast_to(p, (n_sets, p.shape[-1])) if p.shape[0] != n_sets else p for p in parts]
    return jnp.concatenate(parts, axis=-1)


def unflatten_aux(flat, shapes: tuple) -> tuple:
    """The inverse of :func:`flatten_aux` for one data set: one array per term."""
    if flat is None:
        return None
    out, at = [], 0
    for shape in shapes:
        k = int(np.prod(shape, dtype=int))
        out.append(jnp.reshape(flat[..., at:at + k], flat.shape[:-1] + tuple(shape)))
        at += k
    return tuple(out)


def _zeros(problem) -> jax.Array:
    return jnp.zeros(len(problem.fixed_names), dtype=problem.values.dtype)


def _checked_aux(model, aux, n_sets: int | None):
    """The auxiliary measurements as a tuple of arrays (nominal when None), checked against the
    model's terms, and whether they are per data set: with ``n_sets``, an entry may have a
    leading axis of that length (then every entry gets one)."""
    nominal = model.aux()
    if aux is None:
        return tuple(jnp.asarray(a) for a in nominal), False
    if not isinstance(aux, (tuple, list)) or len(aux) != len(nominal):
        raise DataError(f"aux must be a tuple of {len(nominal)} auxiliary measurements (one per constraint term, in "
                        "the order of model.constraint_terms())")
    out = []
    terms = model.constraint_terms()
    for term, a, nom in zip(terms, aux, nominal):
        arr = np.asarray(a, dtype=float)
        shapes = [np.shape(nom)] + ([(n_sets,) + np.shape(nom)] if n_sets is not None else [])
        if arr.shape not in shapes:
            raise DataError(f"aux of [{term.describe()}]: shape {arr.shape}, expected one of {shapes}")
        if not np.all(np.isfinite(arr)):
            raise DataError(f"aux of [{term.describe()}]: not finite")
        out.append(jnp.asarray(arr, dtype=jnp.result_type(float)))
    if n_sets is not None:
        batched = [np.ndim(a) == np.ndim(n) + 1 for a, n in zip(out, nominal)]
        if any(batched):
            # one leading axis for all, so that a batch maps over them together
            out = [a if b else jnp.broadcast_to(a, (n_sets,) + a.shape) for a, b in zip(out, batched)]
        else:
            return tuple(out), False
        return tuple(out), True
    return tuple(out), False
