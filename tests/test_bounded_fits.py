"""Fits that are right at bounds: the bound-constrained Newton solver and its KKT test, batch_fit
against two independent minimisers on Poisson toys, MIGRAD finished at bounds, one-sided errors
and upper limits at the physical boundary, results saved and loaded, goodness of fit, user models."""

import dataclasses
import json
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from iminuit import Minuit
from scipy.optimize import minimize
from scipy.special import xlogy

from nuejax.errors import ModelProtocolError, ParameterError
from nuejax.inference import (FitResult, NLLCost, Scan2DResult, ScanResult, batch_fit, fit, goodness_of_fit, kkt,
                              load_result, minimize_bounded, newton_fit, newton_minimize, profile_scan, profile_scan_2d,
                              saturated_deviance)
from nuejax.model import AbstractModel, Exposure, Parameter, ParameterSet, poisson_nll
from nuejax.model.fast import fast_model


@pytest.fixture(scope="module")
def fast_mu(small_model):
    """Fast path with mu_nu (bounded at 0) free; general model beside it."""
    m = small_model.with_parameters(small_model.parameters.release("mu_nu"))
    return m, fast_model(m)


@pytest.fixture(scope="module")
def low_exposure(fast_mu):
    """3 day x 100 t and a low 85Kr rate: background rates and mu_nu reach their zero bound."""
    _, fm = fast_mu
    exposure = fm.stage(Exposure)
    fm = fm.replace_stage(exposure, dataclasses.replace(exposure, exposure=3.0))
    return fm, fm.parameters.values(rate_85Kr=1.0)


# -- the solver on problems with known answers ----------------------------------------------------
def test_solver_box_quadratic_and_rosenbrock():
    w = jnp.array([1.0, 1e6, 1e-2])
    f = lambda x, a: jnp.sum(w * (x - a) ** 2)  # noqa: E731
    target = jnp.array([-1.0, 2.0, 0.3])
    r = minimize_bounded(f, jnp.full(3, 0.5), target, [0, 0, 0], [1, 1, 1])
    # diagonal quadratic: the solution is the target clipped to the box
    np.testing.assert_allclose(np.asarray(r.x), [0.0, 1.0, 0.3], atol=1e-4)
    assert bool(r.converged) and list(np.asarray(r.at_lower)) == [True, False, False]
    assert list(np.asarray(r.at_upper)) == [False, True, False]
    rb = lambda x, _: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2  # noqa: E731
    r = minimize_bounded(rb, jnp.array([-1.2, 1.0]), None, [-2, -2], [0.5, 2])
    # constrained Rosenbrock: x0 on its upper bound 0.5, x1 = x0^2
    np.testing.assert_allclose(np.asarray(r.x), [0.5, 0.25], atol=1e-5)
    assert bool(r.converged) and bool(r.at_upper[0])


def test_a_step_out_of_the_box_is_solved_again_on_the_subspace():
    """A correlated quadratic whose free minimum lies outside the box in x0: the first Newton step
    stops x0 on its bound and solves x1's step again with x0 held there (newton.py, step 3), so
    the constrained minimum x1 = a1 - (A01/A11)(1 - a0) is reached in one step; clipping alone
    left x1 where the unclipped step put it and took three."""
    A = jnp.array([[1.0, 0.95], [0.95, 1.0]])
    a = jnp.array([2.0, -1.0])
    f = lambda x, _: (x - a) @ A @ (x - a)  # noqa: E731
    r = minimize_bounded(f, jnp.zeros(2), None, [-1.0, -5.0], [1.0, 5.0])
    exact = jnp.array([1.0, float(a[1] - 0.95 * (1.0 - a[0]))])
    assert bool(r.converged) and bool(r.at_upper[0]) and int(r.n_iter) == 1
    assert float(r.fun) - float(f(exact, None)) < 1e-8  # the EDM tolerance (λ damps the step)
    np.testing.assert_allclose(np.asarray(r.x), np.asarray(exact), atol=1e-4)


def test_solver_leaves_a_saddle_on_the_bound_and_stops_at_a_flat_bound_minimum():
    # f = -x^2 + x^4 from x = 0 (on the bound): gradient 0, curvature < 0 -> must move to 1/sqrt(2)
    r = minimize_bounded(lambda x, _: -x[0] ** 2 + x[0] ** 4, jnp.array([0.0]), None, [0.0], [5.0])
    assert bool(r.converged) and float(r.x[0]) == pytest.approx(2**-0.5, rel=1e-5)
    # f = x^4 (the mu_nu case on data without a moment): minimum on the bound, curvature 0
    r = minimize_bounded(lambda x, _: x[0] ** 4 + (x[1] - 0.3) ** 2, jnp.array([0.0, 0.0]), None, [0, -1], [10, 1])
    assert bool(r.converged) and float(r.x[0]) == 0.0 and bool(r.at_lower[0])


def test_a_step_along_negative_curvature_is_not_pushed_past_the_minimum():
    """-2 ln L of mu_nu goes as mu_nu^2 and mu_nu^4 (here 10 (x0^2 - 0.76)^2, coupled to x1): from
    the saddle x0 = 0 the solver steps off, and the next point still curves down along a direction
    whose gradient is not zero. There the saddle-free step already goes downhill; a full scaled unit
    added to it overshot the minimum and was rejected until the damping grew (12 iterations
    before, on the XENONnT toy fits 7 rejections in a row; newton.py, step 2)."""
    f = lambda x: 10 * (x[0] ** 2 - 0.76) ** 2 + 2 * (x[1] - 0.3 * x[0] ** 2) ** 2  # noqa: E731
    r = newton_minimize(f, jnp.zeros(2), [0, -5], [100, 5])
    assert bool(r.converged) and np.asarray(r.x) == pytest.approx([0.76**0.5, 0.228], abs=1e-4)
    assert int(r.n_iter) <= 8


def test_a_flat_curved_valley_is_followed_without_crawling():
    """Rosenbrock's valley with its floor flattened to 10⁻⁴ (the paper workload's NSI couplings:
    smallest scaled curvature 10⁻⁷, benchmarks/NOTES.md). A rejected step there sets the next
    step's length (newton.py, step 4): from (-2, 4) the minimum (1, 1) is reached in 1280
    iterations. Damping raised to at least 1 by every rejection shortened the step along the
    valley a millionfold: still at x = 0.94 after 2000 iterations."""
    f = lambda z: 100.0 * (z[1] - z[0] ** 2) ** 2 + 1e-4 * (1.0 - z[0]) ** 2  # noqa: E731
    r = newton_minimize(f, jnp.array([-2.0, 4.0]), [-5, -5], [5, 30], n_iter=1500, tol=1e-12)
    assert bool(r.converged) and np.asarray(r.x) == pytest.approx([1.0, 1.0], abs=1e-3)


@pytest.mark.slow
def test_two_flat_bound_coordinates_forming_a_saddle_are_not_a_minimum():
    # each coordinate alone curves up at (0, 0), together they go down: f(0.8, 0.8) < 0
    f = lambda x: x[0] ** 2 + x[1] ** 2 - 4 * x[0] * x[1] + x[0] ** 4 + x[1] ** 4  # noqa: E731
    x0 = jnp.zeros(2)
    H = jax.hessian(f)(x0)
    assert not bool(kkt(x0, jax.grad(f)(x0), H, jnp.zeros(2), jnp.full(2, 10.0))[0])
    r = newton_minimize(f, x0, [0, 0], [10, 10])
    # the minimum: f = -1/2 at x0 = x1 = 2^-1/2; an EDM below the tolerance 1e-8 puts the end point
    # within sqrt(2e-8 / 4) = 7e-5 of it (the Hessian's smallest eigenvalue there is 4)
    assert bool(r.converged) and float(r.fun) == pytest.approx(-0.5, abs=1e-8)
    assert np.asarray(r.x) == pytest.approx([2**-0.5, 2**-0.5], abs=7.1e-5)


def test_kkt_test_rejects_points_that_are_not_minima():
    H = jnp.diag(jnp.array([2.0, 2.0]))
    lo, hi = jnp.zeros(2), jnp.ones(2)
    grad = lambda x: 2 * (x - jnp.array([-0.5, 0.4]))  # noqa: E731  minimum at (0, 0.4)
    assert bool(kkt(jnp.array([0.0, 0.4]), grad(jnp.array([0.0, 0.4])), H, lo, hi)[0])
    for x in ([0.1, 0.4], [0.0, 0.41], [1.0, 0.4], [0.5, 0.5]):
        x = jnp.array(x)
        assert not bool(kkt(x, grad(x), H, lo, hi)[0]), x
    # on a bound with the gradient pointing inward: not a minimum
    x = jnp.array([0.0, 0.4])
    assert not bool(kkt(x, jnp.array([-1.0, 0.0]), H, lo, hi)[0])
    # saddle: indefinite Hessian on the free subspace
    assert not bool(kkt(jnp.array([0.5, 0.5]), jnp.zeros(2), jnp.diag(jnp.array([1.0, -1.0])), lo, hi)[0])
    # iteration-limited run: never converged short of the minimum
    rb = lambda x, _: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2  # noqa: E731
    r = minimize_bounded(rb, jnp.array([-1.2, 1.0]), None, [-2, -2], [2, 2], max_iter=3)
    assert not bool(r.converged) and int(r.status) == 1


# -- toys: batch_fit against MIGRAD and L-BFGS-B ---------------------------------------------------
@pytest.mark.slow
def test_batch_fit_reaches_the_best_minimum_on_toys(low_exposure):
    """50 toys, each also fitted by MIGRAD and by L-BFGS-B (the references cost ~1 s a toy; the
    brute-force comparison on 100 multimodal toys is tests/test_global_minima.py's)."""
    n_toys = 50
    fm, truth = low_exposure
    toys = fm.pseudo_data(jax.random.PRNGKey(7), truth, n_toys=n_toys)
    batch_fit(fm, toys)  # compile (the batch size is part of the compiled shape)
    t0 = time.perf_counter()
    b = batch_fit(fm, toys)
    seconds = time.perf_counter() - t0
    names = b.names
    lo, hi = fm.parameters.bounds(names)
    worse, migrad_excess, migrad_invalid, lbfgsb_excess = [], [], 0, []
    for i in range(len(toys)):
        c = NLLCost(fm, toys[i])
        x0 = np.array([float(c.base[n]) for n in names])
        with pytest.warns(Warning, match="hessian overrides g2"):
            mi = Minuit(c, x0)
        mi.migrad()
        vg = lambda x, c=c: (c(x), c.grad(x))  # noqa: E731
        lb = minimize(vg, x0, jac=True, method="L-BFGS-B", bounds=list(zip(lo, hi)),
                      options=dict(maxiter=5000, ftol=1e-14, gtol=1e-9, maxfun=20000))
        best = min(mi.fval, lb.fun)
        worse.append(b.fval[i] - best)
        migrad_excess.append(mi.fval - min(best, b.fval[i]))
        lbfgsb_excess.append(lb.fun - min(best, b.fval[i]))
        migrad_invalid += not mi.valid
    worse = np.array(worse)
    on_bound = np.array([any(b.at_lower[n][i] or b.at_upper[n][i] for n in names) for i in range(len(toys))])
    print(f"\nbatch_fit: {n_toys} toys in {seconds:.3f} s; max(batch - best of MIGRAD, L-BFGS-B) = {worse.max():.2e}; "
          f"{on_bound.sum()} toys with a parameter on a bound; MIGRAD alone invalid on {migrad_invalid}, "
          f"up to {max(migrad_excess):.3g} above the minimum; L-BFGS-B up to {max(lbfgsb_excess):.3g} above")
    assert b.converged.all()
    assert worse.max() < 1e-3
    assert on_bound.sum() >= n_toys // 5  # the test exercises the bounds


@pytest.mark.slow
def test_batch_fit_flags_converged_only_at_minima(low_exposure):
    fm, truth = low_exposure
    toys = fm.pseudo_data(jax.random.PRNGKey(11), truth, n_toys=40)
    full = batch_fit(fm, toys)
    # max_iter=1: one iteration per launch, at most 1 + CONTINUE_PASSES in all
    short = batch_fit(fm, toys, max_iter=1, starts=1)
    assert full.converged.all()
    gap = short.fval - full.fval
    assert (~short.converged).sum() >= 5  # four iterations are not enough for many toys
    # every toy flagged converged after two iterations is at the minimum
    assert np.all(gap[short.converged] < 1e-6)


@pytest.mark.slow
def test_batch_fit_per_toy_starts_and_result(low_exposure):
    fm, truth = low_exposure
    toys = fm.pseudo_data(jax.random.PRNGKey(3), truth, n_toys=6)
    starts = np.linspace(0.9, 1.1, 6)
    b = batch_fit(fm, toys, {"norm_pp": starts})
    ref = batch_fit(fm, toys)
    np.testing.assert_allclose(b.fval, ref.fval, atol=1e-6)
    d = b.to_dict()
    assert json.loads(json.dumps(d, allow_nan=False))["names"] == list(b.names)
    assert "6 data sets" in str(b)


def test_small_toy_runs_take_one_uncapped_pass_on_accelerators(monkeypatch):
    """toys.passes: the CPU's passes on the CPU; on an accelerator for a run of at most
    ONE_PASS_ROWS toys, the capped first pass beyond (and for a run of unknown size)."""
    from nuejax.inference import toys

    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert toys.passes() == toys.passes(10**9) == toys.passes(1) == toys.CPU_PASSES
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert toys.passes(1) == toys.passes(toys.ONE_PASS_ROWS) == toys.CPU_PASSES
    assert toys.passes(toys.ONE_PASS_ROWS + 1) == toys.passes() == toys.PASSES
    assert toys.PASSES[0][0] == 10 and toys.CPU_PASSES[0][0] is None


@pytest.mark.slow
def test_asimov_fits_from_the_generating_point_alone_add_nothing(fast_mu, monkeypatch):
    """The toys' start designs skip the Asimov fits of a design that is its generating point u
    alone (toys._generating_point_only): a fit of the Asimov data set at u from u ends at u, which
    the design holds already. Run anyway (the skip switched off), at two generating points (one
    off the defaults: mu_nu > 0, a background rate raised), the conditional fits (mu_nu fixed)
    give the same designs, and with the skip no fit runs. Where a term's Asimov measurement does
    not move with u (a one-sided bound), the fits run and find a minimum away from u."""
    from nuejax.inference import toys
    from nuejax.inference.problem import FitProblem

    _, fm = fast_mu
    names = ("mu_nu",) + tuple(n for n in fm.parameters.free_names if n != "mu_nu")
    pr = FitProblem.create(fm, np.asarray(fm.expected(fm.parameters.defaults())), names=names)
    shell = dataclasses.replace(pr, data=None, aux_flat=None)
    x = np.repeat(np.array([[float(fm.parameters.defaults()[n]) for n in names]]), 2, axis=0)
    x[1, 0], x[1, 1] = 0.5, 1.2 * x[1, 1]
    full, base = x[:, None, 1:], [u[None, 1:] for u in x]
    assert toys._generating_point_only(full, x, 1) and not toys._generating_point_only(full + 1e-3, x, 1)
    launched = []
    real = toys.pass_kernels
    monkeypatch.setattr(toys, "pass_kernels", lambda *a, **k: launched.append(1) or real(*a, **k))
    skipped = toys._with_asimov_minima(shell, x, 1, full, base, 4, 100, 1e-8)
    assert launched == []
    monkeypatch.setattr(toys, "_generating_point_only", lambda *a: False)
    fitted = toys._with_asimov_minima(shell, x, 1, full, base, 4, 100, 1e-8)
    assert launched == [1]
    for a, b in zip(skipped, fitted):
        np.testing.assert_array_equal(a, b)
    # a one-sided bound's Asimov measurement is its threshold, not the value: with rate_210Bi above
    # it the fit from u moves to another minimum, so there the fits run (and the design grows)
    from nuejax.model.constraints import HalfGaussianConstraint

    bound = HalfGaussianConstraint.create("rate_210Bi", 0.8 * x[0, names.index("rate_210Bi")], 1.0)
    fm_b = dataclasses.replace(fm, constraints=(bound,))
    shell_b = dataclasses.replace(FitProblem.create(fm_b, pr.data, names=names), data=None, aux_flat=None)
    assert toys._asimov_minimum_at_truth(shell.model) and not toys._asimov_minimum_at_truth(shell_b.model)
    monkeypatch.undo()
    launched.clear()
    monkeypatch.setattr(toys, "pass_kernels", lambda *a, **k: launched.append(1) or real(*a, **k))
    moved = toys._with_asimov_minima(shell_b, x, 1, full, base, 4, 100, 1e-8)
    assert launched == [1] and any(len(d) > 1 for d in moved), moved


# -- MINUIT at bounds ------------------------------------------------------------------------------
def test_nllcost_value_call_costs_a_value(fast_mu):
    _, fm = fast_mu
    data = fm.asimov()
    c = NLLCost(fm, data)
    calls = []
    vg = c._vg_host  # the compiled value + gradient that grad calls
    c._vg_host = lambda *a: calls.append(1) or vg(*a)
    x = np.array([float(c.base[n]) for n in c.names])
    v = c(x)
    assert calls == [] and np.isfinite(v)
    g = c.grad(x)
    assert calls == [1] and c(x) == pytest.approx(v) and calls == [1]  # value reused from the gradient call
    assert g.shape == (len(c.names),)


@pytest.mark.slow
def test_migrad_fits_of_toys_at_bounds_are_valid_minima(low_exposure):
    fm, truth = low_exposure
    toys = fm.pseudo_data(jax.random.PRNGKey(7), truth, n_toys=3)
    b = batch_fit(fm, toys)
    for i in range(len(toys)):
        r = fit(fm, toys[i], one_sided=False)
        assert r.valid, r.reason
        assert r.fval <= b.fval[i] + 1e-6
        for n, side in r.at_bound.items():
            assert r.errors[n] is None and r.values[n] == fm.parameters[n].lower


@pytest.mark.slow
def test_fit_at_mu_zero_gives_a_one_sided_error_and_an_upper_limit(fast_mu):
    _, fm = fast_mu
    data = fm.asimov()  # mu_nu = 0
    r = fit(fm, data)
    assert r.valid and r.values["mu_nu"] == 0.0 and r.at_bound == {"mu_nu": "lower"}
    assert r.errors["mu_nu"] is None and "one-sided" in str(r)
    up = r.one_sided["mu_nu"]
    scan = profile_scan(fm, data, "mu_nu", np.linspace(0.0, 3 * up, 61), global_fit=r)
    ul = scan.upper_limit(0.9)
    # independent checks at exactly those points (one launch of the same compiled shape)
    check = profile_scan(fm, data, "mu_nu", np.r_[np.linspace(0.0, 0.5 * up, 59), up, ul], global_fit=r)
    assert check.delta_chi2[-2] == pytest.approx(1.0, abs=0.02)  # the one-sided error
    assert check.delta_chi2[-1] == pytest.approx(1.642, abs=0.02)  # the one-sided limit
    with pytest.raises(ParameterError, match="strictly increasing"):
        profile_scan(fm, data, "mu_nu", [1.0, 0.5], global_fit=r)
    iv = scan.interval(0.9)
    lo, hi = iv
    assert lo is None and hi > ul and "two-sided" in iv.convention and "upper_limit" in iv.convention
    assert "1.642" in scan.upper_limit_convention


@pytest.mark.slow
def test_one_sided_error_does_not_trust_a_rounding_level_curvature(fast_mu):
    """At mu_nu = 0, -2 ln L depends on mu_nu squared and H_ii is rounding, of either sign (a change
    of the templates' last bits moved it from -8e-9 to +6e-8): the one-sided error must not depend
    on it, and the profile must rise by 1 there."""
    from nuejax.inference import FitProblem
    from nuejax.inference.fitting import _profile, one_sided_errors, value_grad_hess

    _, fm = fast_mu
    data = fm.asimov()  # mu_nu = 0
    r = newton_fit(fm, data, one_sided=False)
    assert r.valid and r.at_bound == {"mu_nu": "lower"}
    s = FitProblem.create(fm, data)
    x = np.array([r.values[n] for n in s.names])
    _, _, H = value_grad_hess(s, x)
    i = s.names.index("mu_nu")
    errs = []
    for h in (-8e-9, 0.0, 6e-8, 1e-4):
        Hh = H.copy()
        Hh[i, i] = h
        errs.append(one_sided_errors(s, x, r.fval, {"mu_nu": "lower"}, Hh)["mu_nu"])
    assert max(errs) == pytest.approx(min(errs), rel=1e-3), errs
    others = tuple(n for n in s.names if n != "mu_nu")
    rise = _profile(s, "mu_nu", others, x, np.array([errs[0]])) - r.fval
    assert rise[0] == pytest.approx(1.0, abs=0.02)


def test_fast_path_equals_general_path_off_centre(small_model):
    m = small_model.with_parameters(small_model.parameters.release("eps_ee_L", "mu_nu"))
    osc = {"sin2_theta12": 0.33, "dm2_21": 7.9}
    fm = fast_model(m, osc)
    data = m.asimov(m.parameters.values(osc, eps_ee_L=0.03))
    for p in ({"eps_ee_L": 0.02, "mu_nu": 1.0}, {"norm_pp": 1.01, "rate_85Kr": 5.0}):
        general = float(m.nll(m.parameters.values({**osc, **p}), data))
        fast = float(fm.nll(fm.parameters.values(p), data))
        assert fast == pytest.approx(general, rel=1e-12, abs=1e-8)
    # the off-centre pulls of the baked oscillation parameters are carried, not dropped
    assert fm.baked_values() == {**osc, "sin2_theta13": 0.02215, "sin2_theta23": 0.47}
    assert float(fm.constraint_nll(fm.parameters.values())) - float(m.constraint_nll(m.parameters.values())) > 1.0


# -- results you can keep ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def toy_fit(low_exposure):
    fm, truth = low_exposure
    data = fm.pseudo_data(jax.random.PRNGKey(5), truth)
    return data, fit(fm, data)


@pytest.mark.slow
def test_results_round_trip_through_json(tmp_path, low_exposure, toy_fit):
    fm, _ = low_exposure
    data, r = toy_fit
    assert r.at_bound  # a parameter on a bound exercises None errors
    d = r.to_dict()
    assert FitResult.from_dict(json.loads(json.dumps(d, allow_nan=False))).to_dict() == d
    back = FitResult.load(r.save(tmp_path / "fit.json"))
    assert back.values == r.values and back.at_bound == r.at_bound and back.versions["nuejax"]
    np.testing.assert_array_equal(back.covariance, r.covariance)
    few = ("rate_85Kr", "rate_210Bi")  # a small profiled set: quick to compile
    s = profile_scan(fm, data, "norm_pp", np.linspace(0.98, 1.02, 5), global_fit=r, profile=few)
    s2 = load_result(s.save(tmp_path / "scan.json"))
    assert isinstance(s2, ScanResult) and s2.to_dict() == s.to_dict() and tuple(s2.interval()) == tuple(s.interval())
    s2d = profile_scan_2d(fm, data, ("norm_pp", "norm_7Be"), [0.99, 1.0, 1.01], [0.95, 1.0], global_fit=r,
                          profile=few)
    back2d = Scan2DResult.load(s2d.save(tmp_path / "scan2d.json"))
    np.testing.assert_array_equal(back2d.nll, s2d.nll)
    with pytest.raises(ValueError, match="not a FitResult"):
        FitResult.load(tmp_path / "scan.json")
    with pytest.raises(ValueError, match="lacks values"):
        FitResult.from_dict({k: v for k, v in d.items() if k != "values"})
    # an invalid fit with an infinite -2 ln L still saves as strict JSON (null)
    bad = dataclasses.replace(r, fval=float("inf"), valid=False, reason="test")
    assert FitResult.load(bad.save(tmp_path / "bad.json")).fval == float("inf")
    import pickle

    iv = s.interval(0.9)
    assert pickle.loads(pickle.dumps(iv)).convention == iv.convention


@pytest.mark.slow
def test_pulls_and_goodness_of_fit(low_exposure, toy_fit):
    fm, _ = low_exposure
    data, r = toy_fit
    pulls = r.pulls(fm.parameters)
    p = fm.parameters["norm_pp"]
    assert pulls["norm_pp"] == pytest.approx((r.values["norm_pp"] - p.constraint[0]) / p.constraint[1])
    mu = np.asarray(fm.expected(fm.parameters.values(r.params)))
    n = np.asarray(data)
    ref = 2 * np.sum(mu - n + xlogy(n, n) - xlogy(n, mu))
    g = goodness_of_fit(fm, data, r, n_toys=40, key=jax.random.PRNGKey(1))
    assert g.deviance == pytest.approx(ref, rel=1e-10)
    assert g.ndof == fm.n_obs - len(r.names) and 0 < g.p_chi2 < 1
    assert g.n_toys_converged == 40 and 0 <= g.p_toys <= 1
    # the toy deviances scatter around the observed one for data drawn from the model
    assert 0.5 < np.mean(g.toy_deviances) / g.deviance < 2
    assert float(saturated_deviance(jnp.asarray(n), jnp.asarray(n))) == 0.0


# -- a user-written model ------------------------------------------------------------------------------
class TwoTemplates(AbstractModel):
    """A model written by a user: not a PyTree, just .parameters and .expected."""

    def __init__(self):
        x = np.linspace(0, 1, 40)
        self.signal = jnp.asarray(np.exp(-0.5 * ((x - 0.5) / 0.1) ** 2))
        self.flat = jnp.ones(40)
        self.parameters = ParameterSet((Parameter("s", 10.0, 0.0, 1e4), Parameter("b", 5.0, 0.0, 1e4)))

    def expected(self, p):
        return p["s"] * self.signal + p["b"] * self.flat

    @property
    def n_obs(self):
        return 40


@pytest.mark.slow
def test_a_user_written_model_fits_and_wrong_ones_are_named():
    model = TwoTemplates()
    data = np.round(np.asarray(model.expected({"s": 30.0, "b": 4.0})))
    rm, rn = fit(model, data), newton_fit(model, data)
    assert rm.valid and rn.valid and rm.values["s"] == pytest.approx(rn.values["s"], rel=1e-5)
    # closed form at the minimum: sum(mu) = sum(n) (the likelihood equation of a free flat term)
    mu = np.asarray(model.expected({k: jnp.asarray(v) for k, v in rn.values.items()}))
    assert mu.sum() == pytest.approx(data.sum(), rel=1e-8)
    b = batch_fit(model, np.stack([data, data]))
    assert b.converged.all() and b.values["s"][0] == pytest.approx(rn.values["s"], rel=1e-6)

    class NoProtocol:  # the old duck-typed protocol: .parameters and .nll, not an AbstractModel
        parameters = model.parameters

        def nll(self, p, d):
            return poisson_nll(p["s"] * model.signal + p["b"], d)

    @dataclasses.dataclass
    class DataclassModel(AbstractModel):  # compares arrays in __eq__: must never be compared by JAX
        parameters: ParameterSet
        signal: np.ndarray

        def expected(self, p):
            return p["s"] * self.signal + p["b"]

    dm = DataclassModel(model.parameters, np.asarray(model.signal))
    first, second = newton_fit(dm, data), newton_fit(dm, data)
    assert first.valid and second.fval == first.fval and fit(dm, data).valid

    with pytest.raises(ModelProtocolError, match="subclass nuejax.model.AbstractModel"):
        fit(NoProtocol(), data)

    class BadParams(AbstractModel):
        parameters = {"s": 1.0}

        def expected(self, p):
            return 0.0

    with pytest.raises(ModelProtocolError, match="ParameterSet"):
        newton_fit(BadParams(), data)
    with pytest.raises(TypeError, match="redefines nll"):
        class OwnNll(AbstractModel):  # noqa: F841 - -2 ln L is defined once
            def nll(self, p, d):
                return 0.0


def test_cpu_launch_size():
    from nuejax.inference.fitting import CPU_CHEAP_CHUNK, CPU_CHUNK, launch_size

    assert launch_size(1000, 300) == 300 and launch_size(1000, 300, cheap=True) == 300  # an explicit chunk is obeyed
    if jax.default_backend() == "cpu":
        assert launch_size(1000, None) == CPU_CHUNK and launch_size(10, None) == 10
        assert launch_size(1000, None, cheap=True) == CPU_CHEAP_CHUNK and launch_size(10, None, cheap=True) == 10
    else:
        assert launch_size(1000, None) == 1000


def test_rows_one_after_another_equal_the_vmapped_rows():
    """over_rows: the CPU's row-by-row loop (each row's Newton loop ends when it converges, rows
    repeating the first take its result) gives the fits of the vmapped launch, row for row."""
    from nuejax.inference.fitting import over_rows

    rb = lambda x, a: (a - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2  # noqa: E731

    def solve(x0, a):
        return minimize_bounded(rb, x0, a, [-2.0, -2.0], [2.0, 3.0], max_iter=200)

    x0 = jnp.array([[-1.2, 1.0], [0.9, 0.8], [-1.2, 1.0], [1.5, -1.0], [-1.2, 1.0], [-1.2, 1.0]])
    a = jnp.array([1.0, 1.0, 1.0, 0.5, 1.2, 1.0])  # rows 2 and 5 repeat row 0; row 4 differs in a alone
    seq = jax.jit(over_rows(solve, (0, 0), sequential=True))(x0, a)
    vec = jax.jit(over_rows(solve, (0, 0), sequential=False))(x0, a)
    for name in ("x", "fun", "converged", "n_iter", "status"):
        np.testing.assert_allclose(np.asarray(getattr(seq, name)), np.asarray(getattr(vec, name)), rtol=1e-10,
                                   atol=1e-12, err_msg=name)
    n_iter = np.asarray(seq.n_iter)
    assert len(set(n_iter.tolist())) > 1  # rows of different lengths: each ran its own loop
    np.testing.assert_allclose(np.asarray(seq.x)[[0, 1, 2, 3, 5]], [[1, 1], [1, 1], [1, 1], [0.5, 0.25], [1, 1]],
                               atol=1e-3)  # the minima (a, a^2), to the EDM tolerance's precision in x
    np.testing.assert_allclose(np.asarray(seq.x)[4], [1.2, 1.44], atol=1e-3)


def test_the_row_decider_sees_the_first_row_of_every_input():
    """over_rows with a callable decider (the solvers' costly_objective): it is called with the
    first row of each mapped input, a PyTree such as Pins included, and the rows' results follow."""
    from nuejax.inference.fitting import over_rows
    from nuejax.inference.problem import Pins

    seen = []

    def decide(shared, pins, x):
        seen.append((type(pins).__name__, np.shape(pins.mask), np.shape(pins.values), np.shape(x)))
        return True

    f = lambda shared, pins, x: shared * jnp.sum(jnp.where(pins.mask, pins.values, x))  # noqa: E731
    pins = Pins(jnp.array([[True, False]] * 3), jnp.ones((3, 2)))
    out = jax.jit(over_rows(f, (None, 0, 0), decide))(2.0, pins, jnp.arange(6.0).reshape(3, 2))
    np.testing.assert_allclose(np.asarray(out), [4.0, 8.0, 12.0])
    if jax.default_backend() == "cpu":
        assert seen == [("Pins", (2,), (2,), (2,))]


def _transform_model():
    """Two lines and a falling background on a 1 keV input axis, moved onto 64 data bins by a
    floating energy scale, offset and resolution (a ResponseTransform): rates linear, the
    transform's three terms not."""
    from nuejax.detector.transforms import ResponseTransform
    from nuejax.model.template_model import template_model

    x_edges = np.linspace(0.0, 120.0, 121)
    obs = np.linspace(20.0, 100.0, 65)
    xc = 0.5 * (x_edges[1:] + x_edges[:-1])
    tpl = np.stack([np.exp(-0.5 * ((xc - 45.0) / 4.0) ** 2), np.exp(-0.5 * ((xc - 70.0) / 6.0) ** 2), np.exp(-xc / 50.0)])
    tpl /= tpl.sum(axis=1, keepdims=True)
    ps = ParameterSet((Parameter("r_a", 800.0, 0.0, 1e5), Parameter("r_b", 500.0, 0.0, 1e5),
                       Parameter("r_bkg", 3000.0, 0.0, 1e5), Parameter("e_scale", 1.0, 0.9, 1.1),
                       Parameter("e_offset", 0.0, -5.0, 5.0), Parameter("e_res_a", 0.8, 0.2, 3.0)))
    tr = ResponseTransform.create(x_edges, obs, scale="e_scale", offset="e_offset", res_a="e_res_a")
    return template_model(in_edges=x_edges, obs_edges=obs, templates=tpl, template_names=("r_a", "r_b", "r_bkg"),
                          parameters=ps, exposure=1.0, transform=tr)


@pytest.mark.slow
def test_gauss_newton_phase_ends_on_the_exact_routes_minimum():
    """The solver's cheap phase (minimize_bounded's ``hessian_split``, which the CPU's row-by-row fits
    use): the Gauss-Newton matrix J^T diag(2n/mu^2) J equals its definition with J from jax.jacfwd;
    from starts one to two standard deviations off, the solver with it ends on the exact-Hessian
    solver's minimum, and its end point is certified by the exact Hessian."""
    from nuejax.inference import FitProblem
    from nuejax.inference.fitting import (approximate_route, curvature_term, gauss_newton_terms, linear_mask, objective,
                                          value_grad_hessian)

    m = _transform_model()
    truth = m.parameters.values(e_scale=1.02, e_offset=1.5, e_res_a=1.1)
    data = jnp.asarray(np.random.default_rng(3).poisson(np.asarray(m.expected(truth))), dtype=float)
    prob = FitProblem.create(m, data)
    args = (prob, jnp.zeros(0))
    names = prob.names
    assert linear_mask(m, names) == (True, True, True, False, False, False)
    x = jnp.asarray([float(truth[n]) for n in names])
    if jax.default_backend() == "cpu":  # rows run one after another there: the solvers take the route
        assert approximate_route(prob, args[1], x) is not None
    v, g, H = value_grad_hessian(x, args)
    v_gn, g_gn, H_gn, _ = gauss_newton_terms(x, args)
    mu = np.asarray(m.expected(prob.params(x, args[1])))
    J = np.asarray(jax.jacfwd(lambda y: m.expected(prob.params(y, args[1])))(x))
    ref = J.T @ ((2.0 * np.asarray(data) / mu**2)[:, None] * J)  # no constraint terms in this model
    d = np.sqrt(np.diag(np.asarray(H)))
    np.testing.assert_allclose(np.asarray(H_gn) / np.outer(d, d), ref / np.outer(d, d), atol=1e-10)
    assert float(v_gn) == float(v)
    np.testing.assert_allclose(g_gn, g, rtol=1e-12)
    assert np.max(np.abs(np.asarray(H - H_gn)) / np.outer(d, d)) > 1e-3  # the two matrices differ here
    lo, hi = np.asarray(prob.lower, dtype=float), np.asarray(prob.upper, dtype=float)
    sd = np.sqrt(np.diag(np.linalg.inv(np.asarray(H) / 2.0)))
    rng = np.random.default_rng(11)
    split = (gauss_newton_terms, curvature_term)
    for _ in range(4):
        start = jnp.asarray(np.clip(np.asarray(x) + sd * rng.choice([-1.0, 1.0], len(names)) * rng.uniform(1, 2), lo, hi))
        exact = minimize_bounded(objective, start, args, lo, hi, vgh=value_grad_hessian)
        cheap = minimize_bounded(objective, start, args, lo, hi, vgh=value_grad_hessian, hessian_split=split)
        assert bool(exact.converged) and bool(cheap.converged)
        assert float(cheap.fun) == pytest.approx(float(exact.fun), abs=2e-8)
        np.testing.assert_allclose(np.asarray(cheap.x) / sd, np.asarray(exact.x) / sd, atol=1e-3)
        np.testing.assert_allclose(cheap.hess, value_grad_hessian(cheap.x, args)[2], rtol=1e-12)


@pytest.mark.slow
def test_curvature_by_direction_equals_the_vmapped_passes():
    """curvature_term one pass per non-linear parameter (the CPU's default) and as one vmap of
    one-hot tangents (the accelerators'): the same matrix, with nothing pinned and with a linear
    and a non-linear coordinate pinned (Pins: zero rows and columns there); and the exact
    Hessian it completes equals jax.hessian of -2 ln L."""
    from nuejax.inference import FitProblem
    from nuejax.inference.fitting import curvature_term, gauss_newton_terms, objective, value_grad_hessian
    from nuejax.inference.problem import Pins

    m = _transform_model()
    truth = m.parameters.values(e_scale=1.02, e_offset=1.5, e_res_a=1.1)
    data = jnp.asarray(np.random.default_rng(5).poisson(np.asarray(m.expected(truth))), dtype=float)
    prob = FitProblem.create(m, data)
    x = jnp.asarray([float(truth[n]) for n in prob.names]) * 1.01
    d = len(prob.names)
    pin = np.zeros(d, bool)
    pin[[1, 4]] = True  # r_b (linear) and e_offset (not)
    for fixed in (Pins(np.zeros(d, bool), np.zeros(d)), Pins(pin, np.asarray(x))):
        args = (prob, fixed)
        r = gauss_newton_terms(x, args)[3]
        a = np.asarray(curvature_term(x, args, r, by_direction=True))
        b = np.asarray(curvature_term(x, args, r, by_direction=False))
        scale = np.max(np.abs(b))
        assert scale > 0 and np.max(np.abs(a - b)) <= 1e-12 * scale
        assert not np.any(a[pin & fixed.mask]) and not np.any(a[:, pin & fixed.mask])
    args = (prob, Pins(np.zeros(d, bool), np.zeros(d)))
    H = np.asarray(value_grad_hessian(x, args)[2])
    ref = np.asarray(jax.hessian(objective)(x, args))
    np.testing.assert_allclose(H, ref, rtol=1e-9, atol=1e-9 * np.max(np.abs(ref)))
