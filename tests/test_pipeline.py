"""The model as a pipeline of stages: a combination the model classes could not make (a floating
analytic response, templates and a peak on the fast path), the checks of Model.create, and the
toys' auxiliary measurements (a constrained nuisance's pull over toys has mean 0 and width 1 only
when the toys redraw its measurement)."""
import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.errors import InputError, ParameterError
from nuejax.inference import batch_fit, newton_fit
from nuejax.model import (AbstractModel, AddPeaks, AddTemplates, Exposure, FloatingFold, GaussianPeak, Model, Parameter,
                          ParameterSet, PolynomialSignals, borexino_like_model, floating_response_model,
                          shape_template)

WINDOW = (150, 400)


@functools.cache
def _fixed():
    return borexino_like_model(n_T=60, window=WINDOW, signals=("7Be_862", "pep"), backgrounds=("85Kr",))


@functools.cache
def _combined():
    """Fast signals -> floating fold -> backgrounds -> a shape template -> a Gaussian peak -> exposure."""
    floating = floating_response_model(_fixed(), fast=True, response_names=("light_yield",))
    edges = np.asarray(floating.obs_edges)
    shape_edges = np.linspace(100.0, 500.0, 41)
    template = shape_template(shape_edges, 1.0 + 0.002 * shape_edges[:-1], edges, normalisation="integral",
                              name="flat-ish")
    extra = ParameterSet((Parameter("rate_shape", 5.0, 0.0, 100.0), Parameter("rate_peak", 2.0, 0.0, 50.0),
                          Parameter("peak_mean", 300.0, 250.0, 350.0), Parameter("peak_sigma", 20.0, 5.0, 50.0)))
    stages = floating.stages[:-1] + (AddTemplates(jnp.asarray(template[None, :]), ("rate_shape",)),
                                     AddPeaks((GaussianPeak(("rate_peak", "peak_mean", "peak_sigma")),),
                                              jnp.asarray(edges)),
                                     floating.stages[-1])
    params = ParameterSet(floating.parameters.parameters + extra.parameters)
    return floating, Model.create(stages, params, obs_edges=edges, constraints=floating.constraints,
                                  baked=floating.baked), template


@pytest.mark.slow
def test_floating_response_with_templates_and_a_peak_on_the_fast_path():
    floating, m, template = _combined()
    assert m.stage(PolynomialSignals) is not None and m.stage(FloatingFold) is not None
    p = m.parameters.values(light_yield=520.0, rate_shape=7.0, rate_peak=3.0, peak_mean=310.0, eps_ee_L=0.1)
    # independently: the floating model's expectation plus the exposure times the template and the peak
    from scipy.stats import norm

    edges = np.asarray(m.obs_edges)
    peak = 3.0 * np.diff(norm.cdf(edges, 310.0, 20.0))
    exposure = m.stage(Exposure).exposure
    want = np.asarray(floating.expected({k: v for k, v in p.items() if k in floating.parameters})) \
        + exposure * (7.0 * template + peak)
    np.testing.assert_allclose(np.asarray(m.expected(p)), want, rtol=1e-12)
    assert set(m.component_names) >= {"norm_7Be", "norm_pep", "rate_85Kr", "rate_shape", "rate_peak"}
    np.testing.assert_allclose(sum(m.components(p).values()), np.asarray(m.expected(p)), rtol=1e-12)
    # gradient in a response parameter, a template rate and a peak position against central differences
    data = jnp.asarray(np.round(want * 1.01))
    g = jax.grad(lambda q: m.nll(q, data))(p)
    for name, h in (("light_yield", 1e-3), ("rate_shape", 1e-5), ("peak_mean", 1e-4), ("eps_ee_L", 1e-6)):
        fd = (float(m.nll({**p, name: p[name] + h}, data)) - float(m.nll({**p, name: p[name] - h}, data))) / (2 * h)
        assert float(g[name]) == pytest.approx(fd, rel=1e-5, abs=1e-6), name


@pytest.mark.slow
def test_the_combined_model_recovers_an_injected_point():
    _, m, _ = _combined()
    truth = m.parameters.values(light_yield=515.0, rate_shape=8.0, rate_peak=2.5)
    r = newton_fit(m, m.asimov(truth), names=("light_yield", "rate_shape", "rate_peak", "peak_mean", "norm_7Be",
                                               "rate_85Kr"))
    assert r.valid, r.reason
    for name, value in (("light_yield", 515.0), ("rate_shape", 8.0), ("rate_peak", 2.5), ("peak_mean", 300.0)):
        assert r.values[name] == pytest.approx(value, rel=1e-5), name


def test_model_create_checks_each_stage():
    floating, m, _ = _combined()
    with pytest.raises(ParameterError, match=r"stage 3 \(AddTemplates\) reads parameter 'rate_shape'"):
        Model.create(m.stages, floating.parameters, obs_edges=m.obs_edges, baked=m.baked)
    with pytest.raises(InputError, match="expectation of shape"):
        Model.create(m.stages, m.parameters, obs_edges=np.asarray(m.obs_edges)[:-3], baked=m.baked)
    with pytest.raises(ParameterError, match="both baked"):
        Model.create(m.stages, m.parameters, obs_edges=m.obs_edges, baked=(m.parameters["rate_shape"],))
    with pytest.raises(InputError, match="at least one stage"):
        Model.create((), m.parameters, obs_edges=m.obs_edges)


# -- auxiliary measurements in toys -----------------------------------------------------------------
@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Background(AbstractModel):
    """Ten bins of a background scaled by ``norm_b`` (Gaussian constraint 1 ± 0.05) and a signal ``mu``."""

    b: jax.Array
    s: jax.Array
    parameters: ParameterSet = dataclasses.field(metadata=dict(static=True))

    def expected(self, p):
        return p["norm_b"] * self.b + p["mu"] * self.s


@pytest.mark.slow
def test_toy_pulls_of_a_constrained_nuisance_have_unit_width():
    """The pull (fitted norm_b − truth) / fitted error over toys: mean 0 and width 1 when the toys
    redraw the constraint's measurement with the counts (Cowan et al., EPJC 71 (2011) 1554, Sec. 2).
    Keeping the measurement at the truth instead gives a width of sqrt(1 − σ̂²/σ_aux²) ≈ 0.85 here:
    the test tells the two apart by ~10 standard errors."""
    model = Background(jnp.full(10, 100.0), jnp.linspace(0.0, 5.0, 10),
                       ParameterSet((Parameter("mu", 1.0, -20.0, 20.0), Parameter("norm_b", 1.0, 0.5, 1.5,
                                                                                   constraint=(1.0, 0.05)))))
    truth = model.parameters.values(mu=1.0)
    n = 2000
    keys = jax.random.split(jax.random.PRNGKey(11), n)
    widths = {}
    for resample in ((True,), (False,)):
        counts, aux = jax.vmap(lambda k: model.draw_toy(k, truth, resample))(keys)
        fits = batch_fit(model, np.asarray(counts), aux=aux)
        assert fits.converged.all()
        # the fitted error of norm_b (the same for every toy to O(1/sqrt(N))): 2 H^-1 at the truth
        h = jax.hessian(lambda x: model.nll({"mu": x[0], "norm_b": x[1]}, model.expected(truth)))(jnp.array([1.0, 1.0]))
        sigma = float(np.sqrt(2.0 * np.linalg.inv(np.asarray(h))[1, 1]))
        pull = (fits.values["norm_b"] - 1.0) / sigma
        widths[resample] = pull.std()
        if resample == (True,):
            assert abs(pull.mean()) < 3 / np.sqrt(n), pull.mean()
            assert abs(pull.std() - 1.0) < 3 / np.sqrt(2 * n), pull.std()
            assert abs(float(np.std(np.asarray(aux[0]))) - 0.05) < 3 * 0.05 / np.sqrt(2 * n)
        else:
            assert np.all(np.asarray(aux[0]) == 1.0)
    assert widths[(False,)] < 0.9 < widths[(True,)]


def test_release_and_fix_on_a_model_equal_the_parameter_set_route():
    from nuejax.model.combine import combine

    m = _fixed()
    assert m.parameters["mu_nu"].fixed
    freed = m.release("mu_nu", "eps_ee_L")
    assert freed.parameters == m.parameters.release("mu_nu", "eps_ee_L")
    assert set(freed.parameters.free_names) - set(m.parameters.free_names) == {"mu_nu", "eps_ee_L"}
    fixed = freed.fix("eps_ee_L", mu_nu=0.5)
    assert fixed.parameters == freed.parameters.fix("eps_ee_L", mu_nu=0.5)
    assert float(fixed.parameters["mu_nu"].value) == 0.5 and fixed.parameters["mu_nu"].fixed
    both = combine(m, m, labels=("a", "b"), shared=("mu_nu",))
    assert not both.release("mu_nu").parameters["mu_nu"].fixed
    with pytest.raises(ParameterError, match="mu_nuu"):
        m.release("mu_nuu")


def test_stage_clock_records_when_each_stage_began():
    from nuejax.analyses._clock import StageClock

    said = []
    say = StageClock(said.append)
    say("[1/2] first")
    say("      detail")
    say("[2/2] second")
    say("[2/2] (repeated: the first time is kept)")
    assert said[1] == "      detail" and len(said) == 4
    assert list(say.starts) == ["1/2", "2/2"]
    assert 0.0 <= say.starts["1/2"] <= say.starts["2/2"] <= say.elapsed()
