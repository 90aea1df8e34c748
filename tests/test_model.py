"""Expected spectrum (Eq. mu_total), -2 ln L (Eq. logL), parameters, autodiff, vmap, pseudo-data."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import poisson

from nuejax.errors import ParameterError
from nuejax.model import AddTemplates, Exposure, KernelFold, SolarSignals, borexino_like_model, poisson_nll
from nuejax.model.likelihood import check_expected
from nuejax.physics import NewPhysics, build_source, event_rate

SIGNALS = ("pp", "pep", "7Be_862", "7Be_384", "13N")
BKG = ("210Bi", "85Kr", "11C", "210Po")


@pytest.fixture(scope="module")
def model(small_model):
    m = small_model
    ps = m.parameters.release("eps_ee_L", "mu_nu", "sin2_theta12")
    return m.with_parameters(ps)


@pytest.fixture(scope="module")
def wide():
    """A window holding every 7Be-862 event (the Gaussian response reaches N_p < 0 at T ~ 0):
    sum of mu = exposure x total rate."""
    return borexino_like_model(n_T=400, signals=("7Be_862",), backgrounds=(), window=(-100, 800))


def test_normalisation_against_independent_rate(wide):
    src = build_source("7Be_862")
    for phys, kw in ((NewPhysics(), {}), (NewPhysics(eps_L=(0.1, 0, 0), eps_R=(-0.05, 0, 0)),
                                          {"eps_ee_L": 0.1, "eps_ee_R": -0.05})):
        mu = wide.expected(wide.parameters.values(kw))
        rate = float(event_rate(src, phys))
        assert float(mu.sum()) == pytest.approx(wide.stage(Exposure).exposure * rate, rel=1e-6)


@pytest.mark.slow
def test_precomputed_general_path_equals_direct_computation(model):
    from nuejax.model import expected_direct

    p = model.parameters.values(eps_ee_L=0.07, eps_tautau_R=-0.1, mu_nu=4.0, sin2_theta12=0.29, dm2_21=8.0)
    np.testing.assert_allclose(np.asarray(model.expected(p)), np.asarray(expected_direct(model, p)), rtol=1e-12)


def test_asimov_gradient_vanishes_at_truth(model):
    truth = model.parameters.values(eps_ee_L=0.05, mu_nu=2.0, norm_7Be=1.1)
    data = model.asimov(truth)
    g = jax.grad(lambda p: model.nll(p, data))(truth)
    for name in model.parameters.free_names:
        if model.parameters[name].constraint is None:
            assert abs(float(g[name])) < 1e-6 * max(1.0, float(jnp.abs(jnp.asarray(truth[name])))), name


@pytest.mark.slow
def test_gradient_and_hessian_match_finite_differences(model):
    names = ("eps_ee_L", "mu_nu", "sin2_theta12", "norm_pp", "rate_210Bi")
    base = model.parameters.values(eps_ee_L=0.02, mu_nu=1.0)
    data = model.asimov(model.parameters.values(eps_ee_L=0.05, mu_nu=2.0))

    def f(x):
        return model.nll({**base, **dict(zip(names, x))}, data)

    x0 = jnp.array([float(base[n]) for n in names])
    g = np.asarray(jax.grad(f)(x0))
    h = 1e-5 * np.maximum(1.0, np.abs(np.asarray(x0)))
    fd = np.array([(float(f(x0.at[i].add(h[i]))) - float(f(x0.at[i].add(-h[i])))) / (2 * h[i]) for i in range(5)])
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6 * np.abs(fd).max())
    H = np.asarray(jax.hessian(f)(x0))
    gf = jax.grad(f)
    Hfd = np.stack([(np.asarray(gf(x0.at[i].add(h[i]))) - np.asarray(gf(x0.at[i].add(-h[i])))) / (2 * h[i]) for i in range(5)])
    np.testing.assert_allclose(H, Hfd, rtol=1e-4, atol=1e-6 * np.abs(Hfd).max())
    np.testing.assert_allclose(H, H.T, rtol=1e-10, atol=1e-12 * np.abs(H).max())


def test_vmap_grid_in_one_launch_equals_single_calls(model):
    data = model.asimov()
    base = model.defaults()
    eps = jnp.linspace(-0.1, 0.1, 7)
    batch = {**{k: jnp.broadcast_to(v, eps.shape) for k, v in base.items()}, "eps_ee_L": eps}
    grid = np.asarray(jax.jit(jax.vmap(lambda p: model.nll(p, data)))(batch))
    single = [float(model.nll({**base, "eps_ee_L": e}, data)) for e in eps]
    np.testing.assert_allclose(grid, single, rtol=1e-13)
    assert np.argmin(grid) == 3  # Asimov at eps = 0


def test_poisson_nll_matches_scipy_and_edge_cases():
    mu = jnp.array([0.5, 3.0, 10.0, 1e-3])
    n = jnp.array([0.0, 2.0, 13.0, 1.0])
    ref = -2 * poisson.logpmf(np.asarray(n), np.asarray(mu)).sum()
    assert float(poisson_nll(mu, n)) == pytest.approx(ref, rel=1e-13)
    # mu -> 0 with n = 0 is fine; mu = 0 with n > 0 has zero likelihood
    assert float(poisson_nll(jnp.array([0.0, 1.0]), jnp.array([0.0, 1.0]))) == pytest.approx(2.0)
    assert float(poisson_nll(jnp.array([0.0, 1.0]), jnp.array([1.0, 1.0]))) == np.inf
    g = jax.grad(lambda m: poisson_nll(m, jnp.array([0.0, 1.0])))(jnp.array([0.0, 1.0]))
    assert np.all(np.isfinite(np.asarray(g)))
    with pytest.raises(ValueError, match=r"expected count 0 <= 0 with 1 observed in bin 0 \[90, 91\)"):
        check_expected(np.array([0.0, 1.0]), np.array([1.0, 1.0]), edges=np.array([90.0, 91.0, 92.0]))


def test_poisson_constant_term_is_cancellation_free():
    """S(n) = lnGamma(n+1) - n ln n + n, against 50-digit arithmetic, 1 <= n <= 1e9."""
    import mpmath

    from nuejax.model.likelihood import _stirling_remainder

    mpmath.mp.dps = 50
    n = np.array([0, 1, 2, 5, 19, 20, 21, 50, 1e3, 1e4, 1e6, 1e9])
    got = np.asarray(_stirling_remainder(jnp.asarray(n)))
    ref = np.array([float(mpmath.loggamma(x + 1) - (x * mpmath.log(x) if x else 0) + x) for x in n])
    np.testing.assert_allclose(got, ref, rtol=5e-15, atol=0)


def test_pulls_and_parameter_errors(model):
    data = model.asimov()
    base = model.defaults()
    d = float(model.nll({**base, "sin2_theta12": 0.308 + 0.012}, data) - model.nll(base, data))
    assert d > 1.0  # the constraint alone contributes exactly 1
    with pytest.raises(ValueError, match=r"parameter norm_pp: value -1.0 outside its bounds \[0.0, 10.0\]"):
        model.check({**base, "norm_pp": -1.0}, data)
    with pytest.raises(ValueError, match="parameter rate_11C missing"):
        model.check({k: v for k, v in base.items() if k != "rate_11C"}, data)
    with pytest.raises(ValueError, match="invalid count -1"):
        model.check(base, data.at[5].set(-1.0))
    with pytest.raises(ParameterError, match="unknown parameter .eps_ee.; did you mean"):
        model.parameters.values(eps_ee=0.1)


def test_pseudo_data_are_poisson_around_asimov(model):
    mu = np.asarray(model.asimov())
    toys = np.asarray(model.pseudo_data(jax.random.PRNGKey(0), n_toys=200))
    assert toys.shape == (200, mu.size) and np.all(toys == np.round(toys))
    pull = (toys.mean(0) - mu) / np.sqrt(mu / 200)
    assert abs(pull.mean()) < 0.2 and 0.8 < pull.std() < 1.2


@pytest.mark.slow
def test_default_model_builds_and_has_the_paper_components(full_model):
    m = full_model
    assert m.signal_names == ("pp", "pep", "hep", "7Be_862", "7Be_384", "8B", "13N", "15O", "17F")
    assert len(m.stage(AddTemplates).names) == 8 and m.n_obs == 861
    mu = np.asarray(m.asimov())
    assert np.all(np.isfinite(mu)) and np.all(mu > 0)
    assert 1e5 < mu.sum() < 1e7


@pytest.mark.slow
def test_stacked_general_path_gradient_equals_plain_autodiff_of_direct_route(model):
    """The model's path (spectra stacked by shape and vmapped, closed-form P_ee derivatives, one
    fold over all kernels) gives the value, gradient and a forward-mode derivative of the
    independent, unstacked direct route."""
    from nuejax.model import expected_direct
    from nuejax.model.likelihood import poisson_nll

    # continua and lines
    assert len(model.stage(SolarSignals).groups) == 2 and model.stage(KernelFold).kernels.shape[0] == len(SIGNALS)
    p = model.parameters.values(eps_ee_L=0.07, mu_nu=3.0, sin2_theta12=0.29, dm2_21=7.2)
    data = model.asimov(model.parameters.values(eps_ee_L=0.02))

    def direct(p):
        return poisson_nll(expected_direct(model, p), data) + model.constraint_nll(p)

    v1, g1 = jax.value_and_grad(lambda p: model.nll(p, data))(p)
    v2, g2 = jax.value_and_grad(direct)(p)
    assert float(v1) == pytest.approx(float(v2), rel=1e-12)
    for k in model.parameters.free_names:
        assert float(g1[k]) == pytest.approx(float(g2[k]), rel=1e-9, abs=1e-9 * max(1.0, abs(float(g2[k])))), k
    t = {k: jnp.zeros_like(v) for k, v in p.items()}
    t["dm2_21"] = jnp.ones_like(p["dm2_21"])
    _, jvp = jax.jvp(lambda p: model.nll(p, data), (p,), (t,))
    assert float(jvp) == pytest.approx(float(g2["dm2_21"]), rel=1e-9)


@pytest.mark.slow  # in the slow job (README): keeps the default run under 10 min
def test_forward_node_derivatives_equal_reverse(model):
    """The two exact derivative routes through the node interpolation (tangent tables pushed
    forward to the kinematic sums, the default; plain reverse mode, a scatter-add) agree."""
    from nuejax.model.physics_params import osc_from_params, physics_from_params
    from nuejax.physics.precomputed import group_recoil_spectra

    p = model.parameters.values(eps_ee_L=0.07, mu_nu=3.0, sin2_theta12=0.29, dm2_21=7.2)
    group = model.stage(SolarSignals).groups[0]
    r = jnp.linspace(0.5, 1.5, group.pre.weights.shape[1])

    def f(p, forward):
        return jnp.sum(group_recoil_spectra(group, physics_from_params(p), osc_from_params(p),
                                            forward_nodes=forward) * r)

    for name in ("sin2_theta12", "dm2_21", "sin2_theta13"):  # the oscillation parameters reach the nodes
        g_fwd = jax.grad(f)(p, True)[name]
        g_rev = jax.grad(f)(p, False)[name]
        assert float(g_fwd) == pytest.approx(float(g_rev), rel=1e-12), name
    rng = np.random.default_rng(3)
    t = {k: jnp.zeros_like(v) for k, v in p.items()}
    for name in ("sin2_theta12", "dm2_21", "sin2_theta13", "sin2_theta23", "eps_ee_L", "mu_nu"):
        t[name] = jnp.asarray(rng.normal(), dtype=p[name].dtype)
    g_rev = jax.grad(f)(p, False)
    expect = sum(float(g_rev[k] * t[k]) for k in t)
    assert float(jax.jvp(lambda p: f(p, True), (p,), (t,))[1]) == pytest.approx(expect, rel=1e-12)


@pytest.mark.slow  # in the slow job (README): keeps the default run under 10 min
def test_kernels_of_different_shapes_fold_one_by_one():
    """Signals with different recoil binnings cannot share one stacked fold: the model folds them
    one by one (and groups their spectra separately) and still equals the direct route."""
    from nuejax.detector.response import unit_bin_edges
    from nuejax.model import Model, default_parameters, expected_direct, signal_component

    edges = unit_bin_edges(50, 249)
    sigs = (signal_component("pep", edges, norm="norm_pep", n_T=60),
            signal_component("7Be_862", edges, norm="norm_7Be", n_T=90))
    params = default_parameters(("pep", "7Be_862"), (), {"pep": "norm_pep", "7Be_862": "norm_7Be"})
    n = len(edges) - 1
    ps = params.release("eps_ee_L")
    m = Model.create((SolarSignals.create(sigs, ps), KernelFold.create(sigs), Exposure(jnp.ones(n), 100.0)), ps,
                     obs_edges=edges)
    assert isinstance(m.stage(KernelFold).kernels, tuple) and len(m.stage(SolarSignals).groups) == 2
    p = m.parameters.values(eps_ee_L=0.1, norm_pep=1.1)
    np.testing.assert_allclose(np.asarray(m.expected(p)), np.asarray(expected_direct(m, p)), rtol=1e-12)
