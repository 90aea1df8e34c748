r"""Constraint terms: auxiliary measurements and penalties added to −2 ln L.

Every term is a frozen dataclass registered as a JAX PyTree. Its centres and widths are *dynamic*
array fields (leaves), so a toy may fluctuate an auxiliary measurement, or a scan move a bound,
without recompiling a jitted fit; only the parameter names (and flags: a side, a callable) are
static metadata. A term is called on the parameter PyTree (a ``dict`` name -> scalar) and returns
its contribution to −2 ln L, the convention of :func:`nuejax.model.poisson_nll` (a Gaussian pull
adds :math:`((x - c)/\sigma)^2`):

.. math:: -2\ln L(\theta) = -2\ln L_{\rm Poisson}(\theta) + \sum_k C_k(\theta)

Constant terms (normalisations of the auxiliary likelihoods) are dropped: each :math:`C_k` is 0 at
its best point. Reads are ``p[name]``, so a misspelt name raises rather than reading zero; check a
tuple of terms against a :class:`~nuejax.model.parameters.ParameterSet` once, eagerly, with
:func:`check_constraints`. Build terms with the ``create`` classmethods, which check their inputs
and raise :class:`~nuejax.errors.InputError` naming the parameter and the problem (the plain
constructors do not check: they are what ``jax.tree_util`` calls at every unflatten).

* :class:`GaussianConstraint`: one or several parameters, independent or correlated.
* :class:`HalfGaussianConstraint`: a one-sided bound (an upper limit such as Borexino's on ²¹⁰Bi).
* :class:`LogNormalConstraint`: a positive parameter measured with a relative uncertainty.
* :class:`PenaltyTerm`: any jax-traceable function of named parameters (the custom hook).

**Auxiliary measurements are data.** Each term's centre (a Gaussian's measured values, a
half-Gaussian's threshold, a log-normal's median) is its *auxiliary measurement*: ``term(p)``
uses the stored, nominal one, ``term(p, aux)`` another one passed as data, so a toy or an Asimov
data set with its own auxiliary measurements is the same term called with other data (as pyhf
passes ``auxdata`` to ``logpdf``; Cranmer et al., "HistFactory", CERN-OPEN-2012-016, Sec. 3).
``nominal()`` is the stored measurement, ``sample(key, p)`` draws one about the parameter values
``p`` (Gaussian: :math:`c \sim \mathcal N(x, V)`; log-normal: :math:`\ln m \sim \mathcal N(\ln x,
\sigma_{\ln}^2)`), ``asimov(p)`` is the measurement that the values ``p`` would give on average
(the centre equal to ``p``). A half-Gaussian bound and a penalty have no measurement that a toy
could redraw (``resamplable`` is False): toys refuse them on fitted parameters unless told to keep
every centre fixed. :func:`parameter_terms` turns the ``constraint=(centre, sigma)`` of
:class:`~nuejax.model.parameters.Parameter` into such terms, so a model has one kind of
constraint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .._internal.pytree import static_field
from ..errors import InputError, ParameterError
from .parameters import ParameterSet, unknown_name_message

__all__ = [
    "GaussianConstraint",
    "HalfGaussianConstraint",
    "LogNormalConstraint",
    "PenaltyTerm",
    "check_constraints",
    "constraint_total",
    "parameter_terms",
    "sample_aux",
]

_SIDES = ("upper", "lower")



def _float_dtype():
    return jnp.result_type(float)


def _label(cls_name: str, names: tuple) -> str:
    return f"{cls_name} on {names[0]!r}" if len(names) == 1 else f"{cls_name} on {names}"


def _check_names(names, cls_name: str) -> tuple:
    """``names`` as a non-empty tuple of distinct, non-empty strings (a single string is one name)."""
    if isinstance(names, str):
        names = (names,)
    try:
        names = tuple(names)
    except TypeError:
        raise InputError(f"{cls_name}: names must be a string or a sequence of strings, got {names!r}") from None
    if not names:
        raise InputError(f"{cls_name}: needs at least one parameter name")
    for n in names:
        if not isinstance(n, str) or not n:
            raise InputError(f"{cls_name}: parameter names must be non-empty strings, got {n!r}")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"{cls_name} on {names}: parameter(s) {dup} named more than once")
    return names


def _as_float_array(value, label: str, what: str) -> np.ndarray:
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{label}: {what} must be numbers, got {value!r}") from None


def _vector(value, n: int, names: tuple, label: str, what: str, *, positive: bool = False) -> np.ndarray:
    """A finite (n,) vector (a scalar is accepted for n = 1); ``positive``: every entry > 0."""
    a = _as_float_array(value, label, what)
    if a.ndim == 0 and n == 1:
        a = a.reshape(1)
    if a.shape != (n,):
        raise InputError(f"{label}: {what} has shape {a.shape}, expected ({n},) (one per parameter {names})")
    for n_, v in zip(names, a):
        if not np.isfinite(v):
            raise InputError(f"{label}: {what} of {n_!r} must be finite, got {v}")
        if positive and not v > 0:
            raise InputError(f"{label}: {what} of {n_!r} must be > 0, got {v}")
    return a


def _scalar(value, label: str, what: str, *, positive: bool = False) -> np.ndarray:
    a = _as_float_array(value, label, what)
    if a.shape not in ((), (1,)):
        raise InputError(f"{label}: {what} must be a scalar, got shape {a.shape}")
    a = a.reshape(())
    if not np.isfinite(a):
        raise InputError(f"{label}: {what} must be finite, got {float(a)}")
    if positive and not a > 0:
        raise InputError(f"{label}: {what} must be > 0, got {float(a)}")
    return a


def _symmetric_matrix(value, n: int, names: tuple, label: str, what: str) -> np.ndarray:
    """A finite, symmetric (n, n) matrix (symmetrised to rounding); names the first bad entry."""
    m = _as_float_array(value, label, what)
    if m.shape != (n, n):
        raise InputError(f"{label}: {what} has shape {m.shape}, expected ({n}, {n}) (parameters {names})")
    bad = np.argwhere(~np.isfinite(m))
    if bad.size:
        i, j = bad[0]
        raise InputError(f"{label}: {what} entry ({names[i]!r}, {names[j]!r}) must be finite, got {m[i, j]}")
    asym = np.abs(m - m.T)
    if asym.max() > 1e-10 * max(np.abs(m).max(), np.finfo(float).tiny):
        i, j = np.unravel_index(np.argmax(asym), asym.shape)
        raise InputError(f"{label}: {what} is not symmetric: entry ({names[i]!r}, {names[j]!r}) = {m[i, j]:g} "
                         f"but ({names[j]!r}, {names[i]!r}) = {m[j, i]:g}")
    return 0.5 * (m + m.T)


def _cholesky(m: np.ndarray, names: tuple, label: str, what: str) -> np.ndarray:
    """Lower Cholesky factor of a symmetric matrix, or InputError naming where positive definiteness fails."""
    try:
        return np.linalg.cholesky(m)
    except np.linalg.LinAlgError:
        pass
    k = next(k for k in range(1, len(names) + 1) if not _is_pd(m[:k, :k]))
    lam = np.linalg.eigvalsh(m).min()
    raise InputError(f"{label}: {what} is not positive definite (it fails at {names[k - 1]!r}, the leading "
                     f"{k}×{k} block; smallest eigenvalue {lam:.3g}): a covariance needs all "
                     f"eigenvalues > 0") from None


def _is_pd(m: np.ndarray) -> bool:
    try:
        np.linalg.cholesky(m)
        return True
    except np.linalg.LinAlgError:
        return False


def _check_known(names: tuple, parameters, label: str) -> None:
    if not isinstance(parameters, ParameterSet):
        raise InputError(f"{label}: check() needs a ParameterSet, got {type(parameters).__name__}")
    for n in names:
        if n not in parameters.names:
            raise ParameterError(f"{label}: " + unknown_name_message(n, parameters.names))


def _fmt(values) -> str:
    v = np.atleast_1d(np.asarray(values, dtype=float))
    return f"{v[0]:g}" if v.size == 1 else "(" + ", ".join(f"{x:g}" for x in v) + ")"


# -------------------------------------------------------------------------------------------------
@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class GaussianConstraint:
    r"""A (multivariate) Gaussian auxiliary measurement :math:`c` of parameters :math:`x`.

    .. math::
        C(x) = r^{\mathsf T} V^{-1} r = \lVert L^{-1} r \rVert^2, \qquad r = x - c, \quad V = L L^{\mathsf T}

    the −2 ln of :math:`\mathcal N(c;\, x, V)` without its constant; for one parameter
    :math:`((x - c)/\sigma)^2`. The term stores the lower Cholesky factor :math:`L` of the
    covariance (not its inverse) and evaluates :math:`z = L^{-1} r` by a triangular solve, so the
    value is a sum of squares (never negative, also for an ill-conditioned :math:`V`) and
    :math:`z` are the decorrelated pulls. ``centre`` and ``chol`` are dynamic leaves.

    Fields:
        centre: (n,) the measured values :math:`c`.
        chol: (n, n) lower-triangular :math:`L` with :math:`V = L L^{\mathsf T}`.
        names: static, the n parameter names, in the order of ``centre``.
    """

    #: Whether −2 ln L of this term with its Asimov measurement at any values p (``asimov(p)``)
    #: is smallest at p: the toys' start designs then need no Asimov fit from p
    #: (:func:`nuejax.inference.toys.toy_starts`).
    asimov_at_truth = True

    centre: jax.Array
    chol: jax.Array
    names: tuple[str, ...] = static_field()

    @classmethod
    def create(cls, names, centre, *, sigma=None, cov=None, corr=None) -> GaussianConstraint:
        """Build from independent ``sigma``, a full covariance ``cov``, or ``sigma`` and a correlation
        matrix ``corr`` (exactly one of ``sigma`` / ``cov`` / ``sigma``+``corr``).

        Args:
            names: a parameter name or a sequence of n names.
            centre: (n,) measured values (a scalar for one name).
            sigma: (n,) standard deviations, finite and > 0.
            cov: (n, n) covariance, finite, symmetric, positive definite.
            corr: (n, n) correlation matrix (unit diagonal, symmetric, positive definite); needs ``sigma``.
        Raises:
            InputError: naming the parameter and the problem.
        """
        names = _check_names(names, cls.__name__)
        label, n = _label(cls.__name__, names), len(names)
        c = _vector(centre, n, names, label, "centre")
        if cov is not None and (sigma is not None or corr is not None):
            raise InputError(f"{label}: give either cov, or sigma (with an optional corr), not both")
        if cov is None and sigma is None and corr is not None:
            raise InputError(f"{label}: corr needs sigma (the standard deviations it correlates)")
        if cov is None and sigma is None:
            raise InputError(f"{label}: give sigma (independent widths), cov, or sigma and corr")
        if cov is not None:
            v = _symmetric_matrix(cov, n, names, label, "covariance")
            for name, d in zip(names, np.diag(v)):
                if not d > 0:
                    raise InputError(f"{label}: variance of {name!r} on the covariance diagonal must be > 0, got {d:g}")
            chol = _cholesky(v, names, label, "covariance")
        else:
            s = _vector(sigma, n, names, label, "sigma", positive=True)
            if corr is None:
                chol = np.diag(s)
            else:
                r = _symmetric_matrix(corr, n, names, label, "correlation matrix")
                for name, d in zip(names, np.diag(r)):
                    if abs(d - 1.0) > 1e-12:
                        raise InputError(f"{label}: correlation matrix diagonal of {name!r} must be 1, got {d:g}")
                i, j = np.unravel_index(np.argmax(np.abs(r)), r.shape)
                if abs(r[i, j]) > 1.0:
                    raise InputError(f"{label}: correlation of {names[i]!r} and {names[j]!r} is {r[i, j]:g}, "
                                     f"outside [-1, 1]")
                chol = s[:, None] * _cholesky(r, names, label, "correlation matrix")
        dt = _float_dtype()
        return cls(jnp.asarray(c, dtype=dt), jnp.asarray(chol, dtype=dt), names)

    resamplable = True

    def _values(self, p) -> jax.Array:
        return jnp.stack([jnp.asarray(p[n]) for n in self.names])

    def __call__(self, p, aux=None) -> jax.Array:
        """:math:`C(x)` with the measured values ``aux`` (default: the nominal ``centre``)."""
        r = self._values(p) - (self.centre if aux is None else aux)
        if self.chol.shape == (1, 1):  # one parameter: a division, not a triangular-solve library call
            z = r / self.chol[0, 0]
            return jnp.sum(z * z)
        z = jax.scipy.linalg.solve_triangular(self.chol, r, lower=True)
        return z @ z

    def nominal(self) -> jax.Array:
        """The auxiliary measurement: the measured values (n,)."""
        return self.centre

    def sample(self, key, p) -> jax.Array:
        r"""A measurement drawn about the values ``p``: :math:`x + L z`, :math:`z \sim \mathcal N(0, 1)`."""
        x = self._values(p)
        return x + self.chol @ jax.random.normal(key, x.shape, dtype=self.chol.dtype)

    def asimov(self, p) -> jax.Array:
        """The measurement that ``p`` gives on average: the values themselves."""
        return self._values(p).astype(self.centre.dtype)

    @property
    def cov(self) -> jax.Array:
        r"""The covariance :math:`V = L L^{\mathsf T}`."""
        return self.chol @ self.chol.T

    def check(self, parameters: ParameterSet) -> None:
        """Raise :class:`~nuejax.errors.ParameterError` for a name that ``parameters`` lacks."""
        _check_known(self.names, parameters, _label(type(self).__name__, self.names))

    def describe(self) -> str:
        chol = np.asarray(self.chol, dtype=float)
        sigma = np.sqrt(np.sum(chol * chol, axis=1))
        if len(self.names) == 1:
            return f"{self.names[0]}: Gaussian, centre {_fmt(self.centre)} (σ = {_fmt(sigma)})"
        v = chol @ chol.T
        rho = v / np.outer(sigma, sigma)
        np.fill_diagonal(rho, 0.0)
        corr = "independent" if not np.any(rho) else f"max |ρ| = {np.abs(rho).max():.3g}"
        return (f"({', '.join(self.names)}): Gaussian, centre {_fmt(self.centre)} (σ = {_fmt(sigma)}, "
                f"{corr})")


# -------------------------------------------------------------------------------------------------
@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class HalfGaussianConstraint:
    r"""A one-sided Gaussian penalty: a bound :math:`t \pm \sigma` on one side of a parameter.

    .. math::
        C(x) = \begin{cases} \left(\max(x - t, 0)/\sigma\right)^2 & \text{side = "upper"} \\
                             \left(\min(x - t, 0)/\sigma\right)^2 & \text{side = "lower"} \end{cases}

    ``side="upper"`` is an upper limit (no penalty below :math:`t`, a Gaussian pull above: e.g. the
    Borexino bound on the ²¹⁰Bi rate, 10.8 ± 1.0 cpd/100 t); ``side="lower"`` penalises only
    :math:`x < t`. The value and the first derivative are continuous at :math:`t` (both 0 there;
    written with ``jnp.maximum``/``jnp.minimum``, so autodiff gives exactly 0 at :math:`t`); the
    second derivative jumps from 0 to :math:`2/\sigma^2` (autodiff at exactly :math:`t` returns
    a value in between). ``threshold`` and ``sigma`` are dynamic leaves (0-d arrays).
    """

    #: The bound does not move with the values (``asimov`` is the threshold): above it, −2 ln L
    #: with the Asimov measurement is not smallest at the values (see :class:`GaussianConstraint`).
    asimov_at_truth = False

    threshold: jax.Array
    sigma: jax.Array
    names: tuple[str, ...] = static_field()
    side: str = static_field(default="upper")

    @classmethod
    def create(cls, name: str, threshold, sigma, side: str = "upper") -> HalfGaussianConstraint:
        """``name``: the parameter; ``threshold``: :math:`t` (finite); ``sigma`` > 0; ``side``:
        ``"upper"`` (penalty above :math:`t`) or ``"lower"`` (penalty below). Raises InputError."""
        names = _check_names(name, cls.__name__)
        label = _label(cls.__name__, names)
        if len(names) != 1:
            raise InputError(f"{label}: constrains one parameter, got {len(names)} names")
        if side not in _SIDES:
            raise InputError(f"{label}: side must be 'upper' or 'lower', got {side!r}")
        t = _scalar(threshold, label, "threshold")
        s = _scalar(sigma, label, "sigma", positive=True)
        dt = _float_dtype()
        return cls(jnp.asarray(t, dtype=dt), jnp.asarray(s, dtype=dt), names, side)

    @property
    def name(self) -> str:
        return self.names[0]

    #: a bound, not a measurement a toy could redraw (module docstring)
    resamplable = False

    def __call__(self, p, aux=None) -> jax.Array:
        """:math:`C(x)` with the threshold ``aux`` (default: the nominal ``threshold``)."""
        d = jnp.asarray(p[self.names[0]]) - (self.threshold if aux is None else aux)
        d = jnp.maximum(d, 0.0) if self.side == "upper" else jnp.minimum(d, 0.0)
        return (d / self.sigma) ** 2

    def nominal(self) -> jax.Array:
        """The threshold :math:`t` (0-d)."""
        return self.threshold

    def sample(self, key, p) -> jax.Array:
        """The nominal threshold: a bound has no measurement to redraw (``resamplable`` is False)."""
        return self.threshold

    def asimov(self, p) -> jax.Array:
        """The nominal threshold (a bound does not move with the parameter values)."""
        return self.threshold

    def check(self, parameters: ParameterSet) -> None:
        """Raise :class:`~nuejax.errors.ParameterError` for a name that ``parameters`` lacks."""
        _check_known(self.names, parameters, _label(type(self).__name__, self.names))

    def describe(self) -> str:
        where = "above" if self.side == "upper" else "below"
        return f"{self.name}: half-Gaussian, penalty {where} {_fmt(self.threshold)} (σ = {_fmt(self.sigma)})"


# -------------------------------------------------------------------------------------------------
@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class LogNormalConstraint:
    r"""A log-normal auxiliary measurement :math:`m` of a positive parameter :math:`x`.

    .. math:: C(x) = \left(\frac{\ln x - \ln m}{\sigma_{\ln}}\right)^2 \quad (x > 0), \qquad C(x) = +\infty \quad (x \le 0)

    the Gaussian in :math:`\ln x`. This is −2 ln of the likelihood of :math:`x` given a
    measurement :math:`m` that is log-normally distributed about :math:`x`,
    :math:`p(m \mid x) = \exp[-(\ln m - \ln x)^2 / 2\sigma_{\ln}^2] / (\sqrt{2\pi}\,\sigma_{\ln} m)`,
    without constants. There is no :math:`1/x` Jacobian: a Jacobian belongs to a *pdf* (of the
    measurement: :math:`1/m`, a constant in :math:`x`), not to the likelihood of :math:`x`
    (a log-normal *prior density* on :math:`x` would carry :math:`1/x` and peak below :math:`m`).
    It is the ``lnN`` nuisance of CMS Combine: a yield :math:`m\,\kappa^{\theta}` with :math:`\theta`
    constrained by a unit Gaussian is this term with :math:`x = m\kappa^{\theta}`,
    :math:`\sigma_{\ln} = \ln\kappa`, :math:`C = \theta^2` (CMS Collaboration, "The CMS statistical
    analysis and combination tool: Combine", CMS-CAT-23-001, arXiv:2404.06614, and the Combine
    manual's section on datacards). For :math:`\sigma_{\ln} \ll 1` it approaches the Gaussian
    :math:`((x - m)/(m\sigma_{\ln}))^2`.

    At :math:`x \le 0` the value is ``+inf`` (not NaN) and its gradient 0 (the logarithm is taken
    of a safe argument); give the parameter a lower bound > 0 so a fit never steps there.
    ``median`` and ``sigma_ln`` are dynamic leaves (0-d arrays).
    """

    #: Whether −2 ln L of this term with its Asimov measurement at any values p (``asimov(p)``)
    #: is smallest at p (the median at the value): the toys' start designs then need no Asimov fit from p
    #: (:func:`nuejax.inference.toys.toy_starts`).
    asimov_at_truth = True

    median: jax.Array
    sigma_ln: jax.Array
    names: tuple[str, ...] = static_field()

    @classmethod
    def create(cls, name: str, median, sigma_ln) -> LogNormalConstraint:
        r"""``median`` :math:`m` > 0 (the measured value); ``sigma_ln`` > 0, the width in
        :math:`\ln x` (≈ the relative uncertainty when small; Combine's :math:`\ln\kappa`). Raises InputError."""
        names = _check_names(name, cls.__name__)
        label = _label(cls.__name__, names)
        if len(names) != 1:
            raise InputError(f"{label}: constrains one parameter, got {len(names)} names")
        m = _scalar(median, label, "median", positive=True)
        s = _scalar(sigma_ln, label, "sigma_ln", positive=True)
        dt = _float_dtype()
        return cls(jnp.asarray(m, dtype=dt), jnp.asarray(s, dtype=dt), names)

    @property
    def name(self) -> str:
        return self.names[0]

    resamplable = True

    def __call__(self, p, aux=None) -> jax.Array:
        """:math:`C(x)` with the measured median ``aux`` (default: the nominal ``median``)."""
        x = jnp.asarray(p[self.names[0]])
        pos = x > 0
        safe = jnp.where(pos, x, 1.0)
        value = ((jnp.log(safe) - jnp.log(self.median if aux is None else aux)) / self.sigma_ln) ** 2
        return jnp.where(pos, value, jnp.inf)

    def nominal(self) -> jax.Array:
        """The measured median :math:`m` (0-d)."""
        return self.median

    def sample(self, key, p) -> jax.Array:
        r"""A measurement drawn about ``p``: :math:`\exp(\ln x + \sigma_{\ln} z)`, :math:`z \sim \mathcal N(0, 1)`."""
        x = jnp.asarray(p[self.names[0]], dtype=self.sigma_ln.dtype)
        return jnp.exp(jnp.log(x) + self.sigma_ln * jax.random.normal(key, (), dtype=self.sigma_ln.dtype))

    def asimov(self, p) -> jax.Array:
        """The measurement that ``p`` gives on average (its median): the value itself."""
        return jnp.asarray(p[self.names[0]], dtype=self.median.dtype)

    def check(self, parameters: ParameterSet) -> None:
        """Raise :class:`~nuejax.errors.ParameterError` for a name that ``parameters`` lacks."""
        _check_known(self.names, parameters, _label(type(self).__name__, self.names))

    def describe(self) -> str:
        return f"{self.name}: log-normal, median {_fmt(self.median)} (σ_ln = {_fmt(self.sigma_ln)})"


# -------------------------------------------------------------------------------------------------
@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class PenaltyTerm:
    r"""A custom term: :math:`C(x) = f(\{x_n\}_{n \in \text{names}})`, added to −2 ln L as it is.

    ``function(values) -> scalar`` receives a ``dict`` holding only the named parameters and
    returns their contribution to −2 ln L (so a Gaussian pull is ``((v["a"] - c) / s) ** 2``, not
    ``0.5 * ...``). It must be jax-traceable (``jax.numpy``, no Python branching on values, no
    conversion to ``float``), because it is traced into the jitted likelihood and differentiated
    with it: it is part of the gradient and the Hessian (hence of the fit errors). The callable is
    static metadata, hashed by identity: numbers it closes over are compile-time constants, and a
    new callable recompiles; use the built-in terms for centres that change between toys.
    """

    #: No measurement: the function's minimum is where the function puts it, not at the values
    #: (see :class:`GaussianConstraint`).
    asimov_at_truth = False

    names: tuple[str, ...] = static_field()
    function: Callable = field(metadata={"static": True})
    description: str = static_field(default="")

    @classmethod
    def create(cls, names, function, *, description: str = "") -> PenaltyTerm:
        """Check ``names``, that ``function`` is callable and hashable, and that ``description`` is
        a string (the function is not called here). Raises InputError."""
        names = _check_names(names, cls.__name__)
        label = _label(cls.__name__, names)
        if not callable(function):
            raise InputError(f"{label}: function must be callable (values dict -> scalar), "
                             f"got {type(function).__name__}: {function!r}")
        try:
            hash(function)
        except TypeError:
            raise InputError(f"{label}: function must be hashable (it is static jit metadata), "
                             f"got {type(function).__name__}") from None
        if not isinstance(description, str):
            raise InputError(f"{label}: description must be a string, got {description!r}")
        return cls(names, function, description)

    #: no auxiliary measurement
    resamplable = False

    def __call__(self, p, aux=None) -> jax.Array:
        """The function's value (``aux`` is ignored: a penalty has no auxiliary measurement)."""
        out = jnp.asarray(self.function({n: p[n] for n in self.names}))
        if out.shape != ():
            raise InputError(f"{_label(type(self).__name__, self.names)}: function returned shape {out.shape}, "
                             f"expected a scalar (its −2 ln L contribution)")
        return out

    def nominal(self) -> jax.Array:
        """No measurement: an empty array."""
        return jnp.zeros(0, dtype=_float_dtype())

    def sample(self, key, p) -> jax.Array:
        return self.nominal()

    def asimov(self, p) -> jax.Array:
        return self.nominal()

    def check(self, parameters: ParameterSet) -> None:
        """Raise :class:`~nuejax.errors.ParameterError` for a name that ``parameters`` lacks."""
        _check_known(self.names, parameters, _label(type(self).__name__, self.names))

    def describe(self) -> str:
        what = self.description or getattr(self.function, "__name__", type(self.function).__name__)
        names = self.names[0] if len(self.names) == 1 else f"({', '.join(self.names)})"
        return f"{names}: custom penalty, {what}"


# -------------------------------------------------------------------------------------------------
def _sides(term) -> frozenset:
    """The sides of a parameter that a Gaussian-type term constrains (empty for custom terms)."""
    if isinstance(term, (GaussianConstraint, LogNormalConstraint)):
        return frozenset(_SIDES)
    if isinstance(term, HalfGaussianConstraint):
        return frozenset((term.side,))
    return frozenset()


def constraint_total(constraints: Iterable, p, aux=None) -> jax.Array:
    """Sum of the terms' −2 ln L contributions at ``p`` (0.0 for no terms), each with its
    auxiliary measurement from ``aux`` (one entry per term, in order; None: the nominal ones);
    pure and jittable."""
    constraints = tuple(constraints)
    if aux is not None and len(aux) != len(constraints):
        raise InputError(f"aux has {len(aux)} entries, the model has {len(constraints)} constraint terms "
                         "(one auxiliary measurement per term, in the order of model.constraint_terms())")
    total = jnp.zeros((), dtype=_float_dtype())
    for k, term in enumerate(constraints):
        total = total + (term(p) if aux is None else term(p, aux[k]))
    return total


def sample_aux(constraints: Iterable, key, p, resample) -> tuple:
    """Auxiliary measurements of a toy drawn about ``p``: each term in ``resample`` (a tuple of
    bools, one per term) draws its own (``term.sample`` with ``jax.random.fold_in(key, k)`` for
    term k), the others keep their nominal one."""
    return tuple(term.sample(jax.random.fold_in(key, k), p) if r else term.nominal()
                 for k, (term, r) in enumerate(zip(constraints, resample)))


@functools.lru_cache(maxsize=256)
def parameter_terms(parameters: ParameterSet) -> tuple:
    """The :class:`GaussianConstraint` of every parameter declared with ``constraint=(centre,
    sigma)``, in parameter order: how a :class:`~nuejax.model.parameters.Parameter`'s constraint
    enters a model (cached per parameter set, which is immutable)."""
    dt = _float_dtype()
    return tuple(GaussianConstraint(np.asarray([p.constraint[0]], dtype=dt), np.asarray([[p.constraint[1]]], dtype=dt),
                                    (p.name,)) for p in parameters.parameters if p.constraint is not None)


def check_constraints(constraints, parameters: ParameterSet) -> None:
    """Check a tuple of terms against ``parameters``, once, eagerly.

    Calls each term's ``check`` (:class:`~nuejax.errors.ParameterError` for an unknown name) and
    raises :class:`~nuejax.errors.InputError` when one parameter is constrained twice on the same
    side by Gaussian-type terms (:class:`GaussianConstraint`, :class:`LogNormalConstraint`,
    :class:`HalfGaussianConstraint`), or by one of them and its ``Parameter.constraint`` in
    ``parameters`` (:func:`parameter_terms` makes a term of it): that double counts one
    auxiliary measurement. An upper and a lower half-Gaussian on one parameter are allowed (an
    asymmetric Gaussian); :class:`PenaltyTerm` is not checked for overlap.
    """
    if not isinstance(constraints, (tuple, list)):
        raise InputError(f"constraints must be a tuple of constraint terms, got {type(constraints).__name__}")
    if not isinstance(parameters, ParameterSet):
        raise InputError(f"check_constraints needs a ParameterSet, got {type(parameters).__name__}")
    for i, term in enumerate(constraints):
        if not (callable(getattr(term, "check", None)) and isinstance(getattr(term, "names", None), tuple)):
            raise InputError(f"constraints[{i}] is a {type(term).__name__}, not a constraint term "
                             f"(GaussianConstraint, HalfGaussianConstraint, LogNormalConstraint, PenaltyTerm)")
        term.check(parameters)
    seen: dict[str, list] = {}
    for term in constraints:
        sides = _sides(term)
        if not sides:
            continue
        for n in term.names:
            legacy = parameters[n].constraint
            if legacy is not None:
                raise InputError(f"parameter {n!r} is constrained twice: by Parameter.constraint "
                                 f"({legacy[0]:g} ± {legacy[1]:g}) in the parameter set and by "
                                 f"[{term.describe()}]; drop one of them (it would double count)")
            for other in seen.get(n, ()):
                if _sides(other) & sides:
                    raise InputError(f"parameter {n!r} is constrained twice, by [{other.describe()}] and by "
                                     f"[{term.describe()}]: that double counts one measurement; merge them "
                                     f"into one term (a GaussianConstraint over several names takes correlations)")
            seen.setdefault(n, []).append(term)
