"""MSW-LMA production-averaged probabilities: MISSION.md reference values and limits."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.physics.oscillation import (
    OscillationParams,
    flavour_probabilities,
    pmns_abs2,
    production_profile,
    survival_probability,
)

OSC = OscillationParams()


@pytest.mark.parametrize("component, E, expected", [("pp", 0.2, 0.545), ("7Be", 0.8613, 0.526), ("8B", 10.0, 0.327)])
def test_pee_reference_values(component, E, expected):
    assert float(survival_probability(E, OSC, production_profile(component))) == pytest.approx(expected, abs=3e-3)


def test_vacuum_averaged_limit_at_low_energy():
    s12, s13 = OSC.sin2_theta12, OSC.sin2_theta13
    vac = (1 - s13) ** 2 * (1 - 2 * s12 * (1 - s12)) + s13**2  # c13^4 (1 - sin^2(2 th12)/2) + s13^4
    p = float(survival_probability(1e-4, OSC, production_profile("pp")))
    assert p == pytest.approx(vac, rel=1e-5)


def test_adiabatic_high_energy_limit():
    # A >> dm2: nu_e leaves as nu_2, P_ee -> c13^4 s12^2 + s13^4
    s12, s13 = OSC.sin2_theta12, OSC.sin2_theta13
    p = float(survival_probability(1e4, OSC, production_profile("8B")))
    assert p == pytest.approx((1 - s13) ** 2 * s12 + s13**2, rel=1e-4)


def test_unitarity_and_theta23_split():
    E = jnp.linspace(0.1, 15.0, 50)
    prof = production_profile("8B", "agss09")
    P = np.asarray(flavour_probabilities(E, OSC, prof))
    np.testing.assert_allclose(P.sum(-1), 1.0, rtol=1e-14)
    U2 = np.asarray(pmns_abs2(OSC))
    np.testing.assert_allclose(U2.sum(0), 1.0, rtol=1e-14)
    np.testing.assert_allclose(U2.sum(1), 1.0, rtol=1e-14)
    # with theta13 = 0 the non-electron part splits exactly as cos^2 th23 : sin^2 th23
    P0 = np.asarray(flavour_probabilities(E, OSC._replace(sin2_theta13=0.0), prof))
    np.testing.assert_allclose(P0[:, 1] / (1 - P0[:, 0]), 1 - OSC.sin2_theta23, rtol=1e-12)


def test_gradients_match_finite_differences():
    prof = production_profile("7Be")

    def f(x):
        osc = OSC._replace(sin2_theta12=x[0], sin2_theta13=x[1], dm2_21=x[2] * 1e-5, sin2_theta23=x[3])
        return jnp.sum(flavour_probabilities(jnp.array([0.3843, 0.8613, 5.0]), osc, prof) * jnp.array([1.0, 2.0, 3.0]))

    x0 = jnp.array([0.308, 0.02215, 7.49, 0.47])
    g = np.asarray(jax.grad(f)(x0))
    h = 1e-6
    fd = [(float(f(x0.at[i].add(h))) - float(f(x0.at[i].add(-h)))) / (2 * h) for i in range(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-10)


def test_profiles_are_normalised():
    for c in ("pp", "8B"):
        for model in ("gs98", "agss09"):
            p = production_profile(c, model)
            assert float(p.weight.sum()) == pytest.approx(1.0, rel=1e-12)
            assert np.all(np.asarray(p.n_e) > 0)


@pytest.mark.slow  # 18 s; the default run keeps the gradient-vs-finite-difference checks
def test_custom_jvp_of_production_average_equals_plain_autodiff():
    """The closed-form derivatives of the production-averaged cos 2θ_m (forward and reverse, and
    second order) equal plain autodiff of the same formula, for every argument."""
    from nuejax.physics.oscillation import _matter_cos2, production_mean_cos2m

    prof = production_profile("8B")
    # 301 energies: not a multiple of the zone-sum block, so the padding is exercised too
    args = (jnp.linspace(0.1, 15.0, 301), jnp.asarray(7.4e-5), jnp.asarray(0.31), jnp.asarray(0.022),
            prof.n_e, prof.weight)

    def plain(E, dm2, s12, s13, n_e, w):
        x, _, _, z = _matter_cos2(E, dm2, s12, s13, n_e)
        return jnp.sum(w * x / jnp.sqrt(z), -1)

    np.testing.assert_allclose(production_mean_cos2m(*args), plain(*args), rtol=1e-14, atol=1e-15)
    rng = np.random.default_rng(1)
    for i in range(6):  # one argument at a time: a random tangent (forward) and cotangent (reverse)
        t = tuple(jnp.asarray(rng.normal(size=np.shape(a))) if j == i else jnp.zeros_like(a)
                  for j, a in enumerate(args))
        ref = np.asarray(jax.jvp(plain, args, t)[1])
        got = np.asarray(jax.jvp(production_mean_cos2m, args, t)[1])
        assert np.abs(got - ref).max() <= 1e-13 * np.abs(ref).max(), ("jvp", i)
        ct = jnp.asarray(rng.normal(size=args[0].shape))
        ref = np.asarray(jax.vjp(plain, *args)[1](ct)[i])
        got = np.asarray(jax.vjp(production_mean_cos2m, *args)[1](ct)[i])
        assert np.abs(got - ref).max() <= 1e-13 * np.abs(ref).max(), ("vjp", i)

    def second(f):
        return jax.hessian(lambda d, s: f(args[0], d, s, *args[3:]).sum(), (0, 1))(args[1], args[2])

    got, ref = second(production_mean_cos2m), second(plain)
    for a in range(2):
        for b in range(2):
            assert float(got[a][b]) == pytest.approx(float(ref[a][b]), rel=1e-12)


@pytest.mark.parametrize("component", ["pp", "8B", "hep"] + [pytest.param(c, marks=pytest.mark.slow)
                                                              for c in ("7Be", "13N", "15O", "17F", "pep")])
@pytest.mark.slow
def test_production_quadrature_equals_the_zone_sum(component):
    """The Gauss rule of the production distribution (40 nodes, what the flavour-diagonal model
    uses) reproduces the average over every zone of the B16 table: P_ee and its derivatives in
    the oscillation parameters over wide parameter ranges; the NSI-in-propagation states at
    |eps| <= 0.1 (larger eps need more nodes: those models keep every zone)."""
    from nuejax.physics.oscillation import PRODUCTION_NODES, mass_state_weights_nsi

    full = production_profile(component)
    rule = production_profile(component, nodes=PRODUCTION_NODES)
    assert rule.n_e.shape == (PRODUCTION_NODES,) and full.n_e.shape[0] > 10 * PRODUCTION_NODES
    assert float(jnp.sum(rule.weight)) == pytest.approx(1.0, abs=1e-14)
    rng = np.random.default_rng(7)
    E = jnp.linspace(0.05, 20.0, 400)
    for _ in range(6):
        osc = OscillationParams(sin2_theta12=rng.uniform(0.2, 0.45), sin2_theta13=rng.uniform(0.0, 0.05),
                                dm2_21=rng.uniform(2e-5, 2e-4))
        np.testing.assert_allclose(flavour_probabilities(E, osc, rule), flavour_probabilities(E, osc, full),
                                   rtol=0, atol=1e-14)

        def mean_pee(th, prof):
            o = osc._replace(sin2_theta12=th[0], dm2_21=th[1] * 1e-5, sin2_theta13=th[2])
            return jnp.sum(survival_probability(E, o, prof))

        th = jnp.array([osc.sin2_theta12, osc.dm2_21 * 1e5, osc.sin2_theta13])
        np.testing.assert_allclose(jax.grad(mean_pee)(th, rule), jax.grad(mean_pee)(th, full), rtol=1e-11)
        eps = rng.uniform(-0.1, 0.1, (3, 3)) + 1j * rng.uniform(-0.06, 0.06, (3, 3))
        eps = jnp.asarray(0.5 * (eps + eps.conj().T))
        np.testing.assert_allclose(mass_state_weights_nsi(E, osc, rule, eps), mass_state_weights_nsi(E, osc, full, eps),
                                   rtol=0, atol=1e-12)


def test_production_quadrature_is_a_gauss_rule_and_checks_its_input():
    """Exact for polynomials of degree <= 2M - 1 in ln n_e, not beyond; bad input is an error."""
    from nuejax.physics.oscillation import production_quadrature

    full = production_profile("8B")
    u, w = np.log(np.asarray(full.n_e)), np.asarray(full.weight)
    x, W = production_quadrature(full.n_e, full.weight, 5)
    ux = np.log(x)
    c = u @ w
    for k in range(10):
        assert ((ux - c) ** k) @ W == pytest.approx(((u - c) ** k) @ w, rel=1e-10, abs=1e-14), k
    assert abs(((ux - c) ** 10) @ W - ((u - c) ** 10) @ w) > 1e-6 * (((u - c) ** 10) @ w)
    with pytest.raises(ValueError, match="nodes=0"):
        production_quadrature(full.n_e, full.weight, 0)
    with pytest.raises(ValueError, match="finite"):
        production_quadrature(np.array([1.0, -2.0]), np.array([0.5, 0.5]), 1)
    # equal densities are one point of the measure: 3 distinct values carry a 3-node rule, not 4
    x, W = production_quadrature(np.array([1.0, 1.0, 2.0, 3.0]), np.full(4, 0.25), 3)
    assert np.all(np.isfinite(x)) and W.sum() == pytest.approx(1.0)
    assert np.sort(x) == pytest.approx([1.0, 2.0, 3.0]) and np.sort(W) == pytest.approx([0.25, 0.25, 0.5])
    with pytest.raises(ValueError, match="distinct densities"):
        production_quadrature(np.array([1.0, 1.0, 2.0, 3.0]), np.full(4, 0.25), 4)


@pytest.mark.slow
def test_models_keep_every_zone_outside_the_verified_mixing_range(small_model):
    """A model whose sin2_theta12 bounds leave the range where the 40-node rule is verified
    averages over every zone (and equals the direct route there); back inside, the rule again."""
    from nuejax.model import SolarSignals, expected_direct
    from nuejax.model.physics_params import production_nodes

    model = small_model
    groups = lambda m: m.stage(SolarSignals).groups  # noqa: E731
    assert production_nodes(model.parameters) == 40 and groups(model)[0].profile.n_e.shape[-1] == 40
    wide = model.with_parameters(model.parameters.update("sin2_theta12", lower=0.01, value=0.02, fixed=False))
    assert production_nodes(wide.parameters) is None
    assert all(g.profile.n_e.shape[-1] > 40 for g in groups(wide))
    p = wide.parameters.values(sin2_theta12=0.02)
    np.testing.assert_allclose(wide.expected(p), expected_direct(wide, p), rtol=1e-11)
    back = wide.with_parameters(model.parameters)
    assert groups(back)[0].profile.n_e.shape[-1] == 40
