"""Independent reference for the Feldman-Cousins (FC) interval on a Gaussian mean bounded at zero.

Ground truth for other tests: pure numpy/scipy, no nuejax import.

Problem (Feldman & Cousins, Phys. Rev. D 57 (1998) 3873, arXiv:physics/9711021, Sec. IV B):
one measurement x ~ N(mu, 1) of a mean constrained to mu >= 0. The best physical mean is
mu_best(x) = max(0, x), and the FC ordering ranks the x values, for a given mu, by the
likelihood ratio

    R(x; mu) = exp(-(x - mu)^2 / 2) / exp(-(x - mu_best)^2 / 2) = exp(-t(x; mu) / 2),
    t(x; mu) = (x - mu)^2 - (x - max(0, x))^2                    (= -2 ln R)
             = (x - mu)^2             for x >= 0,
             = mu^2 - 2 x mu          for x <  0.

Two routes to the same intervals, kept numerically independent of each other:

* ``fc_gaussian_interval`` (the Neyman construction, as in the paper): for every mu on a fine
  grid the acceptance region [x1(mu), x2(mu)] is found by solving R(x1) = R(x2) (by bisection
  on R itself, from its definition) together with Phi(x2 - mu) - Phi(x1 - mu) = cl; the interval
  for x0 is the set of mu whose acceptance region contains x0.
* ``fc_critical_value`` (the test-statistic view): t_c(mu) is the cl-quantile of t under
  x ~ N(mu, 1), from the closed-form CDF of t; mu is accepted iff t(x0; mu) <= t_c(mu).

``FC_TABLE_90`` holds the textbook 90 % rows of Table X that could be verified from a public
source (see the comment above it).
"""
from __future__ import annotations

import functools
import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr
from scipy.stats import chi2, norm

# Rows of Table X of Feldman & Cousins (1998), "90% C.L. confidence intervals for the mean mu of
# a Gaussian, constrained to be non-negative, as a function of the measured mean x0" (sigma = 1):
# x0 -> (lower, upper). The full table (x0 = -3.0 ... 3.1 in steps of 0.1) could not be found in
# any reachable source; these are the rows quoted from it by two public test suites:
#   * github.com/eikevons/Unified_CI, tests/test_fast.py, test_{lower,upper}_limit_against_FC_paper
#     ("Test ... against Table X of Feldman+Cousins paper"): x0 = -2.3, 0.5, 1.3, 1.7, 2.4;
#   * github.com/gammapy/gammapy, gammapy/stats/tests/test_feldman_cousins.py,
#     test_acceptance_region_gauss ("According to Table X, for a measured value of 2.6 the 90%
#     confidence interval should be 1.02 and 4.24"): x0 = 2.6.
FC_TABLE_90: dict[float, tuple[float, float]] = {
    -2.3: (0.00, 0.34),
    0.5: (0.00, 2.14),
    1.3: (0.02, 2.94),
    1.7: (0.38, 3.34),
    2.4: (0.87, 4.04),
    2.6: (1.02, 4.24),
}

# The other confidence levels of the same Table X rows, from the same eikevons/Unified_CI test
# (cl -> {x0 -> (lower, upper)}); they exercise the ``cl`` argument.
FC_TABLE_X_OTHER_CL: dict[float, dict[float, tuple[float, float]]] = {
    0.6827: {
        -2.3: (0.00, 0.05),
        0.5: (0.02, 1.50),
        1.3: (0.42, 2.30),
        1.7: (0.72, 2.70),
        2.4: (1.40, 3.40),
    },
    0.95: {
        -2.3: (0.00, 0.54),
        0.5: (0.00, 2.46),
        1.3: (0.00, 3.26),
        1.7: (0.06, 3.66),
        2.4: (0.69, 4.36),
    },
    0.99: {
        -2.3: (0.00, 0.99),
        0.5: (0.00, 3.08),
        1.3: (0.00, 3.88),
        1.7: (0.00, 4.28),
        2.4: (0.07, 4.98),
    },
}

#: Step of the mu grid of the Neyman construction in ``fc_gaussian_interval``.
MU_STEP = 1e-3


def _check_cl(cl: float) -> float:
    cl = float(cl)
    if not 0.0 < cl < 1.0:
        raise ValueError(f"cl must lie in (0, 1), got {cl!r}")
    return cl


def fc_statistic(x, mu):
    """t(x; mu) = (x - mu)^2 - (x - max(0, x))^2 = -2 ln R(x; mu), elementwise."""
    x = np.asarray(x, dtype=float)
    mu = np.asarray(mu, dtype=float)
    return (x - mu) ** 2 - (x - np.maximum(0.0, x)) ** 2


def _log_ratio(x, mu):
    """ln R(x; mu) written out from the definition R = P(x | mu) / P(x | mu_best)."""
    mu_best = np.maximum(0.0, x)
    return -0.5 * (x - mu) ** 2 + 0.5 * (x - mu_best) ** 2


def fc_acceptance_region(mu, cl: float = 0.9):
    """FC acceptance region [x1(mu), x2(mu)] in x for true mean(s) ``mu`` >= 0 (vectorised).

    Solves R(x1; mu) = R(x2; mu) with x1 <= mu <= x2 and Phi(x2 - mu) - Phi(x1 - mu) = cl by
    nested bisection: the outer one on x2 (the content grows with x2), the inner one on x1 in
    (-inf, mu], where R rises monotonically from 0 to 1. At mu = 0, R = 1 for every x < 0 and the
    region is (-inf, Phi^-1(cl)]: x1 = -inf.
    """
    cl = _check_cl(cl)
    mu = np.atleast_1d(np.asarray(mu, dtype=float))
    if np.any(mu < 0):
        raise ValueError("mu must be >= 0")

    def x1_of(x2):
        target = _log_ratio(x2, mu)
        lo = np.full_like(mu, -1e7)  # R(lo) ~ exp(-1e7 mu): below the target for mu >= 1e-6
        hi = mu.copy()
        for _ in range(72):  # 1e7 / 2**72 ~ 2e-15
            mid = 0.5 * (lo + hi)
            below = _log_ratio(mid, mu) < target
            lo = np.where(below, mid, lo)
            hi = np.where(below, hi, mid)
        return 0.5 * (lo + hi)

    lo, hi = mu.copy(), mu + 12.0
    for _ in range(56):  # 12 / 2**56 ~ 2e-16
        x2 = 0.5 * (lo + hi)
        short = ndtr(x2 - mu) - ndtr(x1_of(x2) - mu) < cl
        lo = np.where(short, x2, lo)
        hi = np.where(short, hi, x2)
    x2 = 0.5 * (lo + hi)
    x1 = x1_of(x2)
    x1[mu == 0.0] = -np.inf
    return x1, x2


@functools.lru_cache(maxsize=16)
def _belt(cl: float, mu_max: int):
    n = int(round(mu_max / MU_STEP))
    mu = np.linspace(0.0, mu_max, n + 1)
    x1, x2 = fc_acceptance_region(mu, cl)
    for a in (mu, x1, x2):
        a.setflags(write=False)
    return mu, x1, x2


def fc_gaussian_interval(x0: float, cl: float = 0.9) -> tuple[float, float]:
    """FC interval (lower, upper) for mu >= 0 given one measurement x0 ~ N(mu, 1).

    Neyman construction: acceptance regions [x1(mu), x2(mu)] (``fc_acceptance_region``) on a mu
    grid of step ``MU_STEP`` = 0.001 from 0 to max(10, ceil(x0) + 6); the interval is the set of
    grid mu with x1(mu) <= x0 <= x2(mu). Its ends are then placed between the last accepted and
    the first rejected grid point by linear interpolation of the belt edge (x2 for the lower end,
    x1 for the upper one), which brings them to ~1e-6 instead of the grid step. (Where the
    upper limit falls below MU_STEP, x0 < ~ -800, only mu = 0 is accepted and (0, 0) comes back.)
    Independent of ``FC_TABLE_90`` and of ``fc_critical_value``.
    """
    cl = _check_cl(cl)
    x0 = float(x0)
    if not math.isfinite(x0):
        raise ValueError(f"x0 must be finite, got {x0!r}")
    mu_max = max(10, int(math.ceil(x0)) + 6)
    mu, x1, x2 = _belt(cl, mu_max)
    accepted = np.flatnonzero((x1 <= x0) & (x0 <= x2))
    if accepted.size == 0:
        raise RuntimeError(f"no mu on the grid accepts x0 = {x0}")
    i_lo, i_up = int(accepted[0]), int(accepted[-1])
    if accepted.size != i_up - i_lo + 1:
        raise RuntimeError("FC accepted set is not an interval (belt not monotone?)")

    lower = float(mu[i_lo])
    if i_lo > 0:  # x2(mu[i_lo - 1]) < x0 <= x2(mu[i_lo])
        a, b = x2[i_lo - 1], x2[i_lo]
        lower = float(mu[i_lo - 1] + (x0 - a) / (b - a) * (mu[i_lo] - mu[i_lo - 1]))
    upper = float(mu[i_up])
    if i_up + 1 < mu.size and np.isfinite(x1[i_up]):  # x1(mu[i_up]) <= x0 < x1(mu[i_up + 1])
        a, b = x1[i_up], x1[i_up + 1]
        upper = float(mu[i_up] + (x0 - a) / (b - a) * (mu[i_up + 1] - mu[i_up]))
    return lower, upper


def fc_statistic_cdf(c: float, mu: float) -> float:
    """P(t <= c) for x ~ N(mu, 1), in closed form.

    {t <= c} is an interval [xa, xb] in x: t falls on x <= mu and rises on x >= mu, t(mu) = 0.
    Upper end: xb = mu + sqrt(c). Lower end: xa = mu - sqrt(c) while that is >= 0 (c <= mu^2);
    otherwise it lies on the linear branch x < 0, mu^2 - 2 xa mu = c, xa = (mu^2 - c) / (2 mu)
    (-inf at mu = 0, where t = 0 for every x < 0). So P = Phi(sqrt(c)) - Phi(xa - mu).
    """
    c = float(c)
    mu = float(mu)
    if c < 0:
        return 0.0
    r = math.sqrt(c)
    if c <= mu * mu:
        xa = mu - r
    elif mu > 0:
        xa = (mu * mu - c) / (2.0 * mu)
    else:
        xa = -math.inf
    return float(ndtr(r) - ndtr(xa - mu))


def fc_critical_value(mu: float, cl: float = 0.9) -> float:
    """Critical value t_c(mu): cl-quantile of t(x; mu) = (x-mu)^2 - (x-max(0,x))^2, x ~ N(mu, 1).

    Found by root finding (brentq, xtol 1e-14) on ``fc_statistic_cdf(c, mu) = cl``. Since
    t <= (x - mu)^2 always and {t <= c} ends at x = mu + sqrt(c), it is bracketed by
    Phi^-1(cl)^2 <= t_c(mu) <= chi2_1^-1(cl), the two limits:

    * t_c(0) = Phi^-1(0.9)^2 ~= 1.642 (at mu = 0, t = max(x, 0)^2: P(t <= c) = Phi(sqrt(c)));
    * t_c(mu -> inf) -> chi2.ppf(0.9, 1) ~= 2.706 (the boundary no longer matters; exact once
      t_c <= mu^2, i.e. from mu ~ 1.65 on at 90 %).

    The FC interval for x0 is {mu >= 0 : t(x0; mu) <= t_c(mu)}.
    """
    cl = _check_cl(cl)
    mu = float(mu)
    if mu < 0:
        raise ValueError("mu must be >= 0")
    lo = float(norm.ppf(cl)) ** 2
    hi = float(chi2.ppf(cl, 1))

    def f(c):
        return fc_statistic_cdf(c, mu) - cl

    if f(lo) >= 0:
        return lo
    if f(hi) <= 0:  # P(t <= c) >= chi2 cdf analytically: only rounding puts it below
        return hi
    return float(brentq(f, lo, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=200))


# -------------------------------------------------------------------------------------------------
# Poisson signal with known background: Feldman & Cousins (1998), Sec. IV A and Table IV.
def _poisson_pmf(n, lam):
    from scipy.stats import poisson

    return poisson.pmf(n, lam)


def fc_poisson_acceptance(mu: float, b: float, cl: float = 0.9, n_max: int = 200) -> np.ndarray:
    """FC's acceptance region in n for the signal mean ``mu`` (Sec. IV A): the counts ranked by
    R(n) = P(n | mu + b) / P(n | mu_best + b), mu_best = max(0, n - b), added in decreasing R until
    their probability reaches ``cl``. Returns a boolean mask over n = 0 ... n_max. Ties in R (none
    occur for b > 0 and mu on a generic grid) are added together."""
    n = np.arange(n_max + 1)
    p = _poisson_pmf(n, mu + b)
    best = np.maximum(0.0, n - b)
    r = p / _poisson_pmf(n, best + b)
    order = np.argsort(-r, kind="stable")
    cum = np.cumsum(p[order])
    k = int(np.searchsorted(cum, cl - 1e-12)) + 1
    accept = np.zeros(n_max + 1, dtype=bool)
    accept[order[:k]] = True
    return accept


def fc_poisson_interval(n0: int, b: float, cl: float = 0.9, mus=None) -> tuple:
    """The FC interval for ``n0`` observed counts over the grid ``mus`` (default: 0 ... 20 in steps
    of 0.005): the lowest and highest mu whose acceptance region holds n0 (Table IV's entries, to
    the grid's resolution). An independent Neyman construction with exact Poisson probabilities."""
    mus = np.arange(0.0, 20.0 + 1e-9, 0.005) if mus is None else np.asarray(mus, dtype=float)
    acc = np.array([fc_poisson_acceptance(m, b, cl)[n0] for m in mus])
    if not acc.any():
        return (None, None)
    idx = np.nonzero(acc)[0]
    return float(mus[idx[0]]), float(mus[idx[-1]])


def cls_poisson(mu: float, n0: int, b: float) -> float:
    """CLs of a one-bin counting experiment with known background b (Read, J. Phys. G 28 (2002)
    2693): with q~ ordering (Cowan et al. 2011, Eq. 16) p_{s+b} = P(n <= n0 | mu + b) and
    1 - p_b = P(n <= n0 | b) where n0 < mu + b, so CLs = F(n0; mu + b) / F(n0; b)."""
    from scipy.stats import poisson

    return float(poisson.cdf(n0, mu + b) / poisson.cdf(n0, b))
