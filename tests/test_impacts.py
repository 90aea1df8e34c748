"""Nuisance-parameter ranking (nuejax.inference.impacts): pulls, constraints and pre- and post-fit
impacts from one batched launch of pinned refits, checked against fits of a model in which the
parameter is fixed (a separate route: its own multi-start Newton fit), against the Gaussian
closed form on a nearly linear model, and against the constraint terms' own widths."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.errors import ParameterError
from nuejax.inference import ImpactsResult, impacts, load_result, newton_fit
from nuejax.inference.impacts import prefit_widths
from nuejax.model import AbstractModel, Parameter, ParameterSet
from nuejax.model.constraints import GaussianConstraint, HalfGaussianConstraint, LogNormalConstraint


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Peak(AbstractModel):
    """A Gaussian signal peak whose width scales with an energy-scale nuisance, two backgrounds and
    a flat free normalisation."""

    sig: jax.Array
    bkg: jax.Array
    slope: jax.Array
    flat: jax.Array
    parameters: ParameterSet = dataclasses.field(metadata=dict(static=True))
    constraints: tuple = ()

    def expected(self, p):
        return (p["mu"] * self.sig * (1 + p["scale"] * self.slope) + p["b1"] * self.bkg + p["b2"] * self.bkg[::-1]
                + p["flat"] * self.flat)


def _model(linear_counts: float = 1.0, extra=()):
    x = np.linspace(0, 1, 20)
    ps = ParameterSet((Parameter("mu", 1.0, 0.0, 10.0), Parameter("scale", 0.0, -1, 1, constraint=(0.0, 0.1)),
                       Parameter("b1", 1.0, 0.0, 5, constraint=(1.0, 0.1)), Parameter("b2", 1.0, 0.01, 5),
                       Parameter("flat", 1.0, 0.0, 10)))
    return Peak(jnp.asarray(50 * linear_counts * np.exp(-((x - 0.5) / 0.15) ** 2)),
                jnp.asarray(100 * linear_counts * np.exp(-2 * x)), jnp.asarray(x - 0.5),
                jnp.asarray(5.0 * linear_counts), ps,
                (LogNormalConstraint.create("b2", 1.0, 0.2),) + tuple(extra))


def _data(model, seed=1):
    return np.random.default_rng(seed).poisson(np.asarray(model.expected(model.parameters.defaults()))).astype(float)


@pytest.mark.slow
def test_impacts_equal_fits_with_the_parameter_fixed(tmp_path):
    m = _model()
    n = _data(m)
    r = impacts(m, n, "mu")
    fit = newton_fit(m, n)
    assert r.poi_value == pytest.approx(fit.values["mu"], abs=1e-6) and r.n_failed == 0
    assert set(r.names) == {"scale", "b1", "b2", "flat"}
    assert r.prefit["flat"] is None and r.pulls["flat"] is None  # a free normalisation: no pre-fit width
    checked = 0
    for name in r.names:
        for what, table in (("postfit", r.postfit), ("prefit", r.prefit)):
            for side, v in enumerate(r.shifts[name].get(what) or ()):
                fixed = m.with_parameters(m.parameters.update(name, value=v, fixed=True))
                want = newton_fit(fixed, n).values["mu"] - fit.values["mu"]
                assert table[name][side] == pytest.approx(want, abs=2e-4 * r.poi_error), (name, what, side)
                checked += 1
    assert checked == 14
    # ranked by the larger post-fit impact
    size = [max(abs(a) for a in r.postfit[k]) for k in r.names]
    assert size == sorted(size, reverse=True)
    # shifts: post-fit by the Hessian error, pre-fit by the constraint (Gaussian: sigma; log-normal: e^{+-sigma_ln})
    assert r.shifts["b1"]["postfit"] == pytest.approx((fit.values["b1"] - fit.errors["b1"],
                                                       fit.values["b1"] + fit.errors["b1"]))
    assert r.shifts["b1"]["prefit"] == pytest.approx((fit.values["b1"] - 0.1, fit.values["b1"] + 0.1))
    assert r.shifts["b2"]["prefit"] == pytest.approx((fit.values["b2"] * np.exp(-0.2), fit.values["b2"] * np.exp(0.2)))
    assert r.pulls["b1"] == pytest.approx((fit.values["b1"] - 1.0) / 0.1)
    assert r.pulls["b2"] == pytest.approx(np.log(fit.values["b2"]) / 0.2)
    assert r.constraints["b1"] == pytest.approx(fit.errors["b1"] / 0.1)
    # saved and loaded
    r.save(tmp_path / "impacts.json")
    back = load_result(tmp_path / "impacts.json")
    assert isinstance(back, ImpactsResult) and back.postfit == r.postfit and back.names == r.names
    assert "impacts on mu" in str(r) and "flat" in str(r)


@pytest.mark.slow
def test_post_fit_impacts_follow_the_covariance_where_the_likelihood_is_gaussian():
    """Near a quadratic minimum, fixing theta_i at theta_i +- sigma_i moves mu by
    +- C_{mu i} / sigma_i (the conditional mean of the fit's Gaussian). High counts make the
    Poisson likelihood nearly Gaussian; the impacts here come from the refits, not from C. The
    energy-scale term enters as mu * scale, so its impact has a second-order part (both signs
    shift mu down by 0.002 sigma_mu): the absolute tolerance is 0.005 sigma_mu."""
    m = _model(linear_counts=1e4)
    n = np.asarray(m.expected(m.parameters.defaults()))  # Asimov
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = impacts(m, n, "mu")
        fit = newton_fit(m, n)
    i = fit.names.index("mu")
    for name in ("b1", "b2", "flat", "scale"):
        j = fit.names.index(name)
        want = fit.covariance[i, j] / np.sqrt(fit.covariance[j, j])
        down, up = r.postfit[name]
        assert up == pytest.approx(want, rel=0.02, abs=5e-3 * r.poi_error), name
        assert down == pytest.approx(-want, rel=0.02, abs=5e-3 * r.poi_error), name


def test_prefit_widths_read_every_two_sided_term():
    cov = np.array([[0.04, 0.01], [0.01, 0.09]])
    m = _model(extra=(GaussianConstraint.create(("flat", "mu"), [1.0, 1.0], cov=cov),))
    w = prefit_widths(m)
    assert w["flat"] == ("gaussian", 1.0, pytest.approx(0.2)) and w["mu"][2] == pytest.approx(0.3)
    assert w["b2"] == ("lognormal", 1.0, pytest.approx(0.2)) and w["b1"][1:] == (1.0, pytest.approx(0.1))
    one_sided = _model(extra=(HalfGaussianConstraint.create("flat", 2.0, 0.5),))
    assert "flat" not in prefit_widths(one_sided)


def test_impacts_refuse_what_they_cannot_rank():
    m = _model()
    n = _data(m)
    with pytest.raises(ParameterError, match="'nope' is not a free parameter"):
        impacts(m, n, "nope")
    alone = m.with_parameters(m.parameters.fix("scale", "b1", "b2", "flat"))
    with pytest.raises(ParameterError, match="only free parameter"):
        impacts(alone, n, "mu")
    bad = dataclasses.replace(newton_fit(m, n), valid=False, reason="made invalid for the test")
    with pytest.raises(ParameterError, match="not valid"):
        impacts(m, n, "mu", fit=bad)


def test_impacts_plot_draws_every_ranked_parameter():
    pytest.importorskip("matplotlib")
    from nuejax.plotting import plot_impacts

    m = _model()
    r = impacts(m, _data(m), "mu")
    ax = plot_impacts(r, top=3)
    assert len(ax.get_yticks()) == 3
    bars = [p for a in ax.figure.axes for p in a.patches]
    assert len(bars) == 4 * 3  # pre/post x up/down per parameter
    import matplotlib.pyplot as plt

    plt.close(ax.figure)
