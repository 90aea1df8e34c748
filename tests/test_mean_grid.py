"""The Gaussian fold through a grid of means (nuejax.detector.mean_grid): agreement with the exact
fold, the interpolation's order, its closed-form derivatives against autodiff and the exact fold,
the grid's coverage, and the floating-response model's ``fold="grid"`` against ``fold="exact"``.

Synthetic nodes (no model build) except the last tests, which reuse the session's small model.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.detector.mean_grid import (DEFAULT_STEP, ERROR_PER_WEIGHT, TAIL_Z, _contract, _deposit, _grid_sums,
                                       _width_jacobian, grid_fold, hermite_basis, mean_grid)
from nuejax.detector.response import ResponseParams, gaussian_fold, unit_bin_edges
from nuejax.errors import InputError

EDGES = unit_bin_edges(90, 400)
SHORT = unit_bin_edges(90, 150)  # for the derivative-rule checks (compile time)
WIDTHS = [(0.0, 0.0), (5.0, 0.01), (200.0, 0.1)]


@pytest.fixture(scope="module")
def nodes():
    rng = np.random.default_rng(7)
    mu = rng.uniform(0.0, 700.0, 1500)
    w = rng.uniform(0.2, 1.8, 1500)
    return jnp.asarray(w), jnp.asarray(mu)


def _exact(w, mu, v0, v1):
    return gaussian_fold(w, mu, mu + v0 + (v1 * mu) ** 2, EDGES)


def _grid(w, mu, v0, v1, step):
    g = mean_grid(float(jnp.max(mu)), float(EDGES[-1]), step)
    return grid_fold(w, mu, ResponseParams(500.0, 0.011, v0, v1), EDGES, g)


def test_hermite_basis_reproduces_quintics():
    """The six basis polynomials interpolate any polynomial of degree <= 5 exactly from its value,
    slope and curvature at both ends of the cell."""
    rng = np.random.default_rng(0)
    c = rng.normal(size=6)
    f = np.polynomial.Polynomial(c)
    h, x0 = 0.7, 1.3
    u = np.linspace(0, 1, 11)
    H = hermite_basis(u)
    d = [f, f.deriv(1), f.deriv(2)]
    got = sum(h**k * (H[k] * d[k](x0) + H[3 + k] * d[k](x0 + h)) for k in range(3))
    np.testing.assert_allclose(got, f(x0 + h * u), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("v0, v1", WIDTHS)
@pytest.mark.slow
def test_grid_fold_matches_exact_fold(nodes, v0, v1):
    """Within the module's bound (ERROR_PER_WEIGHT step**6 per unit weight), and converging at
    sixth order: halving the step cuts the error by ~64 (at least 32 asked)."""
    w, mu = nodes
    exact = np.asarray(_exact(w, mu, v0, v1))
    err = {s: np.max(np.abs(np.asarray(_grid(w, mu, v0, v1, s)) - exact)) for s in (0.6, DEFAULT_STEP)}
    assert err[DEFAULT_STEP] <= ERROR_PER_WEIGHT * DEFAULT_STEP**6 * float(jnp.sum(w))
    assert err[DEFAULT_STEP] < 1e-7 * np.max(exact)  # the documented accuracy
    assert err[0.6] / err[DEFAULT_STEP] > 32


@pytest.mark.slow
def test_closed_form_width_jacobian_equals_autodiff():
    g = mean_grid(600.0, float(SHORT[-1]))
    W = jnp.asarray(np.random.default_rng(1).normal(size=(3, g.size)))
    for v in ([5.0, 0.01], [0.0, 0.0], [300.0, 0.15]):
        v = jnp.asarray(v)
        want = jax.jacfwd(lambda y: _contract(W, y, g.mean, SHORT))(v)
        got = _width_jacobian(W, v, g.mean, SHORT)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11 * float(jnp.max(jnp.abs(want))))


@pytest.mark.slow
def test_grid_sums_rule_equals_autodiff():
    """The custom derivative of the grid sums equals plain autodiff of the same sums; its second
    order equals finite differences of the first."""
    g = mean_grid(600.0, float(SHORT[-1]))
    rng = np.random.default_rng(2)
    W, v = jnp.asarray(rng.normal(size=(3, g.size))), jnp.asarray([5.0, 0.02])
    r = jnp.asarray(rng.normal(size=SHORT.shape[0]))

    def f(fn, W, v):
        return jnp.dot(r, fn(W, v, g.mean, SHORT))

    for argnums in (0, 1):
        a = jax.grad(lambda *x: f(_grid_sums, *x), argnums)(W, v)
        b = jax.grad(lambda *x: f(_contract, *x), argnums)(W, v)
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11 * float(jnp.max(jnp.abs(b))))
    # second order (the rule differentiated again): against central differences of the gradient
    gv = jax.jit(jax.grad(lambda v: f(_grid_sums, W, v)))
    Ha = jax.hessian(lambda v: f(_grid_sums, W, v))(v)
    steps = np.array([1e-3, 1e-6])
    Hb = np.stack([(gv(v.at[i].add(steps[i])) - gv(v.at[i].add(-steps[i]))) / (2 * steps[i]) for i in range(2)])
    np.testing.assert_allclose(Ha, Hb, rtol=1e-5, atol=1e-7 * float(np.max(np.abs(Hb))))


@pytest.mark.slow
def test_grid_fold_gradient_matches_exact_fold(nodes):
    """The gradient of a weighted sum of the fold in the node weights, node means and both variance
    terms: the grid fold's equals the exact fold's (to 1e-6 of its largest component)."""
    w, mu = nodes
    r = jnp.asarray(np.random.default_rng(3).uniform(size=EDGES.shape[0] - 1))
    v = jnp.asarray([20.0, 0.03])
    g = mean_grid(float(jnp.max(mu)) * 1.1, float(EDGES[-1]))

    def by_grid(w, mu, v):
        return jnp.dot(r, grid_fold(w, mu, ResponseParams(500.0, 0.011, v[0], v[1]), EDGES, g))

    def by_exact(w, mu, v):
        return jnp.dot(r, _exact(w, mu, v[0], v[1]))

    ga = jax.grad(by_grid, (0, 1, 2))(w, mu, v)
    gb = jax.grad(by_exact, (0, 1, 2))(w, mu, v)
    for a, b in zip(ga, gb):
        assert np.all(np.isfinite(np.asarray(a)))
        np.testing.assert_allclose(a, b, atol=1e-6 * float(jnp.max(jnp.abs(b))))


def test_grid_spacing_and_coverage():
    """Cells no wider than step * max(sqrt(mu), (mu - top) / TAIL_Z) at their left end, beyond
    mu_max; a node above the grid's top is dropped."""
    top, mu_max = 950.5, 12000.0
    g = mean_grid(mu_max, top)
    m = np.asarray(g.mean)
    assert m[0] == 0.0 and m[-1] > mu_max and np.all(np.diff(m) > 0)
    h, left = np.diff(m), m[:-1]
    s = DEFAULT_STEP
    # uniform in 2 sqrt(mu) up to the top edge (width step sqrt(mu_left) + step^2 / 4), wider beyond
    assert np.all(h <= s * np.maximum(np.sqrt(left), (left - top) / TAIL_Z) + s * s / 4 * (1 + 1e-9))
    assert m.size < 400  # 731 points if uniform in 2 sqrt(mu) to mu_max
    W = _deposit(jnp.ones(2), jnp.asarray([100.0, 2.0 * m[-1]]), g)
    assert float(jnp.sum(W[0])) == pytest.approx(1.0, abs=1e-12)


def test_bad_grid_arguments():
    with pytest.raises(ValueError, match="step"):
        mean_grid(100.0, 50.0, step=1.5)
    with pytest.raises(ValueError, match="mu_max"):
        mean_grid(math.nan, 50.0)
    with pytest.raises(ValueError, match="differ in shape"):
        grid_fold(jnp.ones(3), jnp.ones(4), ResponseParams(), EDGES, mean_grid(10.0, 5.0))


# -- the floating-response model --------------------------------------------------------------
@pytest.fixture(scope="module")
def floating_pair(small_model):
    from nuejax.model.floating import floating_response_model

    return (floating_response_model(small_model, fast=True),
            floating_response_model(small_model, fast=True, fold="exact"))


# The default point runs in the default job; the two off-default points (8-9 s each on 2 cores, the
# default run's time limit) run in the slow job.
POINTS = [{}, pytest.param(dict(light_yield=540.0, kB=0.012, var_const=20.0, var_rel=0.03, eps_ee_L=0.1),
                           marks=pytest.mark.slow),
          pytest.param(dict(light_yield=640.0, kB=0.0051, var_const=900.0, var_rel=0.19), marks=pytest.mark.slow)]


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
def test_floating_model_grid_equals_exact(floating_pair, point):
    """Expected spectra to 1e-7, -2 ln L to 1e-4 and its gradient to 1e-5 between the two folds
    (the small model: 5 spectra on 200 recoil bins, 861 N_p bins)."""
    grid, exact = floating_pair
    p = grid.parameters.values(point)
    a, b = np.asarray(grid.expected(p)), np.asarray(exact.expected(p))
    assert np.max(np.abs(a / b - 1.0)) < 1e-7
    data = jnp.asarray(np.random.default_rng(4).poisson(b).astype(float))
    assert abs(float(grid.nll(p, data) - exact.nll(p, data))) < 1e-4
    names = grid.parameters.free_names
    x = jnp.stack([p[n] for n in names])

    def grad_of(model):
        return jax.grad(lambda x: model.nll({**p, **dict(zip(names, x))}, data))(x)

    ga, gb = grad_of(grid), grad_of(exact)
    np.testing.assert_allclose(ga, gb, rtol=1e-5, atol=1e-6 * float(jnp.max(jnp.abs(gb))))


def test_floating_model_grid_follows_bounds(small_model, floating_pair):
    """with_parameters rederives the grid from a new light-yield bound; a typo in ``fold``, a bad
    step and a negative var_const bound with the grid fold are errors."""
    from nuejax.model import FloatingFold
    from nuejax.model.floating import floating_response_model

    grid, exact = floating_pair
    m = grid.with_parameters(grid.parameters.update("light_yield", upper=800.0))
    fold = lambda model: model.stage(FloatingFold)  # noqa: E731
    assert float(fold(m).grid.mean[-1]) > 1.2 * float(fold(grid).grid.mean[-1])
    assert fold(exact.with_parameters(exact.parameters.update("light_yield", upper=800.0))).grid is None
    with pytest.raises(InputError, match="fold must be one of"):
        floating_response_model(small_model, fast=True, fold="grd")
    with pytest.raises(InputError, match="grid_step"):
        floating_response_model(small_model, fast=True, grid_step=0.0)
    with pytest.raises(InputError, match="var_const >= 0"):
        grid.with_parameters(grid.parameters.update("var_const", lower=-1.0))


def test_lookup_methods_agree(nodes, monkeypatch):
    """The unrolled binary search used on GPUs finds the same cells and bins as the default one."""
    import nuejax.detector.response as R

    w, mu = nodes
    want = np.asarray(_grid(w, mu, 5.0, 0.01, DEFAULT_STEP)), np.asarray(_exact(w, mu, 5.0, 0.01))
    monkeypatch.setitem(R.SEARCH_METHODS, jax.default_backend(), "scan_unrolled")
    assert R.search_method() == "scan_unrolled"
    np.testing.assert_array_equal(np.asarray(_grid(w, mu, 5.0, 0.01, DEFAULT_STEP)), want[0])
    np.testing.assert_array_equal(np.asarray(_exact(w, mu, 5.0, 0.01)), want[1])
