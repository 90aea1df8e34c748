"""Cross sections against reference totals (BKS, Phys. Rev. D 51, 6146 (1995), Eqs. A1-A6, integrated), closed forms and finite differences."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.constants import M_E, SIGMA0_PER_MEV, SW2_LOW_ENERGY
from nuejax.physics.cross_section import (
    MU_NU_UNIT,
    NewPhysics,
    bks_couplings,
    dsigma_dT,
    dsigma_dT_mm,
    dsigma_dT_weak,
    e_min,
    sigma_total,
    t_max,
)

# reference totals (computed from BKS Eqs. A1-A6, independently of this package): (T from 0 to T_max) in 1e-45 cm^2:
# E, sigma_nue tree, sigma_nue BKS, sigma_numu tree, sigma_numu BKS
REFERENCE_TOTALS = [
    (0.3843, 2.008, 1.918, 0.4885, 0.5085),
    (0.8613, 6.063, 5.781, 1.224, 1.280),
    (1.442, 11.43, 10.89, 2.110, 2.212),
    (10.0, 94.22, 89.57, 15.01, 15.78),
]


@pytest.mark.parametrize("E, nue_tree, nue_bks, numu_tree, numu_bks", REFERENCE_TOTALS)
def test_total_cross_sections_match_reference_table(E, nue_tree, nue_bks, numu_tree, numu_bks):
    tree = np.asarray(sigma_total(jnp.asarray(E), radiative=False)) / 1e-45
    bks = np.asarray(sigma_total(jnp.asarray(E), radiative=True)) / 1e-45
    np.testing.assert_allclose([tree[0], tree[1]], [nue_tree, numu_tree], rtol=3e-3)
    np.testing.assert_allclose([bks[0], bks[1]], [nue_bks, numu_bks], rtol=3e-3)
    # nu_tau couples like nu_mu in both models
    assert tree[2] == pytest.approx(tree[1], rel=1e-14)
    assert bks[2] == pytest.approx(bks[1], rel=1e-14)


def _tree_total_closed_form(E, gL, gR):
    """Analytic integral of the tree-level dsigma/dT from 0 to T_max."""
    tm = 2 * E**2 / (M_E + 2 * E)
    return SIGMA0_PER_MEV * (
        gL**2 * tm + gR**2 * E / 3 * (1 - (1 - tm / E) ** 3) - gL * gR * M_E * tm**2 / (2 * E**2)
    )


@pytest.mark.parametrize("E", [0.05, 0.3843, 1.442, 15.0])
def test_sigma_total_quadrature_equals_closed_form(E):
    eps = np.array([0.1, -0.2, 0.05])
    gL = np.array([0.5, -0.5, -0.5]) + SW2_LOW_ENERGY + eps
    gR = SW2_LOW_ENERGY - eps
    phys = NewPhysics(eps_L=eps, eps_R=-eps)
    got = np.asarray(sigma_total(jnp.asarray(E), phys, radiative=False))
    np.testing.assert_allclose(got, _tree_total_closed_form(E, gL, gR), rtol=1e-10)


def test_nsi_zero_is_standard_model_and_shift_matches_hand_formula():
    T = jnp.linspace(0.0, 0.9, 41)
    E = 1.2
    sm = dsigma_dT(T, E, radiative=False)
    np.testing.assert_array_equal(np.asarray(dsigma_dT(T, E, NewPhysics(), radiative=False)), np.asarray(sm))
    eL, eR = 0.1, -0.07
    nsi = np.asarray(dsigma_dT(T, E, NewPhysics(eps_L=(eL, 0, 0), eps_R=(eR, 0, 0)), radiative=False))
    gL, gR = 0.5 + SW2_LOW_ENERGY + eL, SW2_LOW_ENERGY + eR
    Tn = np.asarray(T)
    ref = SIGMA0_PER_MEV * (gL**2 + gR**2 * (1 - Tn / E) ** 2 - gL * gR * M_E * Tn / E**2)
    ref = np.where(Tn <= 2 * E**2 / (M_E + 2 * E), ref, 0.0)
    np.testing.assert_allclose(nsi[:, 0], ref, rtol=1e-13)
    np.testing.assert_allclose(nsi[:, 1:], np.asarray(sm)[:, 1:], rtol=1e-14)  # only nu_e shifted


def test_bks_nsi_sign_convention_matches_tree_level():
    """BKS couplings are the negatives of the tree ones; NSI must move both models the same way."""
    T, E = 0.3, 0.8613
    for flav in range(3):
        eps = np.zeros(3)
        eps[flav] = 0.05
        for radiative in (False, True):
            base = np.asarray(dsigma_dT(T, E, radiative=radiative))[flav]
            shifted = np.asarray(dsigma_dT(T, E, NewPhysics(eps_L=eps), radiative=radiative))[flav]
            ratio_sign = np.sign(shifted - base)
            # d/d eps_L of g_L^2 + ... has the sign of g_L (tree): + for nu_e, - for nu_mu,tau
            assert ratio_sign == (1 if flav == 0 else -1), (flav, radiative)
    gL, gR = bks_couplings(jnp.asarray(0.3))
    assert np.all(np.asarray(gR) > 0) and float(gL[0]) > 0 and float(gL[1]) < 0


def test_qed_correction_size_on_be7_spectrum():
    """Reference statement: QED changes the 7Be-862 spectrum by -0.1 % at T = 50 keV, to about -1.3 % near T_max."""
    E = 0.8613
    tm = float(t_max(E))
    T = jnp.array([0.05, 0.2, 0.4, 0.6, 0.98 * tm])
    full = np.asarray(dsigma_dT_weak(T, E, radiative=True))[:, 0]
    gL, gR = (np.asarray(g)[:, 0] for g in bks_couplings(T))
    z = np.asarray(T) / E
    no_qed = SIGMA0_PER_MEV * (gL**2 + gR**2 * (1 - z) ** 2 - gL * gR * M_E * z / E)
    change = full / no_qed - 1
    assert -0.0015 <= change[0] <= -0.0005  # "-0.1 %" at 50 keV, to the quoted digit
    assert np.all(np.diff(change) < 0)  # monotonically more negative towards T_max
    assert change[-1] < -0.013


def test_magnetic_moment_prefactor_and_structure():
    # pi alpha^2/m_e^2 = pi r_e^2 = 2.4947e-25 cm^2 (CODATA 2018 r_e); mu_nu in units of 1e-11 mu_B
    assert MU_NU_UNIT == 1e-11
    T, E = jnp.array([0.01, 0.1, 0.5]), 0.8613
    mm = np.asarray(dsigma_dT_mm(T, E, 1.0))  # mu_nu = 1e-11 mu_B
    shape = 1 / np.asarray(T) - 1 / E
    np.testing.assert_allclose(mm / shape[:, None], 2.4947e-25 * 1e-22, rtol=2e-5)
    # quadratic in mu, flavour-universal for a scalar mu, per flavour for a vector
    np.testing.assert_allclose(np.asarray(dsigma_dT_mm(T, E, 3.0)), mm * 9.0, rtol=1e-13)
    per = np.asarray(dsigma_dT_mm(T, E, jnp.array([1.0, 2.0, 0.0])))
    np.testing.assert_allclose(per, mm * np.array([1.0, 4.0, 0.0]), rtol=1e-13)
    # incoherent sum (paper Eq. xs_total)
    phys = NewPhysics(mu_nu=2.0)
    tot = np.asarray(dsigma_dT(T, E, phys))
    np.testing.assert_allclose(tot, np.asarray(dsigma_dT_weak(T, E)) + mm * 4.0, rtol=1e-13)


def test_zero_outside_kinematic_range():
    E = 0.5
    tm = float(t_max(E))
    T = jnp.array([-0.01, tm * (1 + 1e-9), 2.0])
    for radiative in (False, True):
        assert np.all(np.asarray(dsigma_dT(T, E, NewPhysics(mu_nu=10.0), radiative=radiative)) == 0.0)
    assert float(e_min(t_max(3.0))) == pytest.approx(3.0, rel=1e-12)


@pytest.mark.parametrize("radiative", [False, True])
@pytest.mark.slow
def test_no_nan_values_or_gradients_at_endpoints_and_extremes(radiative):
    E = jnp.logspace(-9, np.log10(20.0), 25)
    frac = jnp.array([0.0, 1e-12, 0.5, 1 - 1e-12, 1.0])
    T = t_max(E)[:, None] * frac

    def total(T, E, eL, mu):
        return jnp.sum(dsigma_dT(T, E, NewPhysics(eps_L=(eL, 0.0, 0.0), mu_nu=mu), radiative=radiative))

    vals = dsigma_dT(T, E[:, None], NewPhysics(mu_nu=1.0), radiative=radiative)
    assert np.all(np.isfinite(np.asarray(vals)))
    grads = jax.grad(total, argnums=(0, 1, 2, 3))(T, E[:, None], 0.1, 1.0)
    for g in grads:
        assert np.all(np.isfinite(np.asarray(g)))


@pytest.mark.parametrize("radiative", [False, True])
def test_gradients_match_finite_differences(radiative):
    def f(x):
        T, E, eL, eR, mu = x
        return dsigma_dT(T, E, NewPhysics(eps_L=(eL, 0.0, eL), eps_R=(eR, eR, 0.0), mu_nu=mu),
                         radiative=radiative).sum() / 1e-44

    x0 = jnp.array([0.3, 0.8613, 0.05, -0.03, 5.0])  # mu_nu = 5e-11 mu_B
    g = np.asarray(jax.grad(f)(x0))
    h = np.array([1e-6, 1e-6, 1e-6, 1e-6, 1e-4])
    fd = np.array([(float(f(x0.at[i].add(h[i]))) - float(f(x0.at[i].add(-h[i])))) / (2 * h[i]) for i in range(5)])
    np.testing.assert_allclose(g, fd, rtol=1e-6)


@pytest.mark.slow
def test_vmap_over_new_physics_points():
    T, E = jnp.linspace(0.01, 0.6, 7), 0.8613
    eps = jnp.linspace(-0.2, 0.2, 5)
    batch = NewPhysics(eps_L=jnp.stack([eps, 0 * eps, 0 * eps], -1), eps_R=jnp.zeros((5, 3)), mu_nu=eps * 10.0)
    out = jax.vmap(lambda p: dsigma_dT(T, E, p))(batch)
    for i in range(5):
        single = dsigma_dT(T, E, NewPhysics(eps_L=(eps[i], 0.0, 0.0), mu_nu=eps[i] * 10.0))
        np.testing.assert_allclose(np.asarray(out[i]), np.asarray(single), rtol=1e-14)


def test_mu_nu_in_bohr_magnetons_warns_only_when_concrete():
    """mu_nu is in units of 1e-11 mu_B; a concrete value that looks like mu_B warns with the fix,
    values in the right unit and traced values do not."""
    with pytest.warns(UserWarning, match=r"units of 1e-11 mu_B; did you mean mu_nu=3\?"):
        NewPhysics(mu_nu=3e-11)
    with pytest.warns(UserWarning, match=r"did you mean mu_nu=2\.8\?"):
        NewPhysics(mu_nu=np.float64(2.8e-11))
    with pytest.warns(UserWarning, match=r"did you mean mu_nu=\[1, 4, 0\]"):
        NewPhysics(mu_nu=np.array([1e-11, 4e-11, 0.0]))
    with pytest.warns(UserWarning, match="1e-11 mu_B"):
        dsigma_dT_mm(0.1, 0.8613, 3e-11)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for ok in (0.0, 0, 3.0, 1e-3, np.zeros(3), np.array([0.0, 2.0, 0.0]), jnp.asarray(3e-11)):
            NewPhysics(mu_nu=ok)
        # traced: jit, vmap and grad rebuild NewPhysics from tracers and never warn
        f = jax.jit(lambda m: dsigma_dT(0.1, 0.8613, NewPhysics(mu_nu=m)).sum())
        f(3e-11)
        jax.grad(lambda m: dsigma_dT(0.1, 0.8613, NewPhysics(mu_nu=m)).sum())(3e-11)
        batch = NewPhysics(eps_L=jnp.zeros((2, 3)), eps_R=jnp.zeros((2, 3)), mu_nu=jnp.array([1e-11, 2e-11]))
        jax.vmap(lambda p: dsigma_dT(0.1, 0.8613, p))(batch)
        jax.tree_util.tree_map(lambda x: x, batch)
