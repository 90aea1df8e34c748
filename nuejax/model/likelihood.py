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

import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

__all__ = ["poisson_nll", "check_expected", "check_counts"]


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
