"""The paper's reweighting equations: SM recovery, kernel form == literal equations, MC and ROOT routes."""

import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.detector import ResponseParams, quenching_table
from nuejax.detector.montecarlo import expected_histogram, toy_mc_histogram
from nuejax.detector.response import unit_bin_edges
from nuejax.io import read_response_histogram, read_template, write_hists
from nuejax.model.borexino_like import signal_component
from nuejax.physics import NewPhysics, build_source, event_rate, recoil_spectrum, uniform_recoil_edges
from nuejax.reweighting import normalized_reference, response_matrix, reweighted_spectrum, transfer_kernel

TABLE = quenching_table()
OBS = unit_bin_edges(60, 500)


@pytest.fixture(scope="module")
def be7():
    src = build_source("7Be_862")
    edges = uniform_recoil_edges(float(src.t_end), 300)
    hist = expected_histogram(src, edges, OBS, ResponseParams(), TABLE)
    mid = 0.5 * (edges[1:] + edges[:-1])
    return src, hist, mid


def test_sm_is_recovered_by_construction(be7):
    src, hist, mid = be7
    R = jnp.asarray(response_matrix(hist))
    f_sm = recoil_spectrum(src, mid, in_sigma0_units=True)
    f_np = np.asarray(reweighted_spectrum(R, normalized_reference(f_sm), f_sm))
    np.testing.assert_allclose(f_np, np.asarray(R).sum(0), rtol=1e-13)
    assert f_np.sum() == pytest.approx(hist.efficiency, rel=1e-13)  # s = window efficiency


@pytest.mark.parametrize("phys", [NewPhysics(eps_L=(0.1, 0, 0), eps_R=(0.1, 0, 0)), NewPhysics(mu_nu=3.0)])  # mu_nu in 1e-11 mu_B
def test_kernel_equals_literal_paper_equations(be7, phys):
    src, hist, mid = be7
    R = response_matrix(hist)
    f_sm = recoil_spectrum(src, mid, in_sigma0_units=True)
    f = recoil_spectrum(src, mid, phys, in_sigma0_units=True)
    rate_sm = float(event_rate(src))
    # literal: rate_k(eps) x f_Np(j; eps), rate scaled by the change of the summed spectrum
    rate = rate_sm * float(jnp.sum(f) / jnp.sum(f_sm))
    literal = rate * np.asarray(reweighted_spectrum(jnp.asarray(R), normalized_reference(f_sm), f))
    G = transfer_kernel(R, np.asarray(f_sm), rate_sm)
    np.testing.assert_allclose(np.asarray(f) @ G, literal, rtol=1e-12)


def test_mask_and_scale_follow_eq_rij(be7):
    _, hist, _ = be7
    M = np.linspace(0.5, 1.0, hist.counts.shape[1])
    R = response_matrix(hist, mask=M, scale=2.0)
    NM = hist.counts / M
    np.testing.assert_allclose(R, NM / NM.sum() * 2.0, rtol=1e-14)
    with pytest.raises(ValueError, match="live-time mask is <= 0"):
        response_matrix(hist, mask=np.zeros(hist.counts.shape[1]))
    with pytest.raises(ValueError, match="mask has shape"):
        response_matrix(hist, mask=np.ones(3))


def test_kernel_refuses_bins_with_entries_but_no_sm_spectrum():
    R = np.ones((3, 2))
    with pytest.raises(ValueError, match=r"comp: recoil bin\(s\) \[1\]"):
        transfer_kernel(R, np.array([1.0, 0.0, 2.0]), 1.0, name="comp")


@pytest.mark.slow  # 19 s; the default run keeps the analytic response checks
def test_toy_mc_response_reproduces_analytic_prediction():
    """MC route: N_ij from 1e6 toy events; the model kernel's SM spectrum matches the exact one."""
    src = build_source("7Be_862")
    edges = uniform_recoil_edges(float(src.t_end), 100)
    obs = unit_bin_edges(60, 500)
    mc = toy_mc_histogram(src, edges, obs, 1_000_000, seed=7, table=TABLE)
    exact = signal_component("7Be_862", obs, norm="n", n_T=100, table=TABLE)
    fromc = signal_component("7Be_862", obs, norm="n", hist=mc)
    a = np.asarray(exact.kernel.T @ recoil_spectrum(src, exact.t_mid, in_sigma0_units=True))
    b = np.asarray(fromc.kernel.T @ recoil_spectrum(src, fromc.t_mid, in_sigma0_units=True))
    # 440 bins of ~2000 events: compare in 20-bin groups (~4e4 events each, 0.5 % stat.)
    ga, gb = a[:440].reshape(22, 20).sum(1), b[:440].reshape(22, 20).sum(1)
    rate = float(event_rate(src))  # 1e6 generated events correspond to this rate
    err = np.sqrt(ga * rate / 1e6)  # Poisson error from the expected number of events per group
    assert np.all(np.abs(ga - gb) < 5 * err + 1e-9 * ga.max())


def test_root_round_trip_gives_identical_component(tmp_path, be7):
    src, hist, _ = be7
    path = tmp_path / "response.root"
    write_hists(path, {"N_7Be_862": (hist.counts, hist.t_edges, hist.obs_edges)})
    back = read_response_histogram(path, "N_7Be_862", n_generated=hist.total, expected_obs_edges=np.asarray(OBS))
    with pytest.raises(ValueError, match="n_generated = .* is below the histogram's"):
        read_response_histogram(path, "N_7Be_862", n_generated=0.5 * hist.counts.sum())
    a = signal_component("7Be_862", OBS, norm="n", hist=hist)
    b = signal_component("7Be_862", OBS, norm="n", hist=back)
    np.testing.assert_allclose(np.asarray(a.kernel), np.asarray(b.kernel), rtol=1e-14)


def test_background_template_from_root(tmp_path):
    path = tmp_path / "bkg.root"
    write_hists(path, {"Bi210": (np.arange(1.0, 442.0), np.asarray(OBS))})
    t = read_template(path, "Bi210", OBS)
    assert t.sum() == pytest.approx(1.0) and t[-1] / t[0] == pytest.approx(441.0)
    with pytest.raises(ValueError, match="x binning does not match"):
        read_template(path, "Bi210", unit_bin_edges(60, 400))
