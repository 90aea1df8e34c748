"""Recoil spectra and rates: independent quadrature references, two-route consistency, autodiff."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import quad

from nuejax.constants import M_E, SIGMA0_PER_MEV, SW2_LOW_ENERGY
from nuejax.physics import solar
from nuejax.physics.cross_section import NewPhysics, t_max
from nuejax.physics.oscillation import OscillationParams, flavour_probabilities, production_profile
from nuejax.physics.spectra import (
    binned_recoil_spectrum,
    build_source,
    differential_rate,
    event_rate,
    rate_per_day_factor,
    recoil_spectrum,
    uniform_recoil_edges,
)

OSC = OscillationParams()
G_L = np.array([0.5, -0.5, -0.5]) + SW2_LOW_ENERGY
G_R = SW2_LOW_ENERGY


def _tree_xs(E, T):
    return SIGMA0_PER_MEV * (G_L**2 + G_R**2 * (1 - T / E) ** 2 - G_L * G_R * M_E * T / E**2)


@pytest.mark.parametrize("name", ["pp", "8B", "15O"])
def test_continuum_spectrum_matches_adaptive_quadrature(name):
    """Eq. fT vs scipy.quad over E of the table x P_ealpha x closed-form tree dsigma/dT.

    The reference interpolates the original table (not nuejax's 1000-point grid) and uses adaptive
    quadrature; 3e-4 is the measured accuracy of the default 48-node rule (docs/physics.md).
    """
    Et, dt = solar.tabulated_shape(name)
    Ed = np.linspace(0, Et[-1], 20001)
    Pd = np.asarray(flavour_probabilities(jnp.asarray(Ed), OSC, production_profile(name)))

    def integrand(E, T):
        P = np.array([np.interp(E, Ed, Pd[:, a]) for a in range(3)])
        return np.interp(E, Et, dt) * P @ _tree_xs(E, T)

    tm = float(t_max(Et[-1]))
    Ts = np.array([0.01, 0.3, 0.7, 0.95]) * tm
    got = np.asarray(recoil_spectrum(build_source(name), jnp.asarray(Ts), radiative=False))
    for T, g in zip(Ts, got):
        emin = 0.5 * (T + np.sqrt(T * T + 2 * M_E * T))
        ref = quad(integrand, emin, Et[-1], args=(T,), points=list(Et[Et > emin][:50]), limit=500)[0]
        assert g == pytest.approx(ref, rel=3e-4)


def test_line_spectrum_is_exact():
    src = build_source("7Be")
    T = jnp.linspace(0.0, 0.7, 71)
    got = np.asarray(recoil_spectrum(src, T, radiative=False))
    ref = np.zeros(71)
    for (E, br) in solar.COMPONENTS["7Be"].lines:
        P = np.asarray(flavour_probabilities(E, OSC, production_profile("7Be")))
        Tn = np.asarray(T)
        xs = np.array([_tree_xs(E, t) @ P if t <= 2 * E**2 / (M_E + 2 * E) else 0.0 for t in Tn])
        ref += br * xs
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=0)


@pytest.mark.parametrize("name", solar.COMPONENT_NAMES)
@pytest.mark.parametrize("radiative", [False, True])
@pytest.mark.slow
def test_binned_integral_equals_total_rate(name, radiative):
    """Sum of bin integrals of f_T (one quadrature route) equals the sigma_total route."""
    src = build_source(name)
    edges = uniform_recoil_edges(float(src.t_end), 2000)
    binned = float(rate_per_day_factor(src) * binned_recoil_spectrum(src, edges, radiative=radiative).sum())
    total = float(event_rate(src, radiative=radiative))
    assert binned == pytest.approx(total, rel=2e-5)


def test_threshold_rate_equals_partial_bin_sum():
    src = build_source("7Be")
    edges = uniform_recoil_edges(0.7, 700)  # 1 keV bins: threshold 0.2 MeV sits on an edge
    b = np.asarray(binned_recoil_spectrum(src, edges))
    partial = float(rate_per_day_factor(src)) * b[200:].sum()
    assert float(event_rate(src, threshold=0.2)) == pytest.approx(partial, rel=1e-8)


def test_midpoint_mode_and_differential_rate():
    src = build_source("pep")
    edges = uniform_recoil_edges(1.2, 100)
    mid = np.asarray(binned_recoil_spectrum(src, edges, mode="midpoint"))
    centres = 0.5 * (np.asarray(edges[1:]) + np.asarray(edges[:-1]))
    np.testing.assert_allclose(mid, np.asarray(recoil_spectrum(src, jnp.asarray(centres))), rtol=1e-15)
    dr = np.asarray(differential_rate(src, jnp.asarray(centres)))
    np.testing.assert_allclose(dr, mid * 3.307e31 * 1.44e8 * 86400, rtol=1e-12)
    with pytest.raises(ValueError, match="mode must be"):
        binned_recoil_spectrum(src, edges, mode="trapezoid")


def test_sm_limit_and_magnetic_moment_enhancement():
    src = build_source("7Be")
    T = jnp.linspace(0.01, 0.6, 30)
    np.testing.assert_array_equal(np.asarray(recoil_spectrum(src, T, NewPhysics())), np.asarray(recoil_spectrum(src, T)))
    mm = np.asarray(recoil_spectrum(src, T, NewPhysics(mu_nu=3.0)))  # 3e-11 mu_B
    sm = np.asarray(recoil_spectrum(src, T))
    ratio = mm / sm - 1
    assert np.all(ratio > 0) and np.all(np.diff(ratio) < 0)  # 1/T enhancement falls with T
    # magnetic-moment rate above 0.2 MeV: the increase equals the closed-form integral of Eq. xs_mm
    add = float(event_rate(src, NewPhysics(mu_nu=3.0), threshold=0.2) - event_rate(src, threshold=0.2))
    ref = 0.0
    for E, br in solar.COMPONENTS["7Be"].lines:
        tm = 2 * E**2 / (M_E + 2 * E)
        if tm > 0.2:
            ref += br * 2.4947e-25 * 9e-22 * (np.log(tm / 0.2) - (tm - 0.2) / E)
    assert add == pytest.approx(ref * float(rate_per_day_factor(src)), rel=1e-4)


@pytest.mark.slow
def test_vmap_over_parameter_points_equals_single_calls():
    src = build_source("8B", n_E=300)
    edges = uniform_recoil_edges(14.0, 50)
    eps = jnp.linspace(-0.1, 0.1, 4)
    batch = NewPhysics(eps_L=jnp.stack([eps, eps, 0 * eps], -1), eps_R=jnp.zeros((4, 3)), mu_nu=jnp.zeros(4))
    f = jax.jit(jax.vmap(lambda p: binned_recoil_spectrum(src, edges, p)))
    out = np.asarray(f(batch))
    for i in range(4):
        single = binned_recoil_spectrum(src, edges, NewPhysics(eps_L=(eps[i], eps[i], 0.0)))
        np.testing.assert_allclose(out[i], np.asarray(single), rtol=1e-12)


@pytest.mark.slow
def test_gradients_of_spectrum_and_rate_match_finite_differences():
    src = build_source("pp", n_E=400)
    edges = uniform_recoil_edges(0.25, 20)

    def f(x):
        phys = NewPhysics(eps_L=(x[0], 0.0, x[1]), eps_R=(x[2], 0.0, 0.0), mu_nu=x[3] * 10.0)  # x[3] = 0.3: 3e-11 mu_B
        osc = OSC._replace(sin2_theta12=x[4], dm2_21=x[5] * 1e-5)
        spec = binned_recoil_spectrum(src, edges, phys, osc, n_quad=24)
        return jnp.sum(spec * jnp.linspace(1.0, 2.0, 20)) / 1e-46

    x0 = jnp.array([0.05, -0.02, 0.03, 0.3, 0.308, 7.49])
    g = np.asarray(jax.jit(jax.grad(f))(x0))
    h = 1e-5 * np.maximum(1.0, np.abs(np.asarray(x0)))  # central differences: O(h^2) truncation
    fd = [(float(f(x0.at[i].add(h[i]))) - float(f(x0.at[i].add(-h[i])))) / (2 * h[i]) for i in range(6)]
    np.testing.assert_allclose(g, fd, rtol=1e-6)
    r = lambda s: event_rate(build_source("7Be"), osc=OSC._replace(sin2_theta12=s))
    fd_r = (float(r(0.308 + 1e-6)) - float(r(0.308 - 1e-6))) / 2e-6
    assert float(jax.grad(r)(0.308)) == pytest.approx(fd_r, rel=1e-6)


def test_analytic_shape_option_changes_rates_by_less_than_table_accuracy():
    for name in ("pp", "13N"):
        tab = float(event_rate(build_source(name)))
        ana = float(event_rate(build_source(name, shape_source="analytic")))
        assert ana == pytest.approx(tab, rel=2e-3)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="n_E=4 is too small"):
        build_source("pp", n_E=4)
    with pytest.raises(ValueError, match="recoil range"):
        uniform_recoil_edges(0.0, 10)


@pytest.mark.parametrize("name", ["pp", "7Be", "8B"])
@pytest.mark.slow
def test_precomputed_cross_section_route_equals_direct(name):
    """The model's route (cross-section coefficients precomputed on the fixed quadrature nodes)
    reproduces recoil_spectrum at arbitrary NSI, per-flavour mu_nu and oscillation parameters."""
    from nuejax.physics.precomputed import precompute_spectrum, precomputed_recoil_spectrum

    src = build_source(name, n_E=400)
    T = jnp.linspace(0.002, 0.999 * float(src.t_end), 300)
    pre = precompute_spectrum(src, T)
    osc = OSC._replace(sin2_theta12=0.29, dm2_21=8.1e-5, sin2_theta23=0.55)
    for phys in (NewPhysics(), NewPhysics(eps_L=(0.1, -0.2, 0.05), eps_R=(0.03, 0.1, -0.3), mu_nu=2.5),
                 NewPhysics(mu_nu=jnp.array([1.0, 4.0, 0.0]))):
        direct = np.asarray(recoil_spectrum(src, T, phys, osc, in_sigma0_units=True))
        np.testing.assert_allclose(np.asarray(precomputed_recoil_spectrum(src, pre, phys, osc)), direct, rtol=1e-12)


def test_single_lines_sum_to_composite():
    both = build_source("7Be")
    a, b = build_source("7Be_862"), build_source("7Be_384")
    assert float(event_rate(a) + event_rate(b)) == pytest.approx(float(event_rate(both)), rel=1e-13)
    assert float(a.flux) == pytest.approx(4.93e9 * 0.8956, rel=1e-12)
