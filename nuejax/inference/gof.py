r"""Goodness of fit: the saturated-model deviance and its p-value, asymptotic and from toys.

The deviance of a binned Poisson fit is the likelihood ratio to the saturated model
(:math:`\mu_j = n_j`; Baker & Cousins, *Nucl. Instrum. Meth.* 221 (1984) 437, Eq. 9):

.. math:: D = 2\sum_j\big[\mu_j - n_j + n_j\ln(n_j/\mu_j)\big],

with the constraint terms left out (they are not data). Asymptotically :math:`D \sim \chi^2` with
n_bins − n_fitted degrees of freedom, an approximation that fails in bins with few counts; the
toy p-value does not rely on it: toys are drawn from the best fit, every toy is fitted again with
:func:`~nuejax.inference.batch_fit` (one batched launch), and p is the fraction of converged toys
whose deviance is at least the observed one. Constraint centres are not fluctuated in the toys.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ModelProtocolError
from ..model.checks import check_model
from ..model.likelihood import poisson_draw, poisson_parts
from .fitting import batch_fit, setup
from .results import FitResult

__all__ = ["GoodnessOfFit", "goodness_of_fit", "saturated_deviance"]


def saturated_deviance(mu, n) -> jax.Array:
    """:math:`2\\sum_j[\\mu_j - n_j + n_j\\ln(n_j/\\mu_j)]` over the last axis (module docstring)."""
    mu = jnp.asarray(mu)
    n = jnp.asarray(n, dtype=mu.dtype)
    pos = n > 0
    log_term = jnp.where(pos, n * jnp.log(jnp.where(pos, n, 1.0) / jnp.where(mu > 0, mu, 1.0)), 0.0)
    return 2.0 * jnp.sum(mu - n + log_term, axis=-1)


@dataclass(frozen=True)
class GoodnessOfFit:
    """Deviance ``deviance`` with ``ndof`` degrees of freedom, asymptotic ``p_chi2`` and, when
    toys were run, ``p_toys`` from ``n_toys_converged`` of ``n_toys`` toys (their deviances in
    ``toy_deviances``)."""

    deviance: float
    ndof: int
    p_chi2: float
    p_toys: float | None = None
    n_toys: int = 0
    n_toys_converged: int = 0
    toy_deviances: tuple = field(default=(), repr=False)

    def to_dict(self) -> dict:
        return {"deviance": self.deviance, "ndof": self.ndof, "p_chi2": self.p_chi2, "p_toys": self.p_toys,
                "n_toys": self.n_toys, "n_toys_converged": self.n_toys_converged,
                "toy_deviances": list(self.toy_deviances)}


def goodness_of_fit(model, data, result: FitResult, *, n_toys: int = 0, key=None, chunk: int | None = None
                    ) -> GoodnessOfFit:
    """Saturated-model deviance of ``result`` (a fit of ``model`` to ``data``) and its p-values.

    ``n_toys > 0`` adds the toy p-value (``key``: a ``jax.random`` key, default ``PRNGKey(0)``).
    The model needs ``expected(params)`` besides the fitting protocol.
    """
    from scipy.stats import chi2

    model = check_model(model)
    if not isinstance(result, FitResult):
        raise TypeError(f"result must be a FitResult of this model and data, got {type(result).__name__}")
    s = setup(model, data, names=result.names, init={k: v for k, v in result.params.items()
                                                     if k in model.parameters and np.ndim(v) == 0})
    if not hasattr(s.model, "expected"):
        raise ModelProtocolError(f"goodness of fit needs {type(model).__name__}.expected(params)")
    best = {k: jnp.asarray(v, dtype=s.data.dtype) for k, v in s.base.items()}
    mu = s.model.expected(best)
    dev = float(saturated_deviance(mu, s.data))
    # every fitted parameter counts, Gaussian-constrained ones too (a conservative convention)
    ndof = int(s.data.shape[-1]) - len(result.names)
    p_chi2 = float(chi2.sf(dev, ndof)) if ndof > 0 else float("nan")
    if n_toys <= 0:
        return GoodnessOfFit(dev, ndof, p_chi2)
    key = jax.random.PRNGKey(0) if key is None else key
    toys = poisson_draw(key, mu, (int(n_toys),) + mu.shape, parts=poisson_parts(np.max(np.asarray(mu), initial=0.0)))
    fits = batch_fit(s.model, toys, {k: float(v) for k, v in best.items()}, result.names, chunk=chunk)

    x = jnp.stack([jnp.asarray(fits.values[n]) for n in result.names], axis=-1)
    devs = np.asarray(_toy_deviances(x, toys, s.model, best, tuple(result.names)))
    ok = fits.converged
    p_toys = float(np.mean(devs[ok] >= dev)) if ok.any() else None
    return GoodnessOfFit(dev, ndof, p_chi2, p_toys, int(n_toys), int(ok.sum()), tuple(float(d) for d in devs[ok]))


def _toy_deviances(x, toys, model, base, names):
    # the model is an argument (not a closure): its tensors are not compiled in as constants
    f = jax.jit(jax.vmap(lambda xi, ci, m, b: _dev(xi, ci, m, b, names), in_axes=(0, 0, None, None)))
    return f(x, toys, model, base)


def _dev(x, counts, model, base, names):
    p = dict(base)
    for i, n in enumerate(names):
        p[n] = x[i]
    return saturated_deviance(model.expected(p), counts)
