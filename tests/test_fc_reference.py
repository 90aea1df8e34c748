"""Checks of the independent Feldman-Cousins reference (tests/fc_reference.py).

* the Neyman construction reproduces the Table X rows of Feldman & Cousins (1998);
* the critical value t_c(mu) has its two known limits and is the cl-quantile of t;
* accepting mu iff t(x0; mu) <= t_c(mu) gives the same intervals as the Neyman construction.
"""
import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import chi2, norm

from fc_reference import (
    FC_TABLE_90,
    FC_TABLE_X_OTHER_CL,
    MU_STEP,
    fc_critical_value,
    fc_gaussian_interval,
    fc_statistic,
)

TABLE_TOL = 0.005 + MU_STEP  # two-decimal table + grid step of the construction
ROUTE_TOL = 1e-5  # the two routes agree far below the grid step (interpolated belt edges: ~1e-6)


@pytest.mark.parametrize("x0", sorted(FC_TABLE_90))
def test_construction_reproduces_table_x_90(x0):
    lower, upper = fc_gaussian_interval(x0, 0.9)
    t_lower, t_upper = FC_TABLE_90[x0]
    assert abs(lower - t_lower) <= TABLE_TOL, (x0, lower, t_lower)
    assert abs(upper - t_upper) <= TABLE_TOL, (x0, upper, t_upper)


@pytest.mark.parametrize(
    "cl, x0", [(cl, x0) for cl, rows in FC_TABLE_X_OTHER_CL.items() for x0 in sorted(rows)]
)
def test_construction_reproduces_table_x_other_cl(cl, x0):
    lower, upper = fc_gaussian_interval(x0, cl)
    t_lower, t_upper = FC_TABLE_X_OTHER_CL[cl][x0]
    assert abs(lower - t_lower) <= TABLE_TOL, (cl, x0, lower, t_lower)
    assert abs(upper - t_upper) <= TABLE_TOL, (cl, x0, upper, t_upper)


def test_critical_value_limits():
    assert abs(fc_critical_value(0.0) - norm.ppf(0.9) ** 2) < 1e-9
    assert abs(fc_critical_value(8.0) - chi2.ppf(0.9, 1)) < 1e-6
    # in between it stays within the two limits, rising with mu
    tc = [fc_critical_value(mu) for mu in (0.0, 0.5, 1.0, 1.5, 2.0)]
    assert np.all(np.diff(tc) >= -1e-12)
    assert norm.ppf(0.9) ** 2 - 1e-12 <= min(tc) and max(tc) <= chi2.ppf(0.9, 1) + 1e-12


@pytest.mark.parametrize("mu", [0.0, 0.3, 1.0, 1.4, 3.0])
def test_critical_value_is_the_quantile_of_t(mu):
    """P(t <= t_c) = cl, counted on a stratified N(mu, 1) sample (no closed form involved)."""
    n = 1_000_000
    x = mu + norm.ppf((np.arange(n) + 0.5) / n)
    frac = np.mean(fc_statistic(x, mu) <= fc_critical_value(mu, 0.9))
    assert abs(frac - 0.9) < 1e-5


def _interval_from_critical_value(x0, cl=0.9):
    """{mu >= 0 : t(x0; mu) <= t_c(mu)}, its ends by root finding on t - t_c."""

    def h(mu):
        return float(fc_statistic(x0, mu)) - fc_critical_value(mu, cl)

    mu_hat = max(0.0, x0)  # t(x0; mu_hat) = 0: always accepted
    upper = brentq(h, mu_hat, mu_hat + 10.0, xtol=1e-12)
    lower = 0.0 if h(0.0) <= 0 else brentq(h, 0.0, mu_hat, xtol=1e-12)
    return lower, upper


def test_two_routes_agree():
    worst = 0.0
    for x0 in np.round(np.arange(-3.0, 3.15, 0.1), 1):
        a = fc_gaussian_interval(x0, 0.9)
        b = _interval_from_critical_value(x0, 0.9)
        worst = max(worst, abs(a[0] - b[0]), abs(a[1] - b[1]))
        assert abs(a[0] - b[0]) <= ROUTE_TOL and abs(a[1] - b[1]) <= ROUTE_TOL, (x0, a, b)
    assert worst <= ROUTE_TOL


@pytest.mark.parametrize("x0", [-2.0, 0.7, 1.5, 2.9])
def test_accepted_set_by_critical_value_is_the_interval(x0):
    """Scan mu: the mu with t(x0; mu) <= t_c(mu) form one interval, the construction's."""
    lower, upper = fc_gaussian_interval(x0, 0.9)
    step = 0.01
    mu = np.arange(0.0, upper + 0.5, step)
    acc = np.array([fc_statistic(x0, m) <= fc_critical_value(m, 0.9) for m in mu])
    idx = np.flatnonzero(acc)
    assert idx.size == idx[-1] - idx[0] + 1  # contiguous
    assert abs(mu[idx[0]] - lower) <= step and abs(mu[idx[-1]] - upper) <= step


def test_lower_limit_leaves_zero_at_phi_inverse_cl():
    x_edge = norm.ppf(0.9)  # acceptance region of mu = 0 is (-inf, Phi^-1(cl)]
    assert fc_gaussian_interval(x_edge - 0.01)[0] == 0.0
    assert fc_gaussian_interval(x_edge + 0.01)[0] > 0.0
