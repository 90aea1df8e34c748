"""Constraint terms (nuejax.model.constraints): closed forms, scipy, gradients, jit/vmap, dynamic
centres, input checks."""
import dataclasses
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import multivariate_normal

from nuejax.errors import InputError, ParameterError
from nuejax.model import Parameter, ParameterSet
from nuejax.model.constraints import (
    GaussianConstraint,
    HalfGaussianConstraint,
    LogNormalConstraint,
    PenaltyTerm,
    check_constraints,
    constraint_total,
)

NAMES = ("a", "b", "c")
SIGMA = np.array([0.5, 1.2, 2.0])
CORR = np.array([[1.0, 0.3, -0.2], [0.3, 1.0, 0.5], [-0.2, 0.5, 1.0]])
COV = SIGMA[:, None] * CORR * SIGMA[None, :]
CENTRE = np.array([1.0, -2.0, 3.5])


def _p(**kw):
    return {k: jnp.asarray(v, dtype=jnp.float64) for k, v in kw.items()}


def _fd(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def _pset(*names, **constrained):
    return ParameterSet(tuple(Parameter(n, 1.0, constraint=constrained.get(n)) for n in names))


# -- values against closed forms ------------------------------------------------------------------
def test_gaussian_independent_closed_form():
    g = GaussianConstraint.create(("a", "b"), [1.0, -2.0], sigma=[0.5, 2.0])
    for a, b in [(1.0, -2.0), (1.5, -2.0), (0.0, 1.0), (-3.2, 7.7)]:
        assert float(g(_p(a=a, b=b))) == pytest.approx(((a - 1) / 0.5) ** 2 + ((b + 2) / 2.0) ** 2, rel=1e-14, abs=1e-14)
    one = GaussianConstraint.create("a", 1.0, sigma=0.06)
    assert float(one(_p(a=1.09))) == pytest.approx((0.09 / 0.06) ** 2, rel=1e-13)


def test_correlated_gaussian_against_numpy_and_scipy():
    g_sc = GaussianConstraint.create(NAMES, CENTRE, sigma=SIGMA, corr=CORR)
    g_cov = GaussianConstraint.create(NAMES, CENTRE, cov=COV)
    np.testing.assert_allclose(np.asarray(g_sc.cov), COV, rtol=1e-14, atol=1e-15)
    inv = np.linalg.inv(COV)
    mvn = multivariate_normal(mean=CENTRE, cov=COV)
    rng = np.random.default_rng(1)
    points = CENTRE + rng.normal(size=(5, 3)) * 2 * SIGMA
    values = []
    for x in points:
        r = x - CENTRE
        expected = r @ inv @ r
        for g in (g_sc, g_cov):
            values.append(float(g(dict(zip(NAMES, x)))))
            assert values[-1] == pytest.approx(expected, rel=1e-12)
    # -2 x (difference of log-densities) = difference of the terms (the constant cancels)
    for x1, x2 in itertools.pairwise(points):
        d_term = float(g_sc(dict(zip(NAMES, x1)))) - float(g_sc(dict(zip(NAMES, x2))))
        d_scipy = -2 * (mvn.logpdf(x1) - mvn.logpdf(x2))
        assert d_term == pytest.approx(d_scipy, rel=1e-10, abs=1e-10)
    # a correlation matters: dropping it changes the value
    g_ind = GaussianConstraint.create(NAMES, CENTRE, sigma=SIGMA)
    x = dict(zip(NAMES, points[0]))
    assert abs(float(g_ind(x)) - float(g_sc(x))) > 1e-3


@pytest.mark.parametrize("x, expected", [(9.0, 0.0), (10.8, 0.0), (10.8 - 1e-9, 0.0), (10.8 + 1e-3, (1e-3 / 1.0) ** 2),
                                         (11.3, 0.5 ** 2), (13.8, 3.0 ** 2)])
def test_half_gaussian_upper_closed_form(x, expected):
    h = HalfGaussianConstraint.create("rate_210Bi", 10.8, 1.0)
    assert float(h(_p(rate_210Bi=x))) == pytest.approx(expected, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("x, expected", [(5.0, 0.0), (2.0, 0.0), (2.0 + 1e-9, 0.0), (2.0 - 1e-3, (1e-3 / 0.5) ** 2),
                                         (1.0, (1.0 / 0.5) ** 2), (-1.0, (3.0 / 0.5) ** 2)])
def test_half_gaussian_lower_closed_form(x, expected):
    h = HalfGaussianConstraint.create("s", 2.0, 0.5, side="lower")
    assert float(h(_p(s=x))) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_log_normal_closed_form_and_non_positive():
    ln = LogNormalConstraint.create("x", 2.0, 0.1)
    for x in (2.0, 1.0, 3.0, 0.05, 250.0):
        assert float(ln(_p(x=x))) == pytest.approx(((np.log(x) - np.log(2.0)) / 0.1) ** 2, rel=1e-13, abs=1e-15)
    # symmetric in ln x: a factor k above and below cost the same
    assert float(ln(_p(x=2.0 * 1.3))) == pytest.approx(float(ln(_p(x=2.0 / 1.3))), rel=1e-12)
    f = lambda x: ln(_p(x=x))
    for x in (0.0, -1.0, -1e-300):
        v, g = float(f(x)), float(jax.grad(f)(jnp.float64(x)))
        assert v == np.inf, x
        assert not np.isnan(g), x
    for x in (1e-8, 0.5, 2.0, 40.0):
        assert np.isfinite(float(jax.grad(f)(jnp.float64(x))))


def test_penalty_term_closed_form_and_only_named_values():
    seen = []

    def pull(v):
        seen.append(sorted(v))
        return ((v["a"] - 2 * v["b"]) / 0.1) ** 2

    pt = PenaltyTerm.create(("a", "b"), pull, description="a = 2b ± 0.1")
    assert float(pt(_p(a=1.0, b=0.3, c=9.0))) == pytest.approx((0.4 / 0.1) ** 2, rel=1e-13)
    assert seen == [["a", "b"]]
    assert jax.tree_util.tree_leaves(pt) == []  # the callable is static


def test_constraint_total():
    terms = (GaussianConstraint.create("a", 1.0, sigma=0.5), HalfGaussianConstraint.create("b", 0.0, 2.0),
             LogNormalConstraint.create("c", 1.0, 0.2), PenaltyTerm.create("a", lambda v: v["a"] ** 2))
    p = _p(a=2.0, b=3.0, c=np.e)
    assert float(constraint_total(terms, p)) == pytest.approx(4.0 + 2.25 + 25.0 + 4.0, rel=1e-13)
    assert float(constraint_total((), p)) == 0.0


def test_describe():
    assert (HalfGaussianConstraint.create("rate_210Bi", 10.8, 1.0).describe()
            == "rate_210Bi: half-Gaussian, penalty above 10.8 (σ = 1)")
    assert "below 2" in HalfGaussianConstraint.create("s", 2.0, 0.5, side="lower").describe()
    assert GaussianConstraint.create("a", 1.0, sigma=0.06).describe() == "a: Gaussian, centre 1 (σ = 0.06)"
    assert "max |ρ| = 0.5" in GaussianConstraint.create(NAMES, CENTRE, cov=COV).describe()
    assert GaussianConstraint.create(("a", "b"), [1, 2], sigma=[0.3, 0.7]).describe() == (
        "(a, b): Gaussian, centre (1, 2) (σ = (0.3, 0.7), independent)")
    assert LogNormalConstraint.create("x", 2.0, 0.1).describe() == "x: log-normal, median 2 (σ_ln = 0.1)"
    assert "a = 2b" in PenaltyTerm.create(("a", "b"), lambda v: v["a"], description="a = 2b").describe()


# -- gradients against finite differences ----------------------------------------------------------
def _grad_vs_fd(term, point, names, rtol=1e-6, atol=1e-7):
    g = jax.grad(lambda q: term(q))(_p(**point))
    for n in names:
        fd = _fd(lambda x, n=n: float(term(_p(**{**point, n: x}))), point[n])
        assert float(g[n]) == pytest.approx(fd, rel=rtol, abs=atol), n
    return g


def test_gradients_against_finite_differences():
    g_corr = GaussianConstraint.create(NAMES, CENTRE, sigma=SIGMA, corr=CORR)
    grad = _grad_vs_fd(g_corr, {"a": 1.7, "b": -0.4, "c": 2.0}, NAMES)
    r = np.array([1.7, -0.4, 2.0]) - CENTRE
    np.testing.assert_allclose([float(grad[n]) for n in NAMES], 2 * np.linalg.inv(COV) @ r, rtol=1e-12)
    _grad_vs_fd(LogNormalConstraint.create("x", 2.0, 0.1), {"x": 2.7}, ("x",))
    _grad_vs_fd(PenaltyTerm.create(("a", "b"), lambda v: jnp.sin(v["a"]) * v["b"] ** 2), {"a": 0.3, "b": 1.5}, ("a", "b"))
    up = HalfGaussianConstraint.create("r", 10.8, 1.0)
    lo = HalfGaussianConstraint.create("r", 10.8, 1.0, side="lower")
    for term in (up, lo):
        for x in (9.5, 10.8 - 1e-4, 10.8 + 1e-4, 12.0):
            _grad_vs_fd(term, {"r": x}, ("r",), atol=1e-9)
        # exactly at the threshold: value and derivative both 0, and the central difference agrees
        assert float(jax.grad(lambda x, t=term: t(_p(r=x)))(jnp.float64(10.8))) == 0.0
        assert _fd(lambda x, t=term: float(t(_p(r=x))), 10.8, h=1e-6) == pytest.approx(0.0, abs=1e-6)


def test_penalty_is_in_the_hessian():
    pt = PenaltyTerm.create(("a", "b"), lambda v: (v["a"] * v["b"]) ** 2)
    h = jax.hessian(lambda q: constraint_total((pt,), q))(_p(a=2.0, b=3.0))
    assert float(h["a"]["a"]) == pytest.approx(2 * 9.0)
    assert float(h["a"]["b"]) == pytest.approx(4 * 2.0 * 3.0)


# -- jit, vmap, dynamic centres ---------------------------------------------------------------------
def _all_terms():
    return (GaussianConstraint.create(NAMES, CENTRE, cov=COV), HalfGaussianConstraint.create("a", 1.2, 0.3),
            HalfGaussianConstraint.create("b", -2.5, 0.4, side="lower"), LogNormalConstraint.create("c", 3.0, 0.2),
            PenaltyTerm.create(("a", "c"), lambda v: (v["a"] - v["c"]) ** 2 / 4))


def test_jit_and_vmap_agree_with_eager():
    """Terms are PyTrees: jit takes them as arguments (their arrays are inputs, not constants)."""
    rng = np.random.default_rng(7)
    batch = {"a": rng.uniform(0.5, 2.0, 6), "b": rng.uniform(-4, 0, 6), "c": rng.uniform(1.0, 6.0, 6)}
    terms = _all_terms()
    for t in terms + (terms,):
        f = (lambda t_, q: constraint_total(t_, q)) if isinstance(t, tuple) else (lambda t_, q: t_(q))
        eager = np.array([float(f(t, _p(**{k: v[i] for k, v in batch.items()}))) for i in range(6)])
        assert len(set(eager)) > 1  # the batch does probe different values
        np.testing.assert_allclose(np.asarray(jax.vmap(f, in_axes=(None, 0))(t, _p(**batch))), eager, rtol=1e-13)
        np.testing.assert_allclose(np.asarray(jax.jit(jax.vmap(f, in_axes=(None, 0)))(t, _p(**batch))), eager, rtol=1e-13)
        q = _p(a=1.1, b=-3.0, c=2.0)
        assert float(jax.jit(f)(t, q)) == pytest.approx(float(f(t, q)), rel=1e-13)


@pytest.mark.parametrize("field, new", [("centre", CENTRE + 0.7), ("chol", 2 * np.linalg.cholesky(COV)),
                                        ("threshold", 0.5), ("median", 5.0), ("sigma_ln", 0.05)])
def test_centres_are_dynamic(field, new):
    term = {"centre": GaussianConstraint.create(NAMES, CENTRE, cov=COV), "chol": GaussianConstraint.create(NAMES, CENTRE, cov=COV),
            "threshold": HalfGaussianConstraint.create("a", 1.2, 0.3), "median": LogNormalConstraint.create("c", 3.0, 0.2),
            "sigma_ln": LogNormalConstraint.create("c", 3.0, 0.2)}[field]
    traces = []

    def value(t, q):
        traces.append(1)
        return t(q)

    f = jax.jit(value)
    p = _p(a=2.0, b=-1.0, c=4.0)
    v0 = float(f(term, p))
    moved = dataclasses.replace(term, **{field: jnp.asarray(new, dtype=jnp.float64)})
    v1 = float(f(moved, p))
    assert len(traces) == 1 and f._cache_size() == 1
    assert v1 != v0
    assert v1 == pytest.approx(float(moved(p)), rel=1e-13)


def test_static_fields_do_recompile():
    """The counter above can fail: changing a static field (the side) traces again."""
    traces = []
    f = jax.jit(lambda t, q: (traces.append(1), t(q))[1])
    up = HalfGaussianConstraint.create("a", 1.2, 0.3)
    f(up, _p(a=2.0))
    f(dataclasses.replace(up, side="lower"), _p(a=2.0))
    assert len(traces) == 2


# -- bad inputs -------------------------------------------------------------------------------------
@pytest.mark.parametrize("build, match", [
    (lambda: GaussianConstraint.create(NAMES, CENTRE, sigma=[0.5, 0.0, 2.0]), "sigma of 'b' must be > 0"),
    (lambda: GaussianConstraint.create(NAMES, CENTRE, sigma=[0.5, -1.0, 2.0]), "sigma of 'b' must be > 0"),
    (lambda: GaussianConstraint.create(NAMES, CENTRE, sigma=[0.5, np.inf, 2.0]), "sigma of 'b' must be finite"),
    (lambda: GaussianConstraint.create(NAMES, [1.0, np.nan, 0.0], sigma=SIGMA), "centre of 'b' must be finite"),
    (lambda: GaussianConstraint.create(NAMES, CENTRE, cov=[[1, .9, 0], [.9, 1, .9], [0, .9, 1]]),
     r"not positive definite \(it fails at 'c'"),
    (lambda: GaussianConstraint.create(NAMES, CENTRE, cov=COV + np.diag([0, 0, -10])), "variance of 'c'"),
    (lambda: GaussianConstraint.create(NAMES, CENTRE, cov=COV + np.array([[0, 0.1, 0], [0, 0, 0], [0, 0, 0]])),
     r"not symmetric: entry \('a', 'b'\)"),
    (lambda: GaussianConstraint.create(NAMES, CENTRE, sigma=SIGMA, corr=CORR.T + np.eye(3) * 0.1), "diagonal of 'a'"),
    (lambda: GaussianConstraint.create(("a", "b"), [0, 0], sigma=[1, 1], corr=[[1, 1.2], [1.2, 1]]),
     "correlation of 'a' and 'b' is 1.2"),
    (lambda: GaussianConstraint.create(NAMES, CENTRE[:2], sigma=SIGMA), r"centre has shape \(2,\), expected \(3,\)"),
    (lambda: GaussianConstraint.create(NAMES, CENTRE, sigma=SIGMA[:2]), r"sigma has shape \(2,\), expected \(3,\)"),
    (lambda: GaussianConstraint.create(NAMES, CENTRE, cov=COV[:2, :2]), r"covariance has shape \(2, 2\)"),
    (lambda: GaussianConstraint.create(NAMES, CENTRE, sigma=SIGMA, corr=CORR[:2]), r"correlation matrix has shape"),
    (lambda: GaussianConstraint.create(NAMES, CENTRE, sigma=SIGMA, cov=COV), "not both"),
    (lambda: GaussianConstraint.create(NAMES, CENTRE), "give sigma"),
    (lambda: GaussianConstraint.create(NAMES, CENTRE, corr=CORR), "corr needs sigma"),
    (lambda: GaussianConstraint.create(("a", "a"), [0, 0], sigma=[1, 1]), "'a'.*more than once"),
    (lambda: HalfGaussianConstraint.create("rate_210Bi", 10.8, 0.0), "HalfGaussianConstraint on 'rate_210Bi': sigma must be > 0"),
    (lambda: HalfGaussianConstraint.create("rate_210Bi", np.nan, 1.0), "'rate_210Bi': threshold must be finite"),
    (lambda: HalfGaussianConstraint.create("rate_210Bi", 10.8, 1.0, side="above"), "'rate_210Bi': side must be"),
    (lambda: HalfGaussianConstraint.create("rate_210Bi", [10.8, 11.0], 1.0), "'rate_210Bi': threshold must be a scalar"),
    (lambda: LogNormalConstraint.create("x", 0.0, 0.1), "'x': median must be > 0"),
    (lambda: LogNormalConstraint.create("x", 2.0, -0.1), "'x': sigma_ln must be > 0"),
    (lambda: PenaltyTerm.create(("a", "b"), 3.0), r"PenaltyTerm on \('a', 'b'\): function must be callable"),
])
def test_bad_inputs_raise_input_error_naming_the_parameter(build, match):
    with pytest.raises(InputError, match=match):
        build()


def test_penalty_returning_a_vector_is_named():
    pt = PenaltyTerm.create("a", lambda v: jnp.stack([v["a"], v["a"]]))
    with pytest.raises(InputError, match="PenaltyTerm on 'a': function returned shape"):
        pt(_p(a=1.0))


def test_check_names_unknown_parameters():
    ps = _pset("eps_ee_L", "rate_210Bi")
    with pytest.raises(ParameterError, match="'eps_ee_l'; did you mean 'eps_ee_L'"):
        GaussianConstraint.create("eps_ee_l", 0.0, sigma=1.0).check(ps)
    for term in (HalfGaussianConstraint.create("rate_Bi210", 10.8, 1.0), LogNormalConstraint.create("nope", 1.0, 0.1),
                 PenaltyTerm.create(("eps_ee_L", "nope"), lambda v: v["nope"])):
        with pytest.raises(ParameterError, match="unknown parameter"):
            term.check(ps)
        with pytest.raises(ParameterError, match="unknown parameter"):
            check_constraints((term,), ps)
    GaussianConstraint.create("eps_ee_L", 0.0, sigma=1.0).check(ps)  # known: no error


def test_check_constraints_double_counting():
    ps = _pset("a", "b", "c", "d")
    ok = (GaussianConstraint.create(("a", "b"), [0, 0], sigma=[1, 1]), HalfGaussianConstraint.create("c", 1.0, 0.1),
          HalfGaussianConstraint.create("c", 0.0, 0.2, side="lower"), PenaltyTerm.create("a", lambda v: v["a"] ** 2),
          LogNormalConstraint.create("d", 1.0, 0.1))
    check_constraints(ok, ps)
    check_constraints((), ps)
    g2 = GaussianConstraint.create("b", 1.0, sigma=0.5)
    with pytest.raises(InputError, match=r"'b' is constrained twice, by \[\(a, b\): Gaussian.*\] and by \[b: Gaussian"):
        check_constraints(ok + (g2,), ps)
    with pytest.raises(InputError, match=r"'d' is constrained twice.*log-normal.*half-Gaussian"):
        check_constraints(ok + (HalfGaussianConstraint.create("d", 2.0, 0.1),), ps)
    with pytest.raises(InputError, match=r"'c' is constrained twice.*penalty above 1.*penalty above 3"):
        check_constraints(ok + (HalfGaussianConstraint.create("c", 3.0, 0.1),), ps)
    legacy = _pset("a", "b", "c", "d", a=(0.0, 1.0))
    with pytest.raises(InputError, match=r"'a' is constrained twice: by Parameter.constraint \(0 ± 1\)"):
        check_constraints(ok, legacy)
    with pytest.raises(InputError, match="constraints\\[1\\] is a float"):
        check_constraints((ok[0], 1.0), ps)
    with pytest.raises(InputError, match="tuple of constraint terms"):
        check_constraints(ok[0], ps)


def test_parameter_values_keep_the_set_order_and_dtype():
    """values() and defaults() are made on the host and put on the device in one transfer (which
    returns a dict's keys sorted): the mapping keeps the parameters' order, their dtype, and
    takes traced overrides inside jit."""
    ps = ParameterSet((Parameter("zeta", 2.0), Parameter("alpha", 1.0, lower=0.0), Parameter("mid", 0.5)))
    for out in (ps.defaults(), ps.values(alpha=0.25), ps.values({"zeta": np.float32(3.0)}),
                ps.values(alpha=jnp.asarray(0.5))):
        assert list(out) == ["zeta", "alpha", "mid"]
        assert all(v.dtype == jnp.result_type(float) and not v.weak_type for v in out.values())
    assert float(ps.values(alpha=0.25)["alpha"]) == 0.25
    assert float(jax.jit(lambda a: ps.values(alpha=a)["alpha"] * 2)(0.5)) == 1.0
