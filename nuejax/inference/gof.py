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

import jax
import jax.numpy as jnp
import numpy as np

from .._internal.stats import chi2_sf
from ..errors import InputError
from ..model.likelihood import UnbinnedPoisson
from .fitting import batch_fit
from .problem import FitProblem
from .results import FitResult, GoodnessOfFit

__all__ = ["goodness_of_fit", "saturated_deviance"]


def saturated_deviance(mu, n) -> jax.Array:
    """:math:`2\\sum_j[\\mu_j - n_j + n_j\\ln(n_j/\\mu_j)]` over the last axis (module docstring)."""
    mu = jnp.asarray(mu)
    n = jnp.asarray(n, dtype=mu.dtype)
    pos = n > 0
    log_term = jnp.where(pos, n * jnp.log(jnp.where(pos, n, 1.0) / jnp.where(mu > 0, mu, 1.0)), 0.0)
    return 2.0 * jnp.sum(mu - n + log_term, axis=-1)


def goodness_of_fit(model, data, result: FitResult, *, n_toys: int = 0, key=None, chunk: int | None = None
                    ) -> GoodnessOfFit:
    """Saturated-model deviance of ``result`` (a fit of ``model`` to ``data``) and its p-values.

    ``n_toys > 0`` adds the toy p-value (``key``: a ``jax.random`` key, default ``PRNGKey(0)``).
    """
    if isinstance(getattr(model, "likelihood", None), UnbinnedPoisson):
        raise InputError("goodness_of_fit: the saturated-model deviance is defined for binned counts; an unbinned "
                         "likelihood has no saturated model (bin the events, or use a binned model of the same data)")
    if not isinstance(result, FitResult):
        raise TypeError(f"result must be a FitResult of this model and data, got {type(result).__name__}")
    s = FitProblem.create(model, data, names=result.names,
                          init={k: v for k, v in result.params.items() if k in model.parameters and np.ndim(v) == 0})
    best = s.params(s.start())
    mu = s.model.expected(best)
    dev = float(saturated_deviance(mu, s.data))
    # every fitted parameter counts, Gaussian-constrained ones too (a conservative convention)
    ndof = int(s.data.shape[-1]) - len(result.names)
    p_chi2 = float(chi2_sf(dev, ndof)) if ndof > 0 else float("nan")
    if n_toys <= 0:
        return GoodnessOfFit(dev, ndof, p_chi2)
    key = jax.random.PRNGKey(0) if key is None else key
    toys = s.model.pseudo_data(key, best, int(n_toys))
    fits = batch_fit(s.model, toys, s.host_params(), result.names, chunk=chunk)
    x = jnp.stack([jnp.asarray(fits.values[n]) for n in result.names], axis=-1)
    devs = np.asarray(_toy_deviances(x, toys, s))
    ok = fits.converged
    p_toys = float(np.mean(devs[ok] >= dev)) if ok.any() else None
    return GoodnessOfFit(dev, ndof, p_chi2, p_toys, int(n_toys), int(ok.sum()), tuple(float(d) for d in devs[ok]))


@jax.jit
def _toy_deviances(x, toys, problem):
    # the problem is an argument (not a closure): the model's tensors are not compiled in as constants
    return jax.vmap(lambda xi, ci: saturated_deviance(problem.model.expected(problem.params(xi)), ci))(x, toys)
