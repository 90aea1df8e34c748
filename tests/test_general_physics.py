"""Beyond the paper's physics: general NSI (density-matrix cross section), NSI in propagation,
light mediators, Earth regeneration, and the general-case models and fast path.

Independent references: tests/reference_xs.py (amplitude-level cross sections with explicit Dirac
spinors, written without seeing nuejax) and tests/reference_propagation.json (numerical evolution
through the B16 Sun and PREM Earth, tests/reference_propagation.py, likewise independent)."""

import json
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import reference_xs as ref
from nuejax.constants import G_F
from nuejax.errors import InputError, ModelProtocolError
from nuejax.physics import (GeneralPhysics, NewPhysics, OscillationParams, build_source, day_night_asymmetry,
                            dsigma_dT, dsigma_dT_state, earth_exposure, event_rate, event_rate_general, hermitian,
                            recoil_spectrum, recoil_spectrum_general, scalar_mediator_dsigma_dT)
from nuejax.physics.earth import EarthExposure, chord_steps, night_density_matrix
from nuejax.physics.oscillation import (density_matrix, flavour_probabilities, mass_state_weights,
                                        mass_state_weights_nsi, mass_state_weights_three_flavour, production_profile)

REF_PROP = json.loads((Path(__file__).parent / "reference_propagation.json").read_text())
OSC = OscillationParams()
T = np.array([0.005, 0.05, 0.2, 0.45, 0.6])
E = 0.8613


def _cm(x):
    return np.array(x["real"]) + 1j * np.array(x["imag"])


def _random_hermitian(rng, scale):
    a = rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3))
    return scale * (a + a.conj().T) / 2


def _random_state(rng):
    a = rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3))
    r = a @ a.conj().T
    return r / np.trace(r)


# -- cross sections against the amplitude-level reference -------------------------------------------
def test_density_matrix_cross_section_equals_amplitude_calculation():
    rng = np.random.default_rng(3)
    gL, gR = ref.tree_couplings()
    for _ in range(4):
        eL, eR, rho = _random_hermitian(rng, 0.3), _random_hermitian(rng, 0.3), _random_state(rng)
        for e in (0.3843, 0.8613, 8.0):
            t = T * (2 * e**2 / (0.511 + 2 * e)) / 0.7
            mine = dsigma_dT_state(t, e, rho, GeneralPhysics(eps_L=eL, eps_R=eR), radiative=False)
            theirs = ref.dsigma_dT_general(t, e, rho, gL, gR, eL, eR)
            np.testing.assert_allclose(np.asarray(mine), theirs, rtol=1e-12, atol=0)


@pytest.mark.slow
def test_diagonal_couplings_give_the_flavour_diagonal_result():
    phys = NewPhysics(eps_L=(0.1, -0.2, 0.3), eps_R=(0.05, 0.1, -0.2), mu_nu=2.0)
    rho = np.diag([0.5, 0.3, 0.2]).astype(complex)
    for radiative in (True, False):
        diag = dsigma_dT(T, E, phys, radiative=radiative) @ np.array([0.5, 0.3, 0.2])
        gen = dsigma_dT_state(T, E, rho, GeneralPhysics.from_new_physics(phys), radiative=radiative)
        np.testing.assert_allclose(np.asarray(gen), np.asarray(diag), rtol=1e-12)
    # whole spectra: state from the same oscillation code, off-diagonal entries zero
    for name in ("7Be", "8B"):
        src = build_source(name)
        t = jnp.linspace(0.01, 0.95 * float(src.t_end), 25)
        a = recoil_spectrum(src, t, phys, OSC)
        b = recoil_spectrum_general(src, t, phys, OSC)
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-12)


@pytest.mark.slow
def test_rates_of_the_general_route_agree_with_the_total_cross_section_route():
    phys = NewPhysics(eps_L=(0.1, 0.0, 0.0), mu_nu=2.0)
    for name, tol in (("7Be", 1e-8), ("8B", 1e-5)):
        src = build_source(name)
        a = float(event_rate(src, phys, OSC, threshold=0.2))
        b = float(event_rate_general(src, phys, OSC, threshold=0.2))
        assert b == pytest.approx(a, rel=tol)


@pytest.mark.parametrize("mass", [0.1, 1.0, 30.0])
def test_light_mediators_equal_the_amplitude_calculation(mass):
    rng = np.random.default_rng(5)
    rho = _random_state(rng)
    gL, gR = ref.tree_couplings()
    g_nu = np.array([1.0, 2.0, -1.5])
    mine = dsigma_dT_state(T, E, rho, GeneralPhysics(zprime_coupling=g_nu, zprime_mass=mass), radiative=False)
    theirs = ref.dsigma_dT_vector_mediator(T, E, rho, gL, gR, g_nu * 1e-6, 1e-6, mass)
    np.testing.assert_allclose(np.asarray(mine), theirs, rtol=1e-12)
    s = scalar_mediator_dsigma_dT(T, E, 3.0, mass)
    np.testing.assert_allclose(np.asarray(s), ref.dsigma_dT_scalar_mediator(T, E, 3e-6, 1e-6, mass), rtol=1e-12)
    # the scalar adds incoherently to the weak part in the state cross section
    both = dsigma_dT_state(T, E, rho, GeneralPhysics(phi_coupling=3.0, phi_mass=mass), radiative=False)
    np.testing.assert_allclose(np.asarray(both), ref.dsigma_dT_general(T, E, rho, gL, gR) + np.asarray(s), rtol=1e-12)


def test_heavy_mediators_are_contact_interactions():
    rng = np.random.default_rng(8)
    rho = _random_state(rng)
    m, c = 1e4, 5e3  # 10 GeV; coupling in 1e-12
    eps = c * 1e-12 / (2 * math.sqrt(2) * G_F * m**2)
    heavy = dsigma_dT_state(T, E, rho, GeneralPhysics(zprime_coupling=c, zprime_mass=m))
    contact = dsigma_dT_state(T, E, rho, GeneralPhysics(eps_L=np.eye(3) * eps, eps_R=np.eye(3) * eps))
    # the propagator differs from the contact one by 2 m_e T / m^2 < 1e-8 here
    np.testing.assert_allclose(np.asarray(heavy), np.asarray(contact), rtol=1e-10)
    # the scalar falls as 1/m^4 with the shape m_e T (2 m_e + T) / (8 pi E^2 m^4)
    s1, s2 = (np.asarray(scalar_mediator_dsigma_dT(T, E, 1.0, mm)) for mm in (1e4, 2e4))
    np.testing.assert_allclose(s1 / s2, 16.0, rtol=1e-7)


# -- propagation -------------------------------------------------------------------------------
def test_state_without_nsi_is_the_flavour_probabilities_and_zero_nsi_changes_nothing():
    prof = production_profile("8B")
    e = jnp.array([0.5, 2.0, 10.0, 15.0])
    rho = density_matrix(e, OSC, prof)
    np.testing.assert_allclose(np.real(np.diagonal(rho, axis1=-2, axis2=-1)),
                               np.asarray(flavour_probabilities(e, OSC, prof)), atol=1e-15)
    np.testing.assert_allclose(np.asarray(rho), np.conj(np.swapaxes(np.asarray(rho), -1, -2)), atol=1e-16)
    np.testing.assert_allclose(np.asarray(mass_state_weights_nsi(e, OSC, prof, jnp.zeros((3, 3), complex))),
                               np.asarray(mass_state_weights(e, OSC, prof)), atol=1e-15)


@pytest.mark.parametrize("key", sorted(REF_PROP["solar"]))
def test_solar_states_against_numerical_evolution(key):
    case = REF_PROP["solar"][key]
    prof = production_profile(case["component"])
    eps = jnp.asarray(_cm(REF_PROP["epsV"][case["epsV"]]))
    e = jnp.array([case["E_MeV"]])
    # the three-flavour adiabatic states equal the numerical evolution (reference uncertainty ~2e-5)
    P3 = np.asarray(mass_state_weights_three_flavour(e, OSC, prof, eps))[0]
    np.testing.assert_allclose(P3, case["p"], atol=3e-5)
    # nuejax's one-mass-scale states neglect the matter correction to theta13, which grows with
    # the matter potential ~ E: P_3 = s13^2 exactly, off by 2.5e-3 at 10 MeV, P_ee by 7e-4 there
    rho = np.asarray(density_matrix(e, OSC, prof, eps))[0]
    assert rho[0, 0].real == pytest.approx(case["P_ee"], abs=2e-4 + 8e-5 * case["E_MeV"])
    # and the NSI shift of P_ee (what the fits measure), to the same approximation
    if case["epsV"] != "eps0":
        sm = REF_PROP["solar"][key.rsplit("|", 1)[0] + "|eps0"]
        mine = float(jnp.real(density_matrix(e, OSC, prof, eps)[0, 0, 0] - density_matrix(e, OSC, prof)[0, 0, 0]))
        assert mine == pytest.approx(case["P_ee"] - sm["P_ee"], abs=1e-4 + 2e-5 * case["E_MeV"])


def test_propagation_nsi_size_matches_the_independent_estimate():
    eps = jnp.diag(jnp.array([0.2, 0.0, 0.0])).astype(complex)  # eps^L_ee = eps^R_ee = 0.1
    for comp, e, expect in (("7Be", 0.8613, -0.005), ("8B", 10.0, -0.010)):
        prof = production_profile(comp)
        d = density_matrix(jnp.array([e]), OSC, prof, eps) - density_matrix(jnp.array([e]), OSC, prof)
        assert float(jnp.real(d[0, 0, 0])) == pytest.approx(expect, abs=5e-4)


@pytest.mark.parametrize("key", sorted(REF_PROP["earth"]))
def test_earth_crossing_against_numerical_evolution(key):
    case = REF_PROP["earth"][key]
    prof = production_profile(case["component"])
    e = jnp.array([case["E_MeV"]])
    ds, ne = chord_steps([case["cos_nadir"]])
    one = EarthExposure(jnp.array([case["cos_nadir"]]), jnp.ones(1), jnp.asarray(ds), jnp.asarray(ne), 0.0)
    night = np.asarray(night_density_matrix(e, OSC, prof, one))[0]
    from nuejax.physics.earth import earth_evolution

    S = np.asarray(earth_evolution(e, OSC, jnp.asarray(ds[0]), jnp.asarray(ne[0])))[0]
    np.testing.assert_allclose(S @ S.conj().T, np.eye(2), atol=1e-13)
    day = np.asarray(density_matrix(e, OSC, prof))[0]
    sm_day = _cm(REF_PROP["solar"][f"{case['component']}|{case['E_MeV']}|eps0"]["rho"])
    # the regeneration (night - day), whole density matrix: up to 1.5e-4 of 1e-2 (8B, 10 MeV) from
    # the one-mass-scale approximation in the Earth (the same with three-flavour solar states)
    np.testing.assert_allclose(night - day, _cm(case["rho_night"]) - sm_day, atol=2e-4)
    assert np.trace(night).real == pytest.approx(1.0, abs=1e-13)


def test_earth_evolution_in_float32_stays_float32():
    """The float32 evolution along a long chord (251 Magnus steps) is complex64 and within 1e-3 of
    the float64 one: no float64 constant promotes its loop."""
    from nuejax.physics.earth import earth_evolution

    ds, ne = chord_steps([0.98])
    e = jnp.linspace(0.0, 15.0, 64)
    S64 = earth_evolution(e, OSC, jnp.asarray(ds[0]), jnp.asarray(ne[0]))
    S32 = earth_evolution(e.astype(jnp.float32), OSC, jnp.asarray(ds[0], jnp.float32), jnp.asarray(ne[0], jnp.float32))
    assert S64.dtype == jnp.complex128 and S32.dtype == jnp.complex64
    np.testing.assert_allclose(np.asarray(S32), np.asarray(S64), atol=1e-3)
    np.testing.assert_array_equal(np.asarray(S64[0]), np.eye(2))  # E = 0: the identity


@pytest.mark.slow
def test_day_night_asymmetries_against_published_values():
    be7 = earth_exposure("borexino")
    assert float(be7.night_fraction) == pytest.approx(0.5, abs=1e-3)
    # Borexino 7Be, 0.55-0.8 MeV: A_dn = 0.001 +- 0.012 (stat) +- 0.007 (syst) (PLB 707 (2012) 22)
    a = float(day_night_asymmetry(build_source("7Be_862"), be7, OSC, threshold=0.45, t_upper=0.66))
    assert abs(a) < 1e-3 and abs(a - 0.001) < 0.014
    # Super-Kamiokande-I (PRD 69 (2004) 011104): at tan^2 = 0.55, dm2 = 6.3e-5, two flavours, 5-20 MeV
    # total energy, the expected (D - N)/mean was -2.1 %
    sk = earth_exposure("super-kamiokande")
    sk1 = OscillationParams(sin2_theta12=0.55 / 1.55, sin2_theta13=0.0, dm2_21=6.3e-5)
    a = float(day_night_asymmetry(build_source("8B"), sk, sk1, threshold=4.49, t_upper=19.49, n_quad=32))
    assert -a == pytest.approx(-0.021, abs=0.004)


# -- general-case models and their fast path ----------------------------------------------------
@pytest.fixture(scope="module")
def models():
    from nuejax.model import borexino_like_model

    kw = dict(n_T=60, signals=("7Be_862", "8B"), backgrounds=("210Bi",))
    return borexino_like_model(**kw), borexino_like_model(**kw, nsi="all", mediators=("zprime", "phi"))


def _random_point(names, rng):
    vals = {n: 0.2 * rng.normal() for n in names}
    if "mu_nu" in vals:
        vals["mu_nu"] = abs(vals["mu_nu"]) * 10
    return vals


@pytest.mark.slow
def test_general_model_equals_default_model_and_direct_route(models):
    from nuejax.model import expected, expected_direct

    m0, mg = models
    p = dict(eps_ee_L=0.1, eps_tautau_R=-0.2, mu_nu=2.0)
    a = expected(m0, m0.parameters.values(**p))
    b = expected(mg, mg.parameters.values(**p))
    np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-12)
    q = mg.parameters.values(eps_ee_L=0.1, eps_emu_L_re=0.05, eps_etau_L_im=-0.07, eps_mutau_R_re=0.1, mu_nu=2.0,
                             zprime_coupling=3.0, zprime_mass=5.0, phi_coupling=50.0, phi_mass=1.0)
    np.testing.assert_allclose(np.asarray(expected(mg, q)), np.asarray(expected_direct(mg, q)), rtol=1e-12)


@pytest.mark.slow
def test_general_fast_path_equals_general_path(models):
    from nuejax.model import FoldedPolynomial, expected, fast_model

    _, mg = models
    fm = fast_model(mg)
    # 18 NSI + mu_nu + two mediator couplings; the structural zeros dropped
    stage = fm.stage(FoldedPolynomial)
    assert len(stage.poly_names) == 21 and stage.basis.shape[1] == 164
    rng = np.random.default_rng(2)
    for _ in range(3):
        v = _random_point(stage.poly_names, rng)
        a = expected(mg, mg.parameters.values(**v))
        b = expected(fm, fm.parameters.values(**v))
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-12, atol=1e-12 * float(jnp.max(a)))


def test_nll_gradient_in_complex_couplings_matches_finite_differences(models):
    from nuejax.model import nll

    _, mg = models
    p0 = mg.parameters.values(eps_etau_L_re=0.05, eps_etau_L_im=0.03, eps_emu_R_im=-0.04, zprime_coupling=1.0)
    data = mg.asimov(mg.parameters.values())
    names = ("eps_etau_L_re", "eps_etau_L_im", "eps_emu_R_im", "zprime_coupling", "zprime_mass")
    g = jax.grad(lambda p: nll(mg, p, data))(p0)
    for n in names:
        h = 1e-5 * max(1.0, abs(float(p0[n])))
        up, dn = dict(p0), dict(p0)
        up[n], dn[n] = p0[n] + h, p0[n] - h
        fd = (float(nll(mg, up, data)) - float(nll(mg, dn, data))) / (2 * h)
        assert float(g[n]) == pytest.approx(fd, rel=1e-5, abs=1e-6), n


@pytest.mark.slow
def test_propagation_and_day_night_models():
    from nuejax.model import borexino_like_model, expected, expected_direct, fast_model, nll

    kw = dict(n_T=30, n_E=120, signals=("8B",), backgrounds=("210Bi",))
    mp = borexino_like_model(**kw, nsi=("eps_ee_L", "eps_etau_L_re"), propagation_nsi=True, day_night="average")
    p = mp.parameters.values(eps_ee_L=0.1, eps_etau_L_re=-0.1)
    assert np.all(np.isfinite(np.asarray(expected(mp, p))))
    np.testing.assert_allclose(np.asarray(expected(mp, p)), np.asarray(expected_direct(mp, p)), rtol=1e-12)
    # NSI in propagation moves the spectrum beyond their effect at detection
    md = borexino_like_model(**kw, nsi=("eps_ee_L", "eps_etau_L_re"), day_night="average")
    assert float(jnp.max(jnp.abs(expected(mp, p) / expected(md, p) - 1))) > 1e-3
    data = mp.asimov(mp.parameters.values())
    g = jax.grad(lambda q: nll(mp, q, data))(p)["eps_ee_L"]
    up, dn = dict(p), dict(p)
    up["eps_ee_L"], dn["eps_ee_L"] = 0.1 + 1e-5, 0.1 - 1e-5
    assert float(g) == pytest.approx((float(nll(mp, up, data)) - float(nll(mp, dn, data))) / 2e-5, rel=1e-5)
    with pytest.raises(ModelProtocolError, match="propagation"):
        fast_model(mp)
    fd = fast_model(md)
    np.testing.assert_allclose(np.asarray(expected(fd, fd.parameters.values(eps_etau_L_re=-0.1))),
                               np.asarray(expected(md, md.parameters.values(eps_etau_L_re=-0.1))), rtol=1e-12)


def test_bad_general_options_are_named():
    from nuejax.model import borexino_like_model

    with pytest.raises(InputError, match="did you mean 'eps_emu_L_re'"):
        borexino_like_model(n_T=10, signals=("7Be_862",), backgrounds=(), nsi=("eps_emu_l_re",))
    with pytest.raises(InputError, match="unknown mediator"):
        borexino_like_model(n_T=10, signals=("7Be_862",), backgrounds=(), mediators=("axion",))
    with pytest.raises(InputError, match="period"):
        borexino_like_model(n_T=10, signals=("7Be_862",), backgrounds=(), day_night="dusk")
    with pytest.raises(ValueError, match="unknown detector"):
        earth_exposure("kamland-north")
    with pytest.raises(ValueError, match="Hermitian"):
        GeneralPhysics(eps_L=np.array([[0, 0.1, 0], [0.1j, 0, 0], [0, 0, 0]]))
    with pytest.raises(ValueError, match="shape"):
        GeneralPhysics(eps_R=np.zeros(4))
    # a (3,) vector is the diagonal, as for NewPhysics
    np.testing.assert_allclose(np.asarray(dsigma_dT_state(T, E, np.eye(3) / 3, GeneralPhysics(eps_L=(0.1, 0.0, 0.3)))),
                               np.asarray(dsigma_dT_state(T, E, np.eye(3) / 3, NewPhysics(eps_L=(0.1, 0.0, 0.3)))))
    # massless mediators at T = 0: no NaN (values or gradients); their rates need a threshold
    f = lambda c: dsigma_dT_state(jnp.array([0.0, 0.1]), E, np.eye(3) / 3,  # noqa: E731
                                  GeneralPhysics(zprime_coupling=c, zprime_mass=0.0, phi_coupling=c,
                                                 phi_mass=0.0)).sum()
    assert np.isfinite(float(f(1.0))) and np.isfinite(float(jax.grad(f)(1.0)))
    with pytest.raises(ValueError, match="massless"):
        event_rate_general(build_source("7Be_862"), GeneralPhysics(phi_coupling=1.0, phi_mass=0.0))
    with pytest.raises(ValueError, match="end point"):
        day_night_asymmetry(build_source("7Be_862"), earth_exposure("borexino", n_bins=4), OSC, threshold=0.7)
    assert np.asarray(hermitian([1.0, 2.0, 3.0], [0.1, 0.2, 0.3], [0.4, 0.5, 0.6]))[1, 0] == pytest.approx(0.1 - 0.4j)


@pytest.mark.slow
def test_rates_command_takes_the_general_parameters(capsys):
    from nuejax.cli import main
    from nuejax.physics import event_rate_general

    assert main(["rates", "--eps-etau-L-re", "0.1", "--eps-emu-R-im", "-0.05", "--threshold", "0.2", "--json"]) == 0
    rates = json.loads(capsys.readouterr().out)
    phys = GeneralPhysics(eps_L=hermitian([0, 0, 0], [0, 0.1, 0]), eps_R=hermitian([0, 0, 0], im=[-0.05, 0, 0]))
    direct = sum(float(event_rate_general(build_source(s), phys, OSC, threshold=0.2)) for s in ("7Be_862", "7Be_384"))
    assert rates["7Be"] == pytest.approx(direct, rel=1e-10)
    assert main(["rates", "--zprime-coupling", "1", "--zprime-mass", "0"]) == 2  # massless: needs a threshold
    assert "threshold" in capsys.readouterr().err


@pytest.mark.slow
def test_general_nsi_model_with_a_floating_response(models):
    """A combination the model classes could not make: general NSI and mediators in the signals,
    a floating analytic response as the fold, on the general path and on the fast path. At a
    flavour-diagonal point it equals the flavour-diagonal floating model to rounding; at the
    nominal response it equals the fixed-kernel model to the floating fold's normalisation
    agreement (the fixed kernels carry C_k as a ratio of two numerical integrals: 4.5e-6 measured
    here with 60 recoil bins, 1.2e-7 with 100 in tests/test_floating_response.py); fast equals
    general to 1e-12; the response parameters move the spectrum."""
    from nuejax.model import PolynomialSignals, expected, fast_model, floating_response_model

    m0, mg = models
    general = floating_response_model(mg, fast=False)
    fast = floating_response_model(mg, fast=True)
    assert fast.stage(PolynomialSignals) is not None and "zprime_mass" not in fast.parameters
    assert fast_model(general).parameters.names == fast.parameters.names
    diag = dict(eps_ee_L=0.1, eps_tautau_R=-0.2, mu_nu=2.0, light_yield=520.0)
    d0 = floating_response_model(m0, fast=False)
    np.testing.assert_allclose(np.asarray(expected(general, general.parameters.values(**diag))),
                               np.asarray(expected(d0, d0.parameters.values(**diag))), rtol=1e-12)
    v = dict(eps_ee_L=0.1, eps_etau_L_re=0.2, eps_emu_R_im=-0.1, mu_nu=3.0, zprime_coupling=2.0, phi_coupling=20.0)
    fixed = np.asarray(expected(mg, mg.parameters.values(**v)))
    a = np.asarray(expected(general, general.parameters.values(**v)))
    b = np.asarray(expected(fast, fast.parameters.values(**v)))
    np.testing.assert_allclose(a, fixed, rtol=1e-5)
    np.testing.assert_allclose(b, a, rtol=1e-12)
    moved = np.asarray(expected(fast, fast.parameters.values(**v, light_yield=520.0)))
    assert np.max(np.abs(moved / b - 1)) > 1e-2
