r"""Binned Poisson likelihood, paper Eq. (logL):

.. math::
    -2\ln\mathcal L = 2\sum_j\left[\mu_j - n_j\ln\mu_j + \ln\Gamma(n_j + 1)\right]
                      + \sum_m \frac{(\theta_m - \hat\theta_m)^2}{\sigma_m^2}.

Bins with :math:`n_j = 0` contribute :math:`2\mu_j` (no logarithm, so :math:`\mu_j \to 0` is
fine). A bin with :math:`\mu_j \le 0` and :math:`n_j > 0` has zero likelihood: the jitted
function returns :math:`+\infty` there (no NaN, and a minimizer backs away), and
:func:`check_expected` raises an error naming the bin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

__all__ = ["BinnedPoisson", "poisson_nll", "check_expected", "check_counts", "poisson_draw", "poisson_parts",
           "POISSON_PART_MAX"]

#: Largest mean :func:`jax.random.poisson` is asked to draw from. Its draws are wrong for large
#: means (JAX 0.10.2, 4e5 draws per mean: variance/mean 1.013 at 1.4e5, 0.945 at 6.5e5, 0.907 at
#: 3e6, 6-42 standard errors from 1; within 1.6 standard errors at every tested mean up to 1.04e5:
#: ``benchmarks/accuracy/poisson_sampler.py``); :func:`poisson_draw` splits larger means into parts.
POISSON_PART_MAX = 1.0e4


def poisson_parts(mu_max: float) -> int:
    """Number of equal parts that keeps each below :data:`POISSON_PART_MAX` for means up to ``mu_max``."""
    m = float(mu_max)
    if not math.isfinite(m):
        raise ValueError(f"expected counts must be finite to draw toys, the largest is {m}")
    return max(1, math.ceil(m / POISSON_PART_MAX))


def poisson_draw(key, mu, shape=None, parts: int = 1):
    r"""Poisson draws with means ``mu`` (broadcast to ``shape``), exact for any mean: the sum of
    ``parts`` independent draws with mean :math:`\mu/\text{parts}` (a sum of independent Poisson
    variables is Poisson with the summed mean), so no single draw exceeds
    :data:`POISSON_PART_MAX` when ``parts >= poisson_parts(max(mu))``. ``parts`` is static."""
    mu = jnp.asarray(mu)
    shape = mu.shape if shape is None else tuple(shape)
    if parts == 1:
        return jax.random.poisson(key, mu, shape=shape).astype(mu.dtype)
    draws = jax.random.poisson(key, mu / parts, shape=(parts,) + shape)
    return jnp.sum(draws, axis=0).astype(mu.dtype)


def _stirling_remainder(n):
    r""":math:`S(n) = \ln\Gamma(n+1) - n\ln n + n` (S(0) = 0), without cancellation.

    For n >= 20 the Stirling series :math:`\tfrac12\ln(2\pi n) + \tfrac1{12n} - \tfrac1{360n^3}
    + \tfrac1{1260n^5} - \tfrac1{1680n^7}` (truncation < 2e-15); below, the direct difference,
    whose terms are then small.
    """
    big = n >= 20.0
    nb = jnp.where(big, n, 20.0)
    inv = 1.0 / nb
    series = 0.5 * jnp.log(2.0 * jnp.pi * nb) + inv * (1.0 / 12 - inv**2 * (1.0 / 360 - inv**2 * (1.0 / 1260 - inv**2 / 1680)))
    ns = jnp.where(big, 1.0, n)
    direct = gammaln(ns + 1.0) - jnp.where(ns > 0, ns * jnp.log(jnp.where(ns > 0, ns, 1.0)), 0.0) + ns
    return jnp.where(big, series, direct)


def poisson_nll(mu, n):
    """:math:`2\\sum_j[\\mu_j - n_j\\ln\\mu_j + \\ln\\Gamma(n_j+1)]` over the last axis (batched).

    Evaluated in the algebraically identical form
    :math:`2\\sum_j[(\\mu_j - n_j - n_j\\ln(\\mu_j/n_j)) + S(n_j)]` with
    :math:`S(n) = \\ln\\Gamma(n+1) - n\\ln n + n` from :func:`_stirling_remainder`: the literal
    form adds per-bin terms of size :math:`n\\ln n \\sim 10^7` to get O(1), so its value would
    carry ~1e-11 relative rounding that differs between CPU and GPU; this form does not.
    """
    mu = jnp.asarray(mu)
    n = jnp.asarray(n, dtype=mu.dtype)
    impossible = (mu <= 0) & (n > 0)
    safe_mu = jnp.where(mu > 0, mu, 1.0)
    safe_n = jnp.where(n > 0, n, 1.0)
    deviance = mu - n - jnp.where(n > 0, n * jnp.log(safe_mu / safe_n), 0.0)
    total = 2.0 * jnp.sum(deviance + _stirling_remainder(n), axis=-1)
    return jnp.where(jnp.any(impossible, axis=-1), jnp.inf, total)


def check_counts(n, name: str = "data") -> np.ndarray:
    """Validate observed counts: finite, non-negative; errors name the bin."""
    n = np.asarray(n, dtype=float)
    bad = np.nonzero(~np.isfinite(n) | (n < 0))[0]
    if bad.size:
        raise ValueError(f"{name}: invalid count {n[bad[0]]} in bin {bad[0]} (counts must be finite and >= 0)")
    return n


def check_expected(mu, n, edges=None) -> None:
    """Raise ``ValueError`` naming the first bin where the expectation is NaN, or <= 0 with data."""
    mu = np.asarray(mu)
    n = np.asarray(n)
    where = (lambda j: f"bin {j}" + ("" if edges is None else f" [{edges[j]:g}, {edges[j + 1]:g})"))
    nan = np.nonzero(~np.isfinite(mu))[0]
    if nan.size:
        raise ValueError(f"expected spectrum is not finite in {where(nan[0])}")
    bad = np.nonzero((mu <= 0) & (n > 0))[0]
    if bad.size:
        raise ValueError(f"expected count {mu[bad[0]]:g} <= 0 with {n[bad[0]]:g} observed in {where(bad[0])}")


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class BinnedPoisson:
    """The likelihood stage of binned data: −2 ln L of observed counts given the expected counts,
    :func:`poisson_nll` (paper Eq. logL), on the bins ``obs_edges`` (None: bins without edges, a
    user model's); toys draw every bin from its Poisson distribution (:func:`poisson_draw`)."""

    obs_edges: jax.Array | None = None

    @property
    def n_obs(self) -> int | None:
        return None if self.obs_edges is None else int(self.obs_edges.shape[0] - 1)

    def __call__(self, expected, data) -> jax.Array:
        return poisson_nll(expected, data)

    def sample(self, key, expected, shape=None, parts: int = 1) -> jax.Array:
        """Counts drawn from ``expected`` (broadcast to ``shape``); ``parts`` as in :func:`poisson_draw`."""
        return poisson_draw(key, expected, shape, parts=parts)

