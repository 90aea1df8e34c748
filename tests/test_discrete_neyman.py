"""Neyman constructions on discrete data: a one-bin counting experiment written by a user through
the model protocol (known background b = 3, signal mu >= 0). Feldman–Cousins from toys equals the
exact construction of Feldman & Cousins (PRD 57 (1998) 3873, Sec. IV A, Table IV; computed here
with exact Poisson probabilities, tests/fc_reference.py) wherever the toys can tell, and CLs from
toys equals its closed form F(n0; mu + b) / F(n0; b)."""
import dataclasses
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.inference import cls_upper_limit, feldman_cousins
from nuejax.inference.construction import ACCEPT_TOL
from nuejax.model import AbstractModel, Parameter, ParameterSet

sys.path.insert(0, str(Path(__file__).parent))
from fc_reference import cls_poisson, fc_poisson_acceptance  # noqa: E402

B = 3.0
CL = 0.9


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class OneBin(AbstractModel):
    """n ~ Poisson(mu + b): one bin, a known background, a signal strength bounded at 0."""

    b: jax.Array
    parameters: ParameterSet = dataclasses.field(metadata=dict(static=True))

    def expected(self, p):
        return jnp.atleast_1d(self.b + p["mu"])


MODEL = OneBin(jnp.asarray(B), ParameterSet((Parameter("mu", 1.0, 0.0, 50.0),)))


def _exact(n0: int, mu: float, n_toys: int):
    """Whether n0 lies in the exact acceptance region at mu, and whether toys of this size can
    tell: the probability of the counts ranked before n0 is not within 3 standard errors of CL."""
    from scipy.stats import poisson

    accept = fc_poisson_acceptance(mu, B, CL)
    n = np.arange(accept.size)
    p = poisson.pmf(n, mu + B)
    r = p / poisson.pmf(n, np.maximum(0.0, n - B) + B)
    before = float(np.sum(p[r > r[n0]]))  # the counts the ordering adds before n0
    tell = abs(before - CL) > 3.0 * np.sqrt(CL * (1 - CL) / n_toys)
    return bool(accept[n0]), tell


def _compare(n0: int, grid, accepted, n_toys: int):
    """The exact acceptance of ``n0`` at each point of ``grid`` and whether toys of this size can
    tell it (:func:`_exact`); asserts ``accepted`` equals it wherever they can."""
    exact = np.array([_exact(n0, float(mu), n_toys) for mu in grid], dtype=bool)
    want, tell = exact[:, 0], exact[:, 1]
    disagree = np.asarray(grid)[tell & (np.asarray(accepted) != want)]
    assert disagree.size == 0, (n0, disagree)
    return want, tell


def _check(n0: int, grid, n_toys: int, key: int):
    r = feldman_cousins(MODEL, np.array([float(n0)]), "mu", grid, n_toys, key=key)
    assert np.all(r.n_valid == n_toys) and np.all(r.discrete)
    return (r,) + _compare(n0, r.axes[0], r.accepted, n_toys)


@pytest.mark.slow
def test_feldman_cousins_equals_table_iv_on_discrete_counts():
    """n0 = 6 (Table IV: [0.15, 8.46]) near both ends, grid step 0.05, 4000 toys per point: every
    grid point whose acceptance the toys can tell matches the exact construction, and the interval
    ends lie on the grid points where acceptance changes (no interpolation across the jump)."""
    grid = np.round(np.concatenate([np.arange(0.0, 0.5, 0.05), np.arange(7.8, 8.75, 0.05)]), 10)
    r, want, tell = _check(6, grid, 4000, key=11)
    lo, hi = r.regions[0][0], r.regions[-1][1]
    assert lo in grid and hi in grid  # ends on grid points
    # each end lies between the last point the toys surely exclude and the first they surely accept
    low, high = grid < 4.0, grid > 4.0
    assert grid[low & tell & ~want].max() < lo <= grid[low & tell & want].min(), lo
    assert grid[high & tell & want].max() <= hi < grid[high & tell & ~want].min(), hi
    assert abs(lo - 0.155) < 0.2 and abs(hi - 8.465) < 0.2  # Table IV: [0.15, 8.46]
    # the order statistic accepts at least CL of the toys; an interpolated quantile (the earlier
    # rule) can accept less on discrete values: 899 of 999 toys at 0 (89.99 %), the rest at 1
    from nuejax.inference.construction import critical_value

    t = np.array([0.0] * 899 + [1.0] * 100)
    assert np.mean(t <= critical_value(t, 0.9)[0]) >= 0.9
    assert np.mean(t <= np.quantile(t, 0.9)) < 0.9


ROW_GRID = np.round(np.arange(0.0, 15.0 + 1e-9, 0.05), 10)
ROW_TOYS = 4000


@pytest.fixture(scope="module")
def belt():
    """One Feldman–Cousins construction on the grid of the every-row test: its toys and critical
    values do not depend on the observed count (no nuisance is profiled on the data; the toys at a
    grid point are drawn at that point), so every row reads its acceptance off this one belt."""
    return _check(1, ROW_GRID, ROW_TOYS, key=101)


@pytest.mark.slow
@pytest.mark.parametrize("n0", range(1, 11))
def test_feldman_cousins_table_iv_every_row(belt, n0):
    """Every row n0 = 1 ... 10 of Table IV (b = 3) on a grid of step 0.05 with 4000 toys per point:
    a row's observed statistic (the package's, from a run with one toy per point) against the
    belt's critical values equals the exact acceptance wherever the toys can tell."""
    r1, _, _ = belt
    r = feldman_cousins(MODEL, np.array([float(n0)]), "mu", ROW_GRID, 1, key=7)
    np.testing.assert_array_equal(r.axes[0], r1.axes[0])
    if n0 == 1:  # the belt's own observed statistic is the one this run computes
        np.testing.assert_allclose(r.t_obs, r1.t_obs, rtol=0, atol=1e-9)
    accepted = np.asarray(r.t_obs) <= np.asarray(r1.t_crit) + ACCEPT_TOL  # the rule of fc_assemble
    want, tell = _compare(n0, r1.axes[0], accepted, ROW_TOYS)
    assert tell.mean() > 0.8  # most points are decided by the toys: the check is not vacuous
    assert want.any() and (~want).any()  # the row's interval is inside the grid: both outcomes occur


@pytest.mark.slow
def test_cls_from_toys_equals_the_closed_form():
    """CLs = F(n0; mu + b) / F(n0; b) for n0 = 2 counts (Read 2002), from 4000 toys per value and
    4000 background-only toys, within 3 standard errors at every tested value; the limit where it
    crosses 1 - CL within the toys' precision of the closed-form limit."""
    from scipy.optimize import brentq

    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    r = cls_upper_limit(MODEL, np.array([2.0]), "mu", values, n_toys=4000, key=5)
    exact = np.array([cls_poisson(mu, 2, B) for mu in values])
    from scipy.stats import poisson

    p_sb = poisson.cdf(2, values + B)
    p_b = poisson.cdf(2, B)
    err = np.sqrt(p_sb * (1 - p_sb) / 4000) / p_b + exact * np.sqrt(p_b * (1 - p_b) / 4000) / p_b
    assert np.all(np.abs(r.cls - exact) < 3 * err + 1e-12), (r.cls, exact, err)
    limit = brentq(lambda mu: cls_poisson(mu, 2, B) - (1 - CL), 0.5, 10.0)
    assert r.limit == pytest.approx(limit, abs=0.35), (r.limit, limit)


def test_a_construction_fits_its_toys_in_the_passes_of_its_size(monkeypatch, tmp_path):
    """The passes of a construction (toys.passes of the run's number of toys: one uncapped pass on
    an accelerator for a small run) are stored in its configuration and are the ones its toy fits
    run: a stand-in scheme chosen by size reaches every kernel the construction builds, and the
    run's size reaches toys.passes."""
    from nuejax.inference import toys

    asked, used = [], []
    real_kernels = toys.pass_kernels
    sizes = {}

    def passes(n_rows=None):
        asked.append(n_rows)
        sizes.setdefault(n_rows, ((None, 1),) + ((None, 2 + len(sizes)),) * (len(toys.CPU_PASSES) - 1))  # one per size
        return sizes[n_rows] if n_rows is not None else toys.CPU_PASSES

    def kernels(*args, scheme=None, **kw):
        used.append(scheme)
        return real_kernels(*args, scheme=scheme, **kw)

    monkeypatch.setattr(toys, "passes", passes)
    monkeypatch.setattr(toys, "pass_kernels", kernels)
    grid = np.array([1.0, 3.0])
    feldman_cousins(MODEL, np.array([4.0]), "mu", grid, 50, key=2, out=tmp_path)
    assert len(grid) * 50 in asked  # the run's size
    want = sizes[len(grid) * 50]
    stored = json.loads((tmp_path / "manifest.json").read_text())["config"]["passes"]
    assert tuple(tuple(p) for p in stored) == want
    assert want in used  # the toys' kernels (the start designs' Asimov fits ask with their own size)
    assert all(s in sizes.values() for s in used)
