"""Analytic response, toy MC histograms, background templates."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import norm

from nuejax.detector import ResponseParams, bin_probabilities, electron_stopping_power, quenched_energy, quenching_table
from nuejax.detector.backgrounds import BACKGROUNDS, background_template
from nuejax.detector.montecarlo import expected_histogram, joint_response, toy_mc_histogram
from nuejax.detector.response import gaussian_bin_probabilities, gaussian_fold, mean_photoelectrons, unit_bin_edges
from nuejax.physics import NewPhysics, build_source, uniform_recoil_edges
from nuejax.errors import InputError
from nuejax.io.borexino import packaged_borexino_shape

TABLE = quenching_table()
P0 = ResponseParams()


def test_stopping_power_close_to_estar_scaled_to_pseudocumene():
    # NIST ESTAR collision stopping power of water [MeV cm^2/g] at 0.1, 1 MeV: 4.115, 1.849;
    # scaled by density x (Z/A) ratio 0.876 x 0.5491/0.5551 (I differs: 60 vs 75 eV -> a few %)
    water = np.array([4.115, 1.849]) * 0.876 * (0.5491 / 0.5551)
    np.testing.assert_allclose(electron_stopping_power([0.1, 1.0]), water, rtol=0.05)


def test_quenched_energy_matches_direct_birks_integral():
    kB = 0.011
    for T in (0.05, 0.3, 1.5):
        ref = quad(lambda e: 1.0 / (1.0 + kB * electron_stopping_power(e)), 0.0, T, limit=200)[0]
        assert float(quenched_energy(T, kB, TABLE)) == pytest.approx(ref, rel=2e-4)
    assert float(quenched_energy(0.5, 0.0, TABLE)) == pytest.approx(0.5, rel=1e-12)  # no quenching


def test_bin_probabilities_are_gaussian_integrals_and_normalised():
    T = jnp.array([0.1, 0.4, 0.9])
    edges = unit_bin_edges(0, 1000)
    P = np.asarray(bin_probabilities(T, edges, P0, TABLE))
    np.testing.assert_allclose(P.sum(-1), 1.0, rtol=1e-9)
    mu = np.asarray(mean_photoelectrons(T, P0, TABLE))
    e = np.asarray(edges)
    ref = norm.cdf(e[1:], mu[:, None], np.sqrt(mu)[:, None]) - norm.cdf(e[:-1], mu[:, None], np.sqrt(mu)[:, None])
    np.testing.assert_allclose(P, ref, atol=1e-14)
    # deep upper tail keeps relative precision
    far = np.asarray(bin_probabilities(jnp.array(0.1), jnp.array([200.0, 201.0]), P0, TABLE))[0]
    mu0 = float(mean_photoelectrons(0.1, P0, TABLE))
    assert far == pytest.approx(norm.sf(200, mu0, np.sqrt(mu0)) - norm.sf(201, mu0, np.sqrt(mu0)), rel=1e-8)


def _reference_fold(w, mu, sigma, edges):
    """sum_n w_n P_j(n) from scipy's normal cdf/sf, per pair, on the side of the mean that keeps
    relative precision."""
    a, b = edges[:-1][None, :], edges[1:][None, :]
    m, s = mu[:, None], sigma[:, None]
    P = np.where(a >= m, norm.sf(a, m, s) - norm.sf(b, m, s), norm.cdf(b, m, s) - norm.cdf(a, m, s))
    return w @ P


def test_gaussian_fold_equals_binned_gaussians_with_tail_precision():
    rng = np.random.default_rng(3)
    edges = np.concatenate([np.arange(0.0, 40.0, 1.0), np.geomspace(40.0, 400.0, 30)[1:]])  # not uniform
    mu = np.concatenate([rng.uniform(-30.0, 450.0, 300), edges[[0, 5, 39, 50]], [edges[5] + 1e-9]])
    sigma = rng.uniform(0.3, 25.0, mu.size)  # below and above the bin width
    w = rng.uniform(0.0, 2.0, mu.size)
    got = np.asarray(gaussian_fold(w, mu, sigma**2, edges))
    ref = _reference_fold(w, mu, sigma, edges)
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    np.testing.assert_allclose(got, w @ np.asarray(gaussian_bin_probabilities(mu, sigma**2, edges)), rtol=1e-12)
    # a bin 12 sigma above the only Gaussian keeps its relative precision (1e-33 of the weight)
    far = float(gaussian_fold(np.array([3.0]), np.array([10.0]), np.array([1.0]), np.array([22.0, 23.0]))[0])
    assert far == pytest.approx(3.0 * (norm.sf(22.0, 10.0) - norm.sf(23.0, 10.0)), rel=1e-10)


@pytest.mark.slow  # 27 s on 2 cores (the Hessian's compilation); the exact fold is fold="exact", not the default
def test_gaussian_fold_derivatives_match_the_pairwise_route_and_finite_differences():
    rng = np.random.default_rng(4)
    edges = jnp.asarray(np.arange(80.0, 200.0, 1.0) - 0.5)
    base = jnp.asarray(np.sort(rng.uniform(60.0, 230.0, 200)))
    w = jnp.asarray(rng.uniform(0.5, 1.5, 200))
    data = jnp.asarray(rng.poisson(np.asarray(_reference_fold(np.asarray(w), np.asarray(base) * 1.02,
                                                              np.sqrt(np.asarray(base)) * 1.1, np.asarray(edges))) + 1.0))

    def nll(fold):
        def f(x):  # scale of the means, extra variance, weight scale
            mu = x[0] * base
            m = fold(x[2] * w, mu, mu + x[1], edges) + 1.0
            return jnp.sum(m - data * jnp.log(m))
        return f

    new = nll(gaussian_fold)
    ref = nll(lambda w, mu, var, e: w @ gaussian_bin_probabilities(mu, var, e))
    x0 = jnp.array([1.01, 20.0, 0.97])
    np.testing.assert_allclose(jax.grad(new)(x0), jax.grad(ref)(x0), rtol=1e-9)
    np.testing.assert_allclose(jax.hessian(new)(x0), jax.hessian(ref)(x0), rtol=1e-8)
    np.testing.assert_allclose(jax.jvp(new, (x0,), (jnp.array([1.0, -2.0, 0.5]),))[1],
                               jax.jvp(ref, (x0,), (jnp.array([1.0, -2.0, 0.5]),))[1], rtol=1e-9)
    h = np.array([1e-6, 1e-4, 1e-6])
    fd = [(float(new(x0.at[i].add(h[i]))) - float(new(x0.at[i].add(-h[i])))) / (2 * h[i]) for i in range(3)]
    np.testing.assert_allclose(jax.grad(new)(x0), fd, rtol=1e-6)


def test_gaussian_fold_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match=r"weights \(3,\), mean \(2,\)"):
        gaussian_fold(jnp.ones(3), jnp.ones(2), jnp.ones(2), jnp.arange(4.0))


@pytest.mark.slow
def test_response_differentiable_in_all_parameters():
    src = build_source("7Be_862")
    t_edges = uniform_recoil_edges(0.6643, 50)
    obs = unit_bin_edges(100, 300)
    w = jnp.linspace(0.0, 1.0, 201)

    def f(x):
        p = ResponseParams(light_yield=x[0], kB=x[1], var_const=x[2], var_rel=x[3])
        return jnp.sum(joint_response(src, t_edges, obs, p, TABLE) @ w)

    x0 = jnp.array([500.0, 0.011, 4.0, 0.02])
    g = np.asarray(jax.grad(f)(x0))
    h = np.array([1e-3, 1e-7, 1e-4, 1e-6])
    fd = [(float(f(x0.at[i].add(h[i]))) - float(f(x0.at[i].add(-h[i])))) / (2 * h[i]) for i in range(4)]
    np.testing.assert_allclose(g, fd, rtol=1e-5)


@pytest.mark.slow
def test_toy_mc_converges_to_expected_histogram_and_neff():
    src = build_source("7Be_862")
    t_edges = uniform_recoil_edges(0.6643, 20)
    obs = unit_bin_edges(50, 400)
    exact = expected_histogram(src, t_edges, obs, P0, TABLE)
    mc = toy_mc_histogram(src, t_edges, obs, 400_000, seed=3, table=TABLE)
    p_exact = exact.counts / exact.total
    p_mc = mc.counts / mc.total
    # per recoil bin (summed over N_p) the MC fraction agrees within 5 standard deviations
    a, b = p_exact.sum(1), p_mc.sum(1)
    sigma = np.sqrt(np.maximum(a * (1 - a) / 400_000, 1e-12))
    assert np.all(np.abs(a - b) < 5 * sigma)
    assert mc.efficiency == pytest.approx(exact.efficiency, abs=5 * np.sqrt(exact.efficiency / 400_000))
    # unweighted SM sampling: N_eff equals the entries per recoil bin
    np.testing.assert_allclose(mc.n_eff.sum(), 400_000, rtol=1e-9)


def test_magnetic_moment_target_collapses_low_recoil_neff():
    """Paper Sec. VI.A caveat: 1/T weights of an SM sample vary wildly in the lowest recoil bins."""
    src = build_source("7Be_862")
    t_edges = uniform_recoil_edges(0.6643, 20)
    obs = unit_bin_edges(50, 400)
    sm = toy_mc_histogram(src, t_edges, obs, 100_000, seed=1, table=TABLE)
    mm = toy_mc_histogram(src, t_edges, obs, 100_000, seed=1, table=TABLE, target=NewPhysics(mu_nu=30.0))  # 3e-10 mu_B
    assert mm.n_eff[0] < 0.1 * sm.n_eff[0]  # collapses where the weight diverges
    assert mm.n_eff[-1] > 0.99 * sm.n_eff[-1]  # untouched where the weight is flat


def test_importance_sampling_with_flatter_spectrum_is_unbiased_and_raises_neff_in_the_tail():
    src = build_source("pp")
    t_edges = uniform_recoil_edges(float(src.t_end), 20)
    obs = unit_bin_edges(20, 200)
    plain = toy_mc_histogram(src, t_edges, obs, 200_000, seed=2, table=TABLE)
    flat = toy_mc_histogram(src, t_edges, obs, 200_000, seed=2, table=TABLE, importance_alpha=0.0)
    assert flat.n_eff[-2] > 3 * plain.n_eff[-2]  # the falling end of the pp spectrum is better sampled
    a, b = plain.counts.sum(1) / plain.total, flat.counts.sum(1) / flat.total
    err = np.sqrt(plain.sumw2.sum(1) / plain.total**2 + flat.sumw2.sum(1) / flat.total**2)
    assert np.all(np.abs(a - b) < 5 * err + 1e-12)
    with pytest.raises(ValueError, match="importance_alpha"):
        toy_mc_histogram(src, t_edges, obs, 10, table=TABLE, importance_alpha=2.0)


@pytest.mark.parametrize("name", list(BACKGROUNDS))
def test_background_templates_are_normalised_per_decay(name):
    wide = jnp.asarray(np.arange(-200, 4001) - 0.5)
    kind, args = BACKGROUNDS[name]
    shape = packaged_borexino_shape(args[0]) if kind == "file" else None
    t = background_template(name, wide, P0, TABLE, shape=shape)
    assert np.all(t >= 0)
    assert t.sum() == pytest.approx(1.0, abs=2e-3 if name in ("14C", "210Bi", "85Kr") else 1e-9)


def test_background_shapes():
    edges = unit_bin_edges(0, 1500)
    c11 = background_template("11C", edges, P0, TABLE)
    # 11C: positron + two 511 keV gammas: nothing below the gammas' light
    two_gamma = 2 * float(mean_photoelectrons(0.511, P0, TABLE))
    assert c11[: int(two_gamma) - 100].sum() < 1e-6
    po = background_template("210Po", edges, P0, TABLE)
    assert abs(np.argmax(po) - 0.40 * 500) <= 1
    with pytest.raises(KeyError, match="unknown background"):
        background_template("40K", edges, P0, TABLE)
    with pytest.raises(InputError, match=r"pass shape=nuejax.io.packaged_borexino_shape\('Ext_K40'\)"):
        background_template("ext_40K", edges, P0, TABLE)
