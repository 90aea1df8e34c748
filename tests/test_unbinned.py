"""The extended unbinned likelihood stage (nuejax.model.likelihood.UnbinnedPoisson).

References: the exact unbinned −2 ln L of an analytic density (flat background plus a Gaussian
line on [0, 10]) written here in closed form; the binned Poisson likelihood on the same bins
(identical up to a data-only constant with constant interpolation); the fine-binning limit of the
binned likelihood; the analytic CDF of the density for the toys' energies.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import norm

from nuejax.errors import DataError, InputError
from nuejax.model import AddPeaks, AddTemplates, Model, Parameter, ParameterSet, UnbinnedPoisson, nll
from nuejax.model.templates import GaussianPeak

W = 10.0  # window [0, W]
TRUE = dict(b=400.0, s=150.0, m=4.0, w=0.6)


def peak_model(step, *, unbinned=True, interpolation="linear", capacity=2000):
    e = np.linspace(0.0, W, int(round(W / step)) + 1)
    stages = (AddTemplates(jnp.asarray((np.diff(e) / W)[None, :]), ("b",)),
              AddPeaks((GaussianPeak(("s", "m", "w")),), jnp.asarray(e)))
    params = ParameterSet((Parameter("b", 300.0, 0.0, 5000.0), Parameter("s", 100.0, 0.0, 2000.0),
                           Parameter("m", 5.0, 1.0, 9.0), Parameter("w", TRUE["w"], 0.1, 2.0, fixed=True)))
    lik = UnbinnedPoisson.create(e, capacity, interpolation) if unbinned else None
    return Model.create(stages, params, obs_edges=e, likelihood=lik)


def exact_nll(p, energies):
    """2[ν − Σ ln f(E_i)] with the analytic density f = b/W + s N(E; m, w) on [0, W]."""
    b, s, m, w = (p[k] for k in ("b", "s", "m", "w"))
    nu = b + s * (norm.cdf(W, m, w) - norm.cdf(0.0, m, w))
    f = b / W + s * norm.pdf(energies, m, w)
    return 2.0 * (nu - np.sum(np.log(f)))


def events_of(seed=1, n_b=380, n_s=160):
    rng = np.random.default_rng(seed)
    s = rng.normal(TRUE["m"], TRUE["w"], n_s)
    return np.sort(np.concatenate([rng.uniform(0, W, n_b), s[(s > 0) & (s < W)]]))


POINTS = (dict(b=400.0, s=150.0, m=4.0, w=0.6), dict(b=350.0, s=200.0, m=4.3, w=0.6), dict(b=450.0, s=80.0, m=3.5, w=0.6))


def test_constant_interpolation_equals_the_binned_likelihood_up_to_a_constant():
    ev = events_of()
    mu, mb = peak_model(0.05, interpolation="constant"), peak_model(0.05, unbinned=False)
    d = mu.likelihood.events(ev)
    counts = np.histogram(ev, bins=np.asarray(mb.obs_edges))[0].astype(float)
    du = [float(mu.nll({k: jnp.asarray(v) for k, v in p.items()}, d)) for p in POINTS]
    db = [float(mb.nll({k: jnp.asarray(v) for k, v in p.items()}, counts)) for p in POINTS]
    assert np.allclose(np.diff(du), np.diff(db), rtol=1e-11, atol=1e-9)


@pytest.mark.parametrize("step", [0.1, 0.05])  # halved inside
def test_linear_density_converges_to_the_exact_unbinned_likelihood(step):
    """The density joined linearly between bin centres is second-order accurate: the error of
    −2 ln L differences against the closed form falls by about 4 when the step halves."""
    ev = events_of()
    errs = []
    for h in (step, step / 2):
        m = peak_model(h)
        d = m.likelihood.events(ev)
        v = [float(m.nll({k: jnp.asarray(x) for k, x in p.items()}, d)) for p in POINTS]
        ref = [exact_nll(p, ev) for p in POINTS]
        errs.append(np.max(np.abs(np.array(v[1:]) - v[0] - (np.array(ref[1:]) - ref[0]))))
    assert errs[1] < 0.1 * step / 0.05 * (step / 0.05)
    assert 2.5 < errs[0] / errs[1] < 6.0


def test_binned_likelihood_approaches_the_unbinned_one_as_bins_shrink():
    ev = events_of()
    ref = np.array([exact_nll(p, ev) for p in POINTS])
    gaps = []
    for step in (1.0, 0.01, 0.002):
        mb = peak_model(step, unbinned=False)
        counts = np.histogram(ev, bins=np.asarray(mb.obs_edges))[0].astype(float)
        v = np.array([float(mb.nll({k: jnp.asarray(x) for k, x in p.items()}, counts)) for p in POINTS])
        gaps.append(np.max(np.abs((v[1:] - v[0]) - (ref[1:] - ref[0]))))
    # the binned likelihood is the unbinned one of a density constant inside each bin: its error
    # is first order in the step (and random, from where the events fall inside their bins)
    assert gaps[2] < gaps[1] < gaps[0]
    assert gaps[0] > 1.0 and gaps[2] < 0.02


def test_asimov_data_fit_returns_the_truth():
    from nuejax.inference import fit

    m = peak_model(0.05)
    a = m.asimov(TRUE)
    assert a.shape == (m.likelihood.n_max, 2)
    r = fit(m, a, starts=1)
    assert r.valid
    for k in ("b", "s", "m"):
        assert float(r.values[k]) == pytest.approx(TRUE[k], rel=1e-5)


@pytest.mark.slow
def test_toys_draw_a_poisson_number_of_events_from_the_density():
    m = peak_model(0.05, capacity=1200)
    lik = m.likelihood
    mu = m.expected({k: jnp.asarray(v) for k, v in TRUE.items()})
    toys = np.asarray(lik.sample(jax.random.PRNGKey(3), mu, (400,), parts=lik.toy_parts(mu)))
    n = toys[..., 1].sum(axis=1)
    nu = float(jnp.sum(mu))
    assert abs(n.mean() - nu) < 4 * math.sqrt(nu / 400)
    assert abs(n.var() / nu - 1) < 0.25
    # padding rows carry weight 0 at the window's edge; used rows lie inside the window
    used = toys[..., 1] > 0
    assert np.all((toys[..., 0][used] >= 0) & (toys[..., 0][used] <= W))
    assert np.all(toys[..., 0][~used] == 0.0)
    # energies: compare the binned counts of all toys with the density's integrals per coarse bin
    e = toys[..., 0][used]
    coarse = np.linspace(0, W, 41)
    obs = np.histogram(e, bins=coarse)[0]
    x = np.concatenate([[0.0], 0.5 * (np.asarray(lik.obs_edges)[1:] + np.asarray(lik.obs_edges)[:-1]), [W]])
    f = np.asarray(mu) / np.diff(np.asarray(lik.obs_edges))
    v = np.concatenate([[f[0]], f, [f[-1]]])
    grid = np.linspace(0, W, 40001)
    cdf = np.concatenate([[0.0], np.cumsum(0.5 * (np.interp(grid[1:], x, v) + np.interp(grid[:-1], x, v)) * np.diff(grid))])
    expect = np.diff(np.interp(coarse, grid, cdf)) / cdf[-1] * e.size
    chi2 = np.sum((obs - expect) ** 2 / expect)
    assert chi2 < 40 + 5 * math.sqrt(80)  # 40 bins


def test_inverse_cdf_on_one_linear_piece():
    """A density rising linearly from 0 on [0, 1] (constant beyond the centres is flat): the draws
    of one piece follow the CDF t² (Kolmogorov–Smirnov)."""
    from scipy.stats import kstest

    lik = UnbinnedPoisson.create(np.array([0.0, 1.0, 2.0]), 5000)
    # node values: f(0) = f(0.5) = 0 ... use counts 0 and 2 in two bins: density 0 at 0.5, 2 at 1.5
    toys = np.asarray(lik.sample(jax.random.PRNGKey(0), jnp.array([0.0, 2000.0]), parts=1))
    e = toys[:, 0][toys[:, 1] > 0]
    piece = e[(e > 0.5) & (e < 1.5)]
    assert kstest(piece - 0.5, lambda t: t * t).pvalue > 1e-3


@pytest.mark.slow  # 44 s on 2 cores: the default suite keeps the Asimov fit and the toy checks
def test_fit_batch_fit_and_scan_run_on_event_data():
    from nuejax.inference import batch_fit, fit, profile_scan

    m = peak_model(0.2, capacity=800)
    d = m.likelihood.events(events_of())
    r = fit(m, d)
    assert r.valid
    # the fit agrees with scipy on the closed-form likelihood (the density's linear pieces differ
    # from it by O(step^2): test_linear_density_converges_to_the_exact_unbinned_likelihood)
    from scipy.optimize import minimize

    ev = events_of()
    ref = minimize(lambda x: exact_nll(dict(b=x[0], s=x[1], m=x[2], w=TRUE["w"]), ev), [380, 160, 4.0],
                   method="Nelder-Mead", options=dict(xatol=1e-6, fatol=1e-8, maxiter=4000))
    assert float(r.values["m"]) == pytest.approx(ref.x[2], abs=5e-3)
    assert float(r.values["s"]) == pytest.approx(ref.x[1], rel=2e-2)
    toys = m.pseudo_data(jax.random.PRNGKey(1), TRUE, 8)
    assert toys.shape == (8, m.likelihood.n_max, 2)
    br = batch_fit(m, toys)
    assert br.converged.all()
    one = fit(m, np.asarray(toys[2]))
    assert float(br.values["s"][2]) == pytest.approx(float(one.values["s"]), rel=1e-4)  # both to their tolerance
    s = profile_scan(m, d, "s", np.linspace(100, 220, 7))
    assert np.min(s.delta_chi2) > -1e-6
    lo, hi = s.interval(0.9)
    assert lo < float(r.values["s"]) < hi


@pytest.mark.slow
def test_feldman_cousins_runs_on_event_data():
    from nuejax.inference import feldman_cousins, profile_scan

    m = peak_model(0.2, capacity=1000)
    d = m.likelihood.events(events_of())
    grid = np.linspace(100, 220, 7)
    fc = feldman_cousins(m, d, "s", grid, 100, key=2)
    lo, hi = fc.interval
    s = profile_scan(m, d, "s", grid)
    # with 560 events the construction is close to the asymptotic interval (to a grid step)
    alo, ahi = s.interval(0.9)
    assert lo is not None and hi is not None
    assert abs(lo - alo) <= 20.0 + 1e-9 and abs(hi - ahi) <= 20.0 + 1e-9


def test_bad_event_data_are_named():
    m = peak_model(0.5, capacity=10)
    lik = m.likelihood
    with pytest.raises(DataError, match="event 1 at 11"):
        lik.events([1.0, 11.0])
    with pytest.raises(DataError, match="at most 20"):
        lik.events(np.linspace(1, 2, 21))
    with pytest.raises(DataError, match="shape"):
        m.nll(m.parameters.values(), np.zeros(20))
    bad = lik.events([1.0, 2.0])
    bad[1, 1] = np.nan
    with pytest.raises(DataError, match="event 1"):
        m.nll(m.parameters.values(), bad)
    with pytest.raises(InputError, match="capacity"):
        lik.toy_parts(m.expected(m.parameters.values()))
    with pytest.raises(InputError, match="interpolation"):
        UnbinnedPoisson.create([0.0, 1.0], 5, "cubic")


def test_density_zero_at_an_event_gives_infinity_not_nan():
    lik = UnbinnedPoisson.create(np.array([0.0, 1.0, 2.0]), 4)
    d = lik.events([0.2])
    assert float(lik(jnp.array([0.0, 3.0]), jnp.asarray(d))) == np.inf
    assert np.isfinite(float(nll(peak_model(1.0), {k: jnp.asarray(v) for k, v in TRUE.items()},
                                 peak_model(1.0).likelihood.events([5.0]))))


def test_goodness_of_fit_refuses_event_data():
    from nuejax.inference import fit, goodness_of_fit

    m = peak_model(0.5, capacity=600)
    d = m.likelihood.events(events_of())
    with pytest.raises(InputError, match="saturated"):
        goodness_of_fit(m, d, fit(m, d, starts=1))


def test_the_fast_path_of_an_unbinned_model_stays_unbinned():
    """fast_model keeps the likelihood stage: it built a binned model from an unbinned one before."""
    from nuejax.model import fast_model
    from nuejax.model.xenon import xenon_model

    general = xenon_model(np.linspace(1.0, 30.0, 59), 1.0, signals=("7Be_862", "pep"), unbinned=True, capacity=80, sub=1)
    fast = fast_model(general)
    assert type(fast.likelihood) is type(general.likelihood) is UnbinnedPoisson
    events = general.likelihood.events(np.array([2.5, 7.25, 12.0, 29.0]))
    p = dict(mu_nu=1.5, eps_ee_L=0.2)
    a = float(fast.nll(fast.parameters.values(**p), events))
    assert np.isfinite(a) and a == pytest.approx(float(general.nll(general.parameters.values(**p), events)), rel=1e-11)
