"""Scattering on atoms (nuejax.physics.atomic) and the XENONnT SR0 open data (nuejax.io.xenonnt),
against closed forms, an independent compilation of binding energies and an independent route to
the rate (the total cross section above a threshold, nuejax.physics.spectra.event_rate)."""
import jax
import numpy as np
import pytest

from nuejax.constants import N_A
from nuejax.errors import DataError
from nuejax.io.xenonnt import packaged_xenonnt_sr0
from nuejax.physics.atomic import (DAYS_PER_YEAR, XENON, AtomicTarget, active_electrons, atoms_per_tonne,
                                   electrons_per_tonne, solar_recoil_rate)
from nuejax.physics.cross_section import NewPhysics
from nuejax.physics.spectra import build_source, event_rate

# T. A. Carlson, Photoelectron and Auger Spectroscopy (1975), as tabulated in Geant4's
# G4AtomicShells (source/materials/src/G4AtomicShells.cc), xenon, eV: an independent compilation.
CARLSON_XE_EV = {"K": 34570.0, "L1": 5460.0, "L2": 5110.0, "L3": 4790.0, "M1": 1148.7, "M2": 1002.1, "M3": 940.6,
                 "M4": 689.0, "M5": 676.4}


def test_xenon_shells_against_an_independent_compilation():
    shells = {name: b for name, b, _ in XENON.shells}
    for name, ev in CARLSON_XE_EV.items():  # the shells whose edges lie in or near 1-30 keV
        assert shells[name] * 1e3 == pytest.approx(ev, rel=2e-3), name
    assert sum(occ for _, _, occ in XENON.shells) == 54
    # 1s2 2s2 2p6 3s2 3p6 3d10 4s2 4p6 4d10 5s2 5p6, p and d split by spin-orbit (j = l -+ 1/2)
    occ = {name: o for name, _, o in XENON.shells}
    assert [occ[k] for k in ("K", "L1", "L2", "L3", "M4", "M5", "N4", "N5", "O3")] == [2, 2, 2, 4, 4, 6, 4, 6, 4]


def test_electrons_per_tonne_closed_form():
    assert atoms_per_tonne() == pytest.approx(1e6 * 6.02214076e23 / 131.293, rel=1e-12)
    assert electrons_per_tonne() == pytest.approx(2.4769e29, rel=1e-4)
    assert N_A == 6.02214076e23


def test_stepping_counts_the_shells_below_the_recoil_energy():
    # between the edges: N + O (26), + M3-M5 (40), + M2 (42), + M1 (44), + L3 (48), + L2 (50), + L1 (52), + K (54)
    T_kev = np.array([0.5, 0.99, 1.1, 3.0, 4.9, 5.2, 10.0, 30.0, 40.0])
    want = [26, 40, 42, 44, 48, 50, 52, 52, 54]
    np.testing.assert_array_equal(np.asarray(active_electrons(T_kev * 1e-3)), want)
    np.testing.assert_array_equal(np.asarray(active_electrons(T_kev * 1e-3, stepping=False)), 54)
    # a shell counts from its edge on; traced under jit too
    assert float(jax.jit(active_electrons)(XENON.binding_energies_mev[1])) == 52.0
    with pytest.raises(ValueError, match="finite and >= 0"):
        active_electrons(np.array([1e-3, -1e-3]))
    with pytest.raises(ValueError, match="finite and >= 0"):
        active_electrons(np.nan)
    with pytest.raises(ValueError, match="add up to 3 electrons"):
        AtomicTarget("X", 2, 4.0, (("K", 1.0, 3),), "test")


@pytest.mark.slow
def test_rate_equals_the_total_cross_section_route():
    """∫ dR/dT over 10-20 keV (free electrons, pp) equals N_e Φ [σ(T > 10 keV) − σ(T > 20 keV)]
    from event_rate (the total cross section above a threshold: a separate code path)."""
    T = np.linspace(10e-3, 20e-3, 401)
    r = np.asarray(solar_recoil_rate(T, components=("pp",), stepping=False)["pp"])  # per t·yr·keV
    integral = np.sum((r[1:] + r[:-1]) / 2 * np.diff(T) * 1e3)  # per t·yr
    src = build_source("pp")
    n_e = electrons_per_tonne()
    direct = (float(event_rate(src, NewPhysics(), threshold=10e-3, n_electrons=n_e))
              - float(event_rate(src, NewPhysics(), threshold=20e-3, n_electrons=n_e))) * DAYS_PER_YEAR
    assert integral == pytest.approx(direct, rel=2e-4)
    # stepping: 52 of 54 electrons at 10-20 keV, all 54 above the K edge
    s = solar_recoil_rate(np.array([15e-3, 40e-3]), components=("pp",))["pp"]
    f = solar_recoil_rate(np.array([15e-3, 40e-3]), components=("pp",), stepping=False)["pp"]
    np.testing.assert_allclose(np.asarray(s) / np.asarray(f), [52 / 54, 1.0], rtol=1e-12)


@pytest.mark.slow
def test_sm_rate_on_xenon_is_dominated_by_pp_and_moves_with_the_magnetic_moment():
    T = np.array([1e-3, 5e-3, 10e-3, 30e-3])
    r = solar_recoil_rate(T)
    total, pp = np.asarray(r["total"]), np.asarray(r["pp"])
    assert np.all((pp / total > 0.9) & (pp / total < 0.95))
    # 7Be/pp = flux ratio at T << E, where dσ/dT hardly depends on E: 4.93e9/5.98e10 within 25 %
    assert np.asarray(r["7Be"])[0] / pp[0] == pytest.approx(4.93e9 / 5.98e10, rel=0.25)
    mm = np.asarray(solar_recoil_rate(T, NewPhysics(mu_nu=1.0))["total"])  # 1e-11 mu_B
    assert np.all(mm > total) and (mm / total)[0] > (mm / total)[-1]  # the 1/T rise


def test_packaged_xenonnt_sr0():
    d = packaged_xenonnt_sr0()
    assert d.events.size == 433 and d.exposure == 1.16
    # FORMAT.md: B0 integrates to 367.70 events/(t yr) over 1-30 keV; 1-keV histogram of the events
    assert np.sum(d.b0_rate) * 0.1 == pytest.approx(367.70, abs=0.01)
    assert np.histogram(d.events, bins=np.arange(0, 31))[0][:5].tolist() == [0, 4, 11, 14, 12]
    assert d.efficiency_at(1.58) == pytest.approx(0.5, abs=0.01)
    assert d.efficiency_at(40.0) == d.efficiency[-1]
    with pytest.raises(DataError, match="finite and >= 0"):
        d.efficiency_at([-1.0])


@pytest.mark.slow
def test_xenon_model_equals_a_direct_smearing_of_the_recoil_rate():
    """The xenon pipeline (signals → stepping fold → keV response → efficiency × exposure) against
    solar_recoil_rate smeared by hand (σ = a√E + bE, scipy's normal CDF on a 0.01-keV grid) with
    the efficiency integrated inside each bin (the model applies it on 20 sub-bins per bin)."""
    from scipy.stats import norm

    from nuejax.model.xenon import xenon_model

    d = packaged_xenonnt_sr0()
    e = np.arange(1.0, 31.0, 1.0)
    m = xenon_model(e, 1.16, efficiency=d.efficiency_at)
    mu = np.asarray(m.expected(m.parameters.values()))
    T = np.arange(0.005, 45.0, 0.01)
    r = np.asarray(solar_recoil_rate(T * 1e-3)["total"]) * 0.01
    sig = 0.310 * np.sqrt(T) + 0.0037 * T
    ref = []
    for lo, hi in zip(e[:-1], e[1:]):
        g = np.linspace(lo, hi, 41)
        cdf = norm.cdf((g[:, None] - T[None, :]) / sig[None, :]) @ r
        ref.append(np.sum(np.diff(cdf) * d.efficiency_at(0.5 * (g[1:] + g[:-1]))))
    ref = 1.16 * np.array(ref)
    np.testing.assert_allclose(mu, ref, rtol=1e-3)
    # the magnetic moment adds events at low energy; the resolution nuisances are constrained
    p = m.parameters.values(mu_nu=1.0)
    assert np.asarray(m.expected(p))[0] > mu[0] * 1.05
    assert m.parameters["res_a"].constraint is not None and "res_b" in m.parameters.names


def test_xenonnt_sr0_model_reproduces_b0_at_its_nominal_point():
    """B0 with its SM solar-neutrino part replaced by the package's prediction: at the nominal
    parameters the expectation is B0 again, bin by bin (integrated over 1-keV bins × 1.16 t·yr)."""
    from nuejax.analyses import xenonnt_sr0_background, xenonnt_sr0_model
    from nuejax.errors import InputError

    m, n = xenonnt_sr0_model()
    assert n.sum() == 433 and n.size == 29
    d = packaged_xenonnt_sr0()
    b0 = np.array([np.sum(d.b0_rate[(d.b0_energy > lo) & (d.b0_energy < lo + 1)]) * 0.1 for lo in range(1, 30)])
    np.testing.assert_allclose(np.asarray(m.expected(m.parameters.values())), 1.16 * b0, rtol=1e-9)
    assert "mu_nu" in m.parameters.names and "bkg_scale" in m.parameters.free_names
    with pytest.raises(InputError, match="exceeds B0 in bin"):
        xenonnt_sr0_background([1.0, 2.0], [100.0])
    with pytest.raises(InputError, match="inside B0's window"):
        xenonnt_sr0_background([0.5, 2.0], [0.0])
