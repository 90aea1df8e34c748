"""Template analyses (nuejax.model.templates, nuejax.model.template_model: a model of template,
transform, peak and exposure stages) on a tiny hand-built model: shape templates and their normalisations, expected counts and -2 ln L against direct numpy
/ scipy computations, gradients against finite differences, Newton fits of Asimov data and toys,
and the checks of template_model()."""
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import gammaln
from scipy.stats import norm
from scipy.stats import poisson as poisson_dist

from nuejax.detector.transforms import ResponseTransform
from nuejax.errors import InputError, ParameterError
from nuejax.inference import batch_fit, newton_fit
from nuejax.model import Parameter, ParameterSet
from nuejax.model.constraints import HalfGaussianConstraint
from nuejax.model import AddTemplates, Exposure, components, expected, nll, template_model
from nuejax.model.templates import GaussianPeak, rebin_density, shape_template

IN_EDGES = np.linspace(0.0, 100.0, 41)  # 40 input bins
OBS_EDGES = np.linspace(10.0, 90.0, 31)  # 30 observable bins
EXPOSURE = 1000.0
MASK = np.ones(30)
MASK[[4, 21]] = [0.0, 0.5]  # a dead bin and a half-live bin

# shape A: falling spectrum beyond the model range, drawn for a total rate of 50 from zero energy
A_EDGES = np.linspace(0.0, 120.0, 25)
A_DENS = 2.0 * np.exp(-A_EDGES[:-1] / 40.0)
A_DRAWN = 50.0
# shape B: flat + bump on its own, irregular bins, normalised to its content above 20
B_EDGES = np.array([5.0, 12.0, 20.0, 27.5, 33.0, 40.0, 48.0, 55.0, 58.0, 61.0, 66.0, 72.0, 80.0, 88.0, 95.0])
B_C = 0.5 * (B_EDGES[1:] + B_EDGES[:-1])
B_DENS = 1.0 + 3.0 * np.exp(-0.5 * ((B_C - 60.0) / 10.0) ** 2)
B_ABOVE = 20.0

TRUTH = dict(r_a=30.0, r_b=20.0, e_scale=1.02, e_off=0.5, e_res=1.0, po_rate=10.0, po_mean=40.0, po_sigma=4.0)
SCALE_PULL = (1.02, 0.01)  # Gaussian constraint on e_scale through Parameter(constraint=...)
BI_LIMIT = (25.0, 2.0)  # half-Gaussian upper bound on r_b


def _parameters():
    return ParameterSet((
        Parameter("r_a", 25.0, 0.0, 1000.0),
        Parameter("r_b", 22.0, 0.0, 1000.0),
        Parameter("e_scale", 1.0, 0.8, 1.2, constraint=SCALE_PULL),
        Parameter("e_off", 0.0, -10.0, 10.0),
        # lower bound > 0 (transforms docstring): sigma >= ~0.9 of a bin keeps the fit off the sigma -> 0 plateau
        Parameter("e_res", 0.8, 0.3, 5.0),
        Parameter("po_rate", 8.0, 0.0, 1000.0),
        Parameter("po_mean", 41.0, 20.0, 60.0),
        Parameter("po_sigma", 3.5, 0.5, 20.0),
    ))


def _templates():
    ta = shape_template(A_EDGES, A_DENS, IN_EDGES, normalisation="zero_threshold", drawn_rate=A_DRAWN, name="A")
    tb = shape_template(B_EDGES, B_DENS, IN_EDGES, normalisation="integral", above=B_ABOVE, name="B")
    return np.stack([ta, tb])


def _transform():
    return ResponseTransform.create(IN_EDGES, OBS_EDGES, scale="e_scale", offset="e_off", res_a="e_res")


def _kwargs(**over):
    kw = dict(in_edges=IN_EDGES, obs_edges=OBS_EDGES, templates=_templates(), template_names=("r_a", "r_b"),
              parameters=_parameters(), exposure=EXPOSURE, physics=None, transform=_transform(),
              peaks=(GaussianPeak(("po_rate", "po_mean", "po_sigma")),),
              constraints=(HalfGaussianConstraint.create("r_b", *BI_LIMIT),), mask=MASK)
    kw.update(over)
    return kw


@functools.cache
def _model():
    return template_model(**_kwargs())


def _params(**kw):
    return _parameters().values({**TRUTH, **kw})


# -------------------------------------------------------------------------------------------------
# independent references (numpy / scipy)
def _overlap_rebin(edges, dens, new_edges):
    """Content of a piecewise-constant density in each new bin, by explicit overlaps."""
    out = np.zeros(len(new_edges) - 1)
    for j in range(out.size):
        for k in range(len(dens)):
            w = min(edges[k + 1], new_edges[j + 1]) - max(edges[k], new_edges[j])
            if w > 0:
                out[j] += dens[k] * w
    return out


def _np_matrix(scale, offset, res_a):
    """Uniform-in-bin counts mapped by offset + scale E, smeared by sigma^2 = res_a^2 E at the mapped
    centre: closed-form Gaussian integrals with scipy.stats.norm."""
    u = offset + scale * IN_EDGES
    sig = np.sqrt(res_a ** 2 * np.maximum(0.5 * (u[1:] + u[:-1]), 0.0))  # E clipped at 0
    M = np.zeros((40, 30))
    for i in range(40):
        if sig[i] > 0:
            R = lambda d, s=sig[i]: d * norm.cdf(d / s) + s * norm.pdf(d / s)  # noqa: E731
        else:  # mapped centre at or below 0: no smearing, the plain ramp
            R = lambda d: max(d, 0.0)  # noqa: E731
        cum = np.array([R(e - u[i]) - R(e - u[i + 1]) for e in OBS_EDGES])
        M[i] = np.diff(cum) / (u[i + 1] - u[i])
    return M


def _np_expected(p):
    p = {k: float(v) for k, v in p.items()}
    ta = _overlap_rebin(A_EDGES, A_DENS, IN_EDGES) / A_DRAWN
    tb = _overlap_rebin(B_EDGES, B_DENS, IN_EDGES) / _overlap_rebin(B_EDGES, B_DENS, [B_ABOVE, B_EDGES[-1]])[0]
    x = p["r_a"] * ta + p["r_b"] * tb
    M = _np_matrix(p["e_scale"], p["e_off"], p["e_res"])
    peak = p["po_rate"] * np.diff(norm.cdf(OBS_EDGES, p["po_mean"], p["po_sigma"]))
    return EXPOSURE * MASK * (x @ M), EXPOSURE * MASK * peak


def _np_nll(p, n):
    mu = sum(_np_expected(p))
    pos = n > 0
    poisson = 2.0 * np.sum(mu - np.where(pos, n * np.log(np.where(mu > 0, mu, 1.0)), 0.0) + gammaln(n + 1.0))
    pull = ((float(p["e_scale"]) - SCALE_PULL[0]) / SCALE_PULL[1]) ** 2
    half = (max(float(p["r_b"]) - BI_LIMIT[0], 0.0) / BI_LIMIT[1]) ** 2
    return poisson + pull + half


# -------------------------------------------------------------------------------------------------
# shape_template
def test_rebin_density_against_explicit_overlaps():
    new = np.array([-10.0, 0.0, 3.3, 17.0, 17.5, 50.0, 99.0, 130.0, 200.0])
    np.testing.assert_allclose(rebin_density(A_EDGES, A_DENS, new), _overlap_rebin(A_EDGES, A_DENS, new),
                               rtol=1e-13, atol=1e-13)


def test_shape_template_zero_threshold_divides_by_drawn_rate():
    t = shape_template(A_EDGES, A_DENS, IN_EDGES, normalisation="zero_threshold", drawn_rate=A_DRAWN)
    ref = _overlap_rebin(A_EDGES, A_DENS, IN_EDGES) / A_DRAWN
    np.testing.assert_allclose(t, ref, rtol=1e-13, atol=1e-15)
    # it sums to the fraction of the drawn rate that lies on the model bins (here below 1: the
    # shape extends to 120 and its total content is not the drawn rate)
    content = np.sum(A_DENS * np.diff(A_EDGES))
    inside = np.sum(A_DENS[A_EDGES[:-1] < 100] * np.diff(A_EDGES)[A_EDGES[:-1] < 100])
    assert t.sum() == pytest.approx(inside / A_DRAWN, rel=1e-13)
    assert content / A_DRAWN != pytest.approx(t.sum(), rel=1e-3)
    # the drawn rate is the normalisation, not the shape's own content
    t2 = shape_template(A_EDGES, 3.0 * A_DENS, IN_EDGES, normalisation="zero_threshold", drawn_rate=A_DRAWN)
    np.testing.assert_allclose(t2, 3.0 * t, rtol=1e-13)


def test_shape_template_integral_sums_to_one_above_the_cut():
    fine = np.linspace(0.0, 100.0, 401)
    for above in (None, 20.0, 33.0, 57.0):
        t = shape_template(B_EDGES, B_DENS, fine, normalisation="integral", above=above)
        lo = B_EDGES[0] if above is None else above
        norm_ = np.sum(_overlap_rebin(B_EDGES, B_DENS, [lo, B_EDGES[-1]]))
        np.testing.assert_allclose(t, _overlap_rebin(B_EDGES, B_DENS, fine) / norm_, rtol=1e-12, atol=1e-15)
        assert t[fine[:-1] >= lo].sum() == pytest.approx(1.0, rel=1e-12)
    # independent of the density's overall scale
    np.testing.assert_allclose(shape_template(B_EDGES, 7.0 * B_DENS, fine, normalisation="integral"),
                               shape_template(B_EDGES, B_DENS, fine, normalisation="integral"), rtol=1e-12)
    # exact rebinning: a model binning with edges inside the shape's bins, and one coarser than it
    for edges in (np.array([5.0, 6.0, 13.0, 41.0, 41.5, 94.0, 95.0]), np.array([0.0, 50.0, 100.0])):
        t = shape_template(B_EDGES, B_DENS, edges, normalisation="integral")
        # cumulative content D(e) = sum_k d_k * clip(e - a_k, 0, w_k)
        cum_at = np.array([np.sum(B_DENS * np.clip(e - B_EDGES[:-1], 0.0, np.diff(B_EDGES))) for e in edges])
        total = np.cumsum(B_DENS * np.diff(B_EDGES))[-1]
        np.testing.assert_allclose(t, np.diff(cum_at) / total, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("kw,msg", [
    (dict(normalisation="total"), r"normalisation must be one of .*'total'"),
    (dict(normalisation="zero_threshold"), r"shape 'S'.*needs drawn_rate > 0"),
    (dict(normalisation="zero_threshold", drawn_rate=0.0), r"needs drawn_rate > 0"),
    (dict(normalisation="zero_threshold", drawn_rate=float("nan")), r"needs drawn_rate > 0"),
    (dict(normalisation="zero_threshold", drawn_rate=5.0, above=10.0), r"'above' is for normalisation='integral'"),
    (dict(normalisation="integral", drawn_rate=5.0), r"drawn_rate is for normalisation='zero_threshold'"),
    (dict(normalisation="integral", above=95.0), r"no content above 95"),
])
def test_shape_template_argument_errors(kw, msg):
    with pytest.raises(InputError, match=msg):
        shape_template(B_EDGES, B_DENS, IN_EDGES, name="S", **kw)


def test_shape_template_density_errors():
    bad = B_DENS.copy()
    bad[6] = -0.1
    with pytest.raises(InputError, match=r"shape 'S'.*density -0.1 in bin 6 \[48, 55\).*negative"):
        shape_template(B_EDGES, bad, IN_EDGES, normalisation="integral", name="S")
    bad[6] = np.inf
    with pytest.raises(InputError, match=r"in bin 6 .*not finite"):
        shape_template(B_EDGES, bad, IN_EDGES, normalisation="integral", name="S")
    with pytest.raises(InputError, match=r"density has shape \(13,\), expected \(14,\)"):
        shape_template(B_EDGES, B_DENS[:-1], IN_EDGES, normalisation="integral", name="S")
    with pytest.raises(InputError, match=r"shape 'S'.*shape bin edges are not strictly increasing"):
        shape_template(B_EDGES[::-1], B_DENS, IN_EDGES, normalisation="integral", name="S")


def test_shape_template_empty_on_model_bins():
    far = np.linspace(200.0, 300.0, 11)
    with pytest.raises(InputError, match=r"shape 'far': is empty on the model's bins 40 bins \[0, 100\].*\[200, 300\]"):
        shape_template(far, np.ones(10), IN_EDGES, normalisation="integral", name="far")
    with pytest.raises(InputError, match=r"is empty on the model's bins"):
        shape_template(far, np.ones(10), IN_EDGES, normalisation="zero_threshold", drawn_rate=3.0, name="far")


# -------------------------------------------------------------------------------------------------
# expected counts, components, -2 ln L
def test_expected_against_direct_computation():
    m = _model()
    for over in ({}, dict(e_scale=0.97, e_off=-1.5, e_res=2.0, po_mean=55.0, po_sigma=6.0, r_b=12.0)):
        p = _params(**over)
        smooth, peak = _np_expected(p)
        mu = np.asarray(m.expected(p))
        np.testing.assert_allclose(mu, smooth + peak, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(np.asarray(expected(m, p)), mu, rtol=1e-14)
        assert mu[4] == 0.0 and np.all(mu[MASK > 0] > 0)


def test_components_sum_to_expected():
    m = _model()
    p = _params(r_a=17.0, e_off=2.0)
    comps = m.components(p)
    assert set(comps) == {"r_a", "r_b", "po_rate"}
    smooth, peak = _np_expected(p)
    np.testing.assert_allclose(comps["po_rate"], peak, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(comps["r_a"] + comps["r_b"], smooth, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(sum(comps.values()), np.asarray(m.expected(p)), rtol=1e-12)
    # a component scales with its own rate only
    c2 = components(m, _params(r_a=34.0, e_off=2.0))
    np.testing.assert_allclose(c2["r_a"], 2.0 * comps["r_a"], rtol=1e-12)
    np.testing.assert_allclose(c2["r_b"], comps["r_b"], rtol=1e-12)


def test_nll_against_direct_computation():
    m = _model()
    rng = np.random.default_rng(5)
    data = rng.poisson(np.asarray(m.expected(_params()))).astype(float)
    assert data[4] == 0.0  # the dead bin: mu = 0 and n = 0 contribute nothing
    # r_b above the half-Gaussian threshold and e_scale off its constraint centre: both terms count
    for over in ({}, dict(r_b=27.5, e_scale=1.005, e_res=1.4, po_sigma=3.0)):
        p = _params(**over)
        ref = _np_nll(p, data)
        assert float(m.nll(p, data)) == pytest.approx(ref, rel=1e-11)
        assert float(nll(m, p, jnp.asarray(data))) == pytest.approx(ref, rel=1e-11)
    # the constraint terms in closed form: -2 ln L minus the Poisson term (scipy.stats.poisson)
    p = _params(r_b=27.5, e_scale=1.005)
    mu = sum(_np_expected(p))
    live = MASK > 0
    poisson = -2.0 * np.sum(poisson_dist.logpmf(data[live], mu[live]))
    extra = ((1.005 - 1.02) / 0.01) ** 2 + (2.5 / 2.0) ** 2
    assert float(m.nll(p, data)) - poisson == pytest.approx(extra, rel=1e-7)


def test_nll_gradient_against_finite_differences():
    m = _model()
    data = jnp.asarray(np.random.default_rng(6).poisson(np.asarray(m.expected(_params()))).astype(float))
    p = _params(r_b=27.0, e_scale=1.01, e_off=0.8, e_res=1.3, po_mean=41.0)  # half-Gaussian active
    g = jax.jit(jax.grad(nll, argnums=1))(m, p, data)
    for k in TRUTH:
        assert abs(float(g[k])) > 1e-6, k
        h = 1e-6 * max(abs(float(p[k])), 1.0)
        fd = (float(nll(m, {**p, k: p[k] + h}, data))
              - float(nll(m, {**p, k: p[k] - h}, data))) / (2 * h)
        assert float(g[k]) == pytest.approx(fd, rel=1e-5, abs=1e-5), k


# -------------------------------------------------------------------------------------------------
# fits. EDM_TOL: e_off = 0.5 has an error of 0.8, so 1e-5 relative needs EDM << 1e-10; every fit
# uses the same tolerance, so each solver compiles once.
EDM_TOL = 1e-12


@pytest.mark.slow
def test_newton_fit_asimov_returns_truth():
    m = _model()
    asimov = m.expected(_params())
    res = newton_fit(m, asimov, edm_tol=EDM_TOL)  # starts from the parameter set's values, off the truth
    assert res.valid, res.reason
    assert not res.at_bound
    for k, v in TRUTH.items():
        assert res.values[k] == pytest.approx(v, rel=1e-5), k
    assert res.fval == pytest.approx(float(m.nll(_params(), asimov)), rel=1e-9, abs=1e-9)


@pytest.mark.slow
def test_batch_fit_asimov_and_toys():
    m = _model()
    n = 6
    asimov = np.asarray(m.expected(_params()))
    rng = np.random.default_rng(2)
    starts = {k: v * (1.0 + 0.1 * rng.normal(size=n)) for k, v in TRUTH.items()}  # per-row starts
    res = batch_fit(m, np.tile(asimov, (n, 1)), init=starts, edm_tol=EDM_TOL)
    assert np.all(res.converged), res.status
    for k, v in TRUTH.items():
        np.testing.assert_allclose(res.values[k], v, rtol=1e-5, err_msg=k)

    toys = np.asarray(m.pseudo_data(jax.random.PRNGKey(3), _params(), n_toys=n))
    assert np.all(toys == np.round(toys))
    res = batch_fit(m, toys, edm_tol=EDM_TOL)
    assert np.all(res.converged), res.status
    nll_truth = np.array([float(nll(m, _params(), jnp.asarray(t))) for t in toys])
    assert np.all(res.fval <= nll_truth + 1e-8)  # a minimum is at least as good as the truth
    assert np.all(nll_truth - res.fval < 40.0)  # and not far: 8 parameters
    # the batched fit of a toy equals the single fit of it
    one = newton_fit(m, toys[0], edm_tol=EDM_TOL, one_sided=False)
    assert one.valid
    for k in TRUTH:
        assert res.values[k][0] == pytest.approx(one.values[k], rel=1e-6, abs=1e-6), k


@pytest.mark.slow
def test_fit_from_a_start_that_once_stopped_on_the_zero_resolution_plateau():
    """With e_res bounded at 0 this start made the Newton solver step onto e_res = 0, where -2 ln L
    is flat in e_res to all orders (gradient and curvature exactly 0): the KKT test passed ~80
    above the true minimum. With the documented lower bound (sigma a sizeable fraction of a bin)
    the same start reaches the true minimum, and a point reported valid is a minimum."""
    m = _model()
    asimov = m.expected(_params())
    start = dict(r_a=27.8, r_b=19.67, e_scale=1.017, e_off=-0.32, e_res=1.0, po_rate=9.5, po_mean=40.87,
                 po_sigma=3.95)
    res = newton_fit(m, asimov, init=start, edm_tol=EDM_TOL, one_sided=False)
    assert res.valid
    assert res.fval == pytest.approx(float(m.nll(_params(), asimov)), abs=1e-6)
    p = _params(**res.values)
    for step in (0.05, -0.05):
        moved = float(m.nll({**p, "e_res": jnp.asarray(res.values["e_res"] + step)}, asimov))
        assert moved >= res.fval - 1e-9


# -------------------------------------------------------------------------------------------------
# template_model() checks
def test_create_accepts_the_tiny_model():
    m = _model()
    assert m.n_obs == 30 and m.stage(AddTemplates).templates.shape == (2, 40) and not m.signals
    np.testing.assert_array_equal(np.asarray(m.stage(Exposure).mask), MASK)


def test_create_template_count_vs_names():
    with pytest.raises(InputError, match="2 templates but 3 names"):
        template_model(**_kwargs(template_names=("r_a", "r_b", "po_rate")))
    with pytest.raises(InputError, match="2 templates but 1 names"):
        template_model(**_kwargs(template_names=("r_a",)))


def test_create_templates_with_wrong_number_of_bins():
    """Templates on the observable bins (30) instead of the input bins (40): an InputError that
    names the templates and their shape, not a numpy reshape error or a wrong template count."""
    tpl = _templates()
    on_obs = np.stack([np.ones(30), np.ones(30)])  # 60 values: not a multiple of 40
    with pytest.raises(InputError, match=r"templates.*\(2, 30\)"):
        template_model(**_kwargs(templates=on_obs))
    one_long = tpl.reshape(1, 80)  # one template with 80 bins, read as two of 40
    with pytest.raises(InputError, match=r"templates.*\(1, 80\)"):
        template_model(**_kwargs(templates=one_long, template_names=("r_a",)))


@pytest.mark.parametrize("over,stage,name", [
    (dict(template_names=("r_a", "r_c")), r"stage 0 \(AddTemplates\)", "r_c"),
    (dict(transform=ResponseTransform.create(IN_EDGES, OBS_EDGES, scale="e_scale", nonlin="e_nl")),
     r"stage 1 \(ResponseTransform\)", "e_nl"),
    (dict(peaks=(GaussianPeak(("po_rate", "po_mu", "po_sigma")),)), r"stage 2 \(AddPeaks\)", "po_mu"),
])
def test_create_stage_reads_unknown_parameter(over, stage, name):
    with pytest.raises(ParameterError, match=rf"{stage} reads parameter '{name}', which the parameter set lacks"):
        template_model(**_kwargs(**over))


def test_create_constraint_on_unknown_parameter():
    with pytest.raises(ParameterError, match="r_bi"):
        template_model(**_kwargs(constraints=(HalfGaussianConstraint.create("r_bi", 25.0, 2.0),)))


def test_create_mask_shape():
    with pytest.raises(InputError, match=r"mask has shape \(40,\), expected \(30,\)"):
        template_model(**_kwargs(mask=np.ones(40)))


def test_create_transform_with_other_edges():
    other_out = ResponseTransform.create(IN_EDGES, np.linspace(10.0, 90.0, 21), scale="e_scale")
    other_in = ResponseTransform.create(np.linspace(0.0, 100.0, 21), OBS_EDGES, scale="e_scale")
    shifted = ResponseTransform.create(IN_EDGES, OBS_EDGES + 0.5, scale="e_scale")
    for T in (other_out, other_in, shifted):
        with pytest.raises(InputError, match="transform's input/output bins differ"):
            template_model(**_kwargs(transform=T))


def test_create_without_transform_needs_equal_axes():
    with pytest.raises(InputError, match="without a transform the input and observable bins must be the same"):
        template_model(**_kwargs(transform=None))
    m = template_model(**_kwargs(obs_edges=IN_EDGES, transform=None, mask=None, peaks=()))
    p = _params()
    np.testing.assert_allclose(np.asarray(m.expected(p)),
                               EXPOSURE * (TRUTH["r_a"] * _templates()[0] + TRUTH["r_b"] * _templates()[1]),
                               rtol=1e-13)


@pytest.mark.parametrize("exposure", [0.0, -3.0, float("inf"), float("nan")])
def test_create_bad_exposure(exposure):
    with pytest.raises(InputError, match="exposure must be finite and > 0"):
        template_model(**_kwargs(exposure=exposure))
