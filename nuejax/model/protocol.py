r"""The model protocol: what every nuejax model is, and −2 ln L written once for all of them.

A model is an :class:`AbstractModel`:

* ``parameters`` -- a :class:`~nuejax.model.parameters.ParameterSet` (names, defaults, bounds,
  fixed flags; a parameter's ``constraint=(centre, sigma)`` is a Gaussian constraint term);
* ``expected(params)`` -- the expected counts per bin, a pure, jax-traceable function of the
  parameter dict (the one method a user model writes);
* ``constraints`` -- a tuple of constraint terms (:mod:`nuejax.model.constraints`; empty by
  default, never missing);
* ``likelihood`` -- the likelihood stage (:class:`~nuejax.model.likelihood.BinnedPoisson` by
  default);
* ``baked`` -- the :class:`~nuejax.model.parameters.Parameter` s fixed into the model's tensors
  (a fast path's oscillation parameters, their ``value`` the baked one): not parameters of the
  model any more, but their constraints stay terms, evaluated at these values, so −2 ln L equals
  the model's they were baked from.

Everything else is derived, once, here (final: a subclass does not redefine ``nll``):

.. math::
    -2\ln L(\theta; n, a) = \mathcal L\big(\mu(\theta), n\big) + \sum_k C_k(\theta; a_k),

the likelihood stage :math:`\mathcal L` (binned Poisson: paper Eq. logL) of the data :math:`n`
given ``expected`` :math:`\mu`, plus every constraint term :math:`C_k` (``constraint_terms()``:
the parameters' Gaussian constraints, then ``constraints``) with its auxiliary measurement
:math:`a_k` passed as data (``aux``; default: the nominal measurements, ``aux()``). A toy is
``(counts, aux)`` drawn together (:meth:`AbstractModel.draw_toy`).

Called eagerly, ``nll`` and a :class:`~nuejax.model.pipeline.Model`'s ``expected`` check their
inputs (unknown or missing parameter names with the closest valid one, NaN or out-of-bound
values, the data's shape and counts, the auxiliary measurements) and raise
:class:`~nuejax.errors.InputError`; inside ``jit``/``vmap``/``grad`` they check nothing, so
compiled code pays nothing. A model that is a registered JAX PyTree passes its arrays to compiled
functions as arguments; any other object is carried as static metadata (its arrays become
compile-time constants).
"""

from __future__ import annotations

import abc
import dataclasses
import jax
import numpy as np

from ..errors import DataError, ModelProtocolError, ParameterError
from .checks import check_params, is_traced
from .constraints import constraint_total, parameter_terms, sample_aux
from .likelihood import BinnedPoisson
from .parameters import ParameterSet
from .physics_params import NEW_PHYSICS_NAMES, physics_symmetries

__all__ = ["AbstractModel", "nll", "negative_log_likelihood", "check_model", "as_pytree"]


def negative_log_likelihood(model, params, data, aux=None):
    """−2 ln L of ``model`` (module docstring): the likelihood stage of ``data`` given
    ``model.expected(params)``, plus every constraint term with its auxiliary measurement from
    ``aux`` (None: the nominal ones). Pure; :func:`nll` is its jitted form."""
    return model.likelihood(model.expected(params), data) + model.constraint_nll(params, aux)


#: :func:`negative_log_likelihood`, jit-compiled (the model an argument: its arrays are buffers).
nll = jax.jit(negative_log_likelihood)


class AbstractModel(abc.ABC):
    """The model protocol (module docstring). Subclass it, give it ``parameters`` (and, if any,
    ``constraints``), write ``expected``; make it a registered PyTree (e.g. a frozen dataclass
    with ``jax.tree_util.register_dataclass``) so that its arrays stay device buffers.

    Example: a one-bin counting experiment with a known background ``b`` and a signal ``mu``::

        @jax.tree_util.register_dataclass
        @dataclasses.dataclass(frozen=True)
        class Counting(AbstractModel):
            b: jax.Array
            parameters: ParameterSet = dataclasses.field(metadata=dict(static=True))

            def expected(self, p):
                return jnp.atleast_1d(self.b + p["mu"])
    """

    #: constraint terms beyond the parameters' own Gaussian constraints (never missing)
    constraints: tuple = ()
    #: the likelihood stage
    likelihood = BinnedPoisson()
    #: the Parameters fixed into the model's tensors (their values the baked ones)
    baked: tuple = ()

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if "nll" in cls.__dict__:
            raise TypeError(f"{cls.__name__} redefines nll: -2 ln L is defined once, by AbstractModel (the "
                            "likelihood stage plus the constraint terms); write expected() and choose a likelihood "
                            "stage instead")

    @abc.abstractmethod
    def expected(self, params):
        """Expected counts per bin at the parameter dict ``params``."""

    # -- derived: constraints and auxiliary measurements ----------------------------------------
    @property
    def n_obs(self) -> int | None:
        """Bins of the expectation, where the likelihood stage knows them."""
        return getattr(self.likelihood, "n_obs", None)

    def constraint_terms(self) -> tuple:
        """Every constraint term: the parameters' Gaussian constraints
        (:func:`~nuejax.model.constraints.parameter_terms`), the baked parameters' ones, then
        ``constraints``; ``aux`` has one entry per term, in this order."""
        baked = parameter_terms(ParameterSet(tuple(self.baked))) if self.baked else ()
        return parameter_terms(self.parameters) + baked + tuple(self.constraints)

    def baked_values(self) -> dict:
        """``{name: value}`` of the baked parameters."""
        return {p.name: p.value for p in self.baked}

    def aux(self) -> tuple:
        """The nominal auxiliary measurements, one entry per term of :meth:`constraint_terms`."""
        return tuple(t.nominal() for t in self.constraint_terms())

    def asimov_aux(self, params) -> tuple:
        """The auxiliary measurements of an Asimov data set at ``params`` (each term's ``asimov``)."""
        p = {**self.baked_values(), **params}
        return tuple(t.asimov(p) for t in self.constraint_terms())

    def constraint_nll(self, params, aux=None):
        """The constraint terms' part of −2 ln L at ``params`` with the measurements ``aux``."""
        return constraint_total(self.constraint_terms(), {**self.baked_values(), **params}, aux)

    # -- what a multi-start design needs (nuejax.inference.starts) ------------------------------
    def parameters_of_interest(self) -> tuple:
        """The free parameters over whose box a multi-start design spreads its starts: the free
        new-physics parameters (:data:`~nuejax.model.physics_params.NEW_PHYSICS_NAMES`). A user
        model with other parameters of interest overrides it."""
        return tuple(n for n in self.parameters.free_names if n in NEW_PHYSICS_NAMES)

    def symmetries(self) -> tuple:
        """Maps ``{name: value} -> {name: new value}`` under which −2 ln L is (nearly) symmetric:
        where it has mirror minima, a multi-start design starts at the images of its start
        (:func:`~nuejax.model.physics_params.physics_symmetries`). A user model overrides it."""
        return physics_symmetries(self.parameters.names)

    # -- the likelihood -------------------------------------------------------------------------
    def nll(self, params, data, aux=None):
        """−2 ln L (module docstring); checked front door when called eagerly."""
        self._check_call(params, data, aux)
        return nll(as_pytree(self), params, data, aux)

    def _check_call(self, params, data=None, aux=None) -> None:
        check_params(self.parameters, params)
        if data is not None and not is_traced(data):
            # one data set, (n_obs,): nothing is broadcast (batch_fit fits several)
            self.likelihood.check_data(data, warn_non_integer=False)
        if aux is not None and not is_traced(aux):
            self.check_aux(aux)

    def check_aux(self, aux) -> None:
        """Raise :class:`~nuejax.errors.InputError` naming the term whose auxiliary measurement
        has the wrong shape or is not finite (one entry per term of :meth:`constraint_terms`)."""
        terms = self.constraint_terms()
        if not isinstance(aux, (tuple, list)) or len(aux) != len(terms):
            raise DataError(f"aux must be a tuple of {len(terms)} auxiliary measurements (one per constraint term, "
                            f"in the order of constraint_terms()), got {type(aux).__name__}"
                            + (f" of length {len(aux)}" if isinstance(aux, (tuple, list)) else ""))
        for term, a, nominal in zip(terms, aux, self.aux()):
            a = np.asarray(a, dtype=float)
            if a.shape != np.shape(nominal):
                raise DataError(f"aux of [{term.describe()}]: shape {a.shape}, expected {np.shape(nominal)}")
            if not np.all(np.isfinite(a)):
                raise DataError(f"aux of [{term.describe()}]: not finite ({a.tolist()})")

    def check(self, params, data) -> None:
        """Eager validation: parameters in bounds, data valid, expectation > 0 wherever data > 0
        (names the bin)."""
        self.parameters.check(params)
        n = self.likelihood.check_data(data, warn_non_integer=False)
        self.likelihood.check_expected(self.expected(params), n)

    # -- values, data and toys ------------------------------------------------------------------
    def defaults(self) -> dict:
        return self.parameters.defaults()

    def with_parameters(self, parameters: ParameterSet):
        """The same model with a different parameter description (e.g. after ``fix``/``release``);
        the names must stay the same."""
        if not isinstance(parameters, ParameterSet):
            raise ParameterError(f"with_parameters takes a ParameterSet, got {type(parameters).__name__}")
        missing = set(self.parameters.names) - set(parameters.names)
        if missing:
            raise ParameterError(f"parameter set lacks {sorted(missing)}")
        extra = set(parameters.names) - set(self.parameters.names)
        if extra:
            raise ParameterError(f"parameter set has parameter(s) {sorted(extra)} that the model does not read")
        return dataclasses.replace(self, parameters=parameters)

    def release(self, *names: str):
        """The same model with ``names`` free: ``model.release("mu_nu")`` is
        ``model.with_parameters(model.parameters.release("mu_nu"))``."""
        return self.with_parameters(self.parameters.release(*names))

    def fix(self, *names: str, **values):
        """The same model with ``names`` fixed at their defaults and ``name=value`` pairs fixed at
        that value (:meth:`~nuejax.model.parameters.ParameterSet.fix`)."""
        return self.with_parameters(self.parameters.fix(*names, **values))

    def asimov(self, params=None):
        """Asimov data set at ``params`` (default: the defaults): the expected counts (binned), or
        the likelihood stage's form of them (:meth:`~nuejax.model.likelihood.UnbinnedPoisson.asimov_data`)."""
        return self.likelihood.asimov_data(self.expected(self.defaults() if params is None else params))

    def pseudo_data(self, key, params=None, n_toys: int | None = None):
        """Poisson pseudo-data from ``params``: shape (n_obs,) or (n_toys, n_obs) (counts only; toys
        with their auxiliary measurements: :meth:`draw_toy`)."""
        mu = self.expected(self.defaults() if params is None else params)
        lead = () if n_toys is None else (n_toys,)
        return self.likelihood.sample(key, mu, lead, parts=self.likelihood.toy_parts(mu))

    def resampled(self, fitted) -> tuple:
        """Which constraint terms a toy redraws when the parameters ``fitted`` are fitted: those on
        a fitted parameter (a term on fixed parameters is a constant of every fit). Raises
        :class:`~nuejax.errors.InputError` for such a term that has no measurement to redraw
        (half-Gaussian bound, penalty)."""
        from ..errors import InputError

        fitted = set(fitted)
        out = []
        for term in self.constraint_terms():
            on = bool(set(term.names) & fitted)
            if on and not term.resamplable:
                raise InputError(f"toys: the constraint term [{term.describe()}] has no auxiliary measurement to "
                                 "redraw (only Gaussian and log-normal terms do); pass resample_aux=False to keep "
                                 "every auxiliary measurement at its nominal value in the toys")
            out.append(on)
        return tuple(out)

    def draw_toy(self, key, params, resample=None, parts: int = 1):
        """One toy at ``params``: ``(counts, aux)`` from one key, the counts from the likelihood
        stage, the auxiliary measurements of the terms flagged in ``resample`` (one bool per term;
        default: every resamplable term) drawn about ``params``, the others nominal."""
        k_data, k_aux = jax.random.split(key)
        counts = self.likelihood.sample(k_data, self.expected(params), parts=parts)
        terms = self.constraint_terms()
        if resample is None:
            resample = tuple(t.resamplable for t in terms)
        return counts, sample_aux(terms, k_aux, {**self.baked_values(), **params}, resample)


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


def as_pytree(model):
    """``model`` itself if it is a registered JAX PyTree, else wrapped as static metadata."""
    if isinstance(model, _StaticModel):
        return model
    leaves = jax.tree_util.tree_leaves(model)
    if len(leaves) == 1 and leaves[0] is model:  # not a registered PyTree
        return _StaticModel(model)
    return model


def check_model(model):
    """Check that ``model`` follows the protocol (an :class:`AbstractModel` with a
    :class:`~nuejax.model.parameters.ParameterSet`) and return it ready for compiled code
    (:func:`as_pytree`). Raises :class:`~nuejax.errors.ModelProtocolError` saying what is missing."""
    inner = model.model if isinstance(model, _StaticModel) else model
    if not isinstance(inner, AbstractModel):
        has = [a for a in ("parameters", "expected", "nll") if hasattr(inner, a)]
        raise ModelProtocolError(
            f"{type(inner).__name__} is not a nuejax model: subclass nuejax.model.AbstractModel, give it "
            "`parameters` (a ParameterSet) and write `expected(params)` (it has: "
            f"{', '.join(has) or 'none of parameters, expected, nll'})")
    if not isinstance(getattr(inner, "parameters", None), ParameterSet):
        raise ModelProtocolError(f"{type(inner).__name__}.parameters must be a nuejax ParameterSet, "
                                 f"got {type(getattr(inner, 'parameters', None)).__name__}")
    return as_pytree(model)
