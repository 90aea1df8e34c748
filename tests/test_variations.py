"""Template uncertainties (nuejax.model.variations): the code-4p interpolation against the
conditions that define it, the stages inside a template model (expected counts, the exact
Hessian of the solver against jax.hessian), the Barlow-Beeston-lite factor against its closed
form, and both from a specification file."""

import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.analyses.spec import build_spec, load_spec, run_spec
from nuejax.errors import InputError
from nuejax.inference import newton_fit
from nuejax.inference.fitting import value_grad_hessian
from nuejax.inference.problem import FitProblem
from nuejax.model import (NonIntegerCountsWarning, Parameter, ParameterSet, code4p, mc_stat_parameters,
                          shape_variation_stage, template_model)

EDGES = np.linspace(0.0, 10.0, 11)
X = 0.5 * (EDGES[1:] + EDGES[:-1])
SIG = 30.0 * np.exp(-0.5 * ((X - 5.0) / 1.0) ** 2)
BKG = 50.0 * np.exp(-X / 4.0)
BKG_UP = BKG * (1.0 + 0.04 * (X - 5.0))  # a tilt
BKG_DOWN = BKG * (1.0 - 0.03 * (X - 5.0))


def test_code4p_meets_the_conditions_that_define_it():
    up, down = 2.0, 0.5  # t+ - t and t - t-
    d = jax.vmap(lambda a: code4p(a, up, down))
    d1 = jax.vmap(jax.grad(lambda a: code4p(a, up, down)))
    d2 = jax.vmap(jax.grad(jax.grad(lambda a: code4p(a, up, down))))
    eps = 1e-9
    a = jnp.array([-1.0 - eps, -1.0 + eps, 1.0 - eps, 1.0 + eps])
    assert float(code4p(0.0, up, down)) == 0.0
    np.testing.assert_allclose(d(jnp.array([1.0, -1.0, 2.0, -3.0])), [up, -down, 2 * up, -3 * down], rtol=1e-12)
    # value, slope and curvature continuous at +-1 (linear outside: slope = the delta, curvature 0)
    np.testing.assert_allclose(d(a), [-down, -down, up, up], atol=1e-8)
    np.testing.assert_allclose(d1(a), [down, down, up, up], atol=1e-6)
    np.testing.assert_allclose(d2(a), 0.0, atol=1e-5)
    # monotonic between the variations for these deltas, and odd when they are equal
    grid = jnp.linspace(-1, 1, 201)
    assert np.all(np.diff(np.asarray(d(grid))) > 0)
    np.testing.assert_allclose(code4p(grid, 1.0, 1.0), -code4p(-grid, 1.0, 1.0), atol=1e-15)


def _model(with_mc=True, exposure=1.0):
    shape, alphas = shape_variation_stage({"rate_bkg": BKG}, [("rate_bkg", "alpha_tilt", BKG_UP, BKG_DOWN)])
    params = [Parameter("mu", 1.0, 0.0, 10.0), Parameter("rate_bkg", 1.0, 0.0, 10.0, constraint=(1.0, 0.05)), *alphas]
    mc = None
    if with_mc:
        mc, gammas = mc_stat_parameters(np.stack([SIG, BKG]), np.stack([0.05 * SIG, np.sqrt(BKG)]), [1.0, 1.0])
        params += list(gammas)
    return template_model(in_edges=EDGES, obs_edges=EDGES, templates=np.stack([SIG, BKG]),
                          template_names=("mu", "rate_bkg"), parameters=ParameterSet(tuple(params)),
                          exposure=exposure, shape_variations=shape, mc_stat=mc)


@pytest.mark.slow
def test_variations_give_the_varied_templates_and_the_solver_hessian_is_exact():
    m = _model()
    assert m.parameters["alpha_tilt"].constraint == (0.0, 1.0) and len([n for n in m.parameters.names if n.startswith("mc_stat_")]) == 10
    for a, want in ((0.0, BKG), (1.0, BKG_UP), (-1.0, BKG_DOWN)):
        p = m.parameters.values(mu=0.5, rate_bkg=1.3, alpha_tilt=a)
        np.testing.assert_allclose(np.asarray(m.expected(p)), 0.5 * SIG + 1.3 * want, rtol=1e-12)
    p = m.parameters.values(mu=0.5, mc_stat_3=1.2)
    e = np.asarray(m.expected(p))
    np.testing.assert_allclose(e[3], 1.2 * (0.5 * SIG[3] + BKG[3]), rtol=1e-12)
    # the structured Hessian (declared linear normalisations) equals autodiff's
    n = np.round(np.asarray(m.expected(m.parameters.values(mu=1.2, alpha_tilt=0.4))))
    s = FitProblem.create(m, n)
    x = jnp.asarray(np.array([{"mu": 1.1, "rate_bkg": 0.9, "alpha_tilt": 0.3}.get(k, 1.05) for k in s.names]))
    fixed = jnp.zeros(0)
    v, g, H = value_grad_hessian(x, (s, fixed))
    H_ref = jax.hessian(lambda y: s.objective(y, fixed))(x)
    assert "mu" in m.linear_parameters and "alpha_tilt" not in m.linear_parameters
    np.testing.assert_allclose(np.asarray(H), np.asarray(H_ref), rtol=1e-9, atol=1e-9)


@pytest.mark.slow
def test_barlow_beeston_lite_factor_equals_its_closed_form():
    """One bin's profiled gamma solves gamma^2/s^2 + gamma (nu - 1/s^2) - n = 0 (d/dgamma of
    2(nu gamma - n ln(nu gamma)) + ((gamma - 1)/s)^2 = 0) at fixed normalisations."""
    m = _model()
    m = m.with_parameters(m.parameters.fix("mu", "rate_bkg", "alpha_tilt"))
    n = np.asarray(m.expected(m.parameters.defaults())) * np.linspace(0.8, 1.25, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonIntegerCountsWarning)
        fit = newton_fit(m, n)
    nu = SIG + BKG
    for b in range(10):
        s = m.parameters[f"mc_stat_{b}"].constraint[1]
        assert s == pytest.approx(np.hypot(0.05 * SIG[b], np.sqrt(BKG[b])) / nu[b], rel=1e-12)
        A, B, C = 1.0 / s ** 2, nu[b] - 1.0 / s ** 2, -n[b]
        root = (-B + np.sqrt(B * B - 4 * A * C)) / (2 * A)
        assert fit.values[f"mc_stat_{b}"] == pytest.approx(root, rel=1e-7), b


def test_shape_variations_are_checked():
    with pytest.raises(InputError, match="no template with normalisation 'rate_x'"):
        shape_variation_stage({"rate_bkg": BKG}, [("rate_x", "a", BKG_UP, BKG_DOWN)])
    with pytest.raises(InputError, match="the up template has shape"):
        shape_variation_stage({"rate_bkg": BKG}, [("rate_bkg", "a", BKG_UP[:-1], BKG_DOWN)])
    with pytest.raises(InputError, match="template 1 in bin 2"):
        bad = np.ones((2, 10))
        bad[1, 2] = -1.0
        mc_stat_parameters(np.ones((2, 10)), bad, [1.0, 1.0])


SPEC = textwrap.dedent("""\
    version = 1

    [model]
    kind = "templates"
    edges = {edges}
    exposure = 40.0

    [[model.templates]]
    name = "signal"
    parameter = "mu"
    file = "signal.txt"
    stat_error = {{file = "signal_err.txt"}}

    [[model.templates]]
    name = "rate_bkg"
    file = "bkg.txt"
    stat_error = {{file = "bkg_err.txt"}}
    gaussian = {{centre = 1.0, sigma = 0.05}}

    [[model.templates.variations]]
    parameter = "alpha_tilt"
    up = {{file = "bkg_up.txt"}}
    down = {{file = "bkg_down.txt"}}

    [data]
    file = "data.txt"

    [[questions]]
    name = "best"
    kind = "fit"
    profile_errors = false
    """)


@pytest.mark.slow
def test_a_spec_with_variations_and_mc_statistics_equals_the_model_built_in_python(tmp_path):
    for name, a in (("signal", SIG), ("signal_err", 0.05 * SIG), ("bkg", BKG), ("bkg_err", np.sqrt(BKG)),
                    ("bkg_up", BKG_UP), ("bkg_down", BKG_DOWN)):
        np.savetxt(tmp_path / f"{name}.txt", a)
    ref = _model(exposure=40.0)
    truth = ref.parameters.values(mu=1.3, alpha_tilt=0.6)
    np.savetxt(tmp_path / "data.txt", np.asarray(ref.expected(truth)))
    (tmp_path / "a.toml").write_text(SPEC.format(edges=EDGES.tolist()))
    model, counts = build_spec(load_spec(tmp_path / "a.toml"))
    assert set(model.parameters.names) == set(ref.parameters.names)
    for p in (truth, ref.parameters.values(mu=0.7, alpha_tilt=-1.4, mc_stat_2=0.9)):
        np.testing.assert_allclose(np.asarray(model.expected(p)), np.asarray(ref.expected(p)), rtol=1e-12)
    for n in ref.parameters.names:
        assert model.parameters[n].constraint == ref.parameters[n].constraint, n
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NonIntegerCountsWarning)
        fit = run_spec(tmp_path / "a.toml")["questions"]["best"]
        direct = newton_fit(ref, np.asarray(ref.expected(truth)))
    for n in ("mu", "rate_bkg", "alpha_tilt"):
        assert fit["values"][n] == pytest.approx(direct.values[n], rel=1e-6, abs=1e-8), n
    # Asimov data at alpha = 0.6: the fit moves alpha towards it (the unit constraint pulls to 0)
    assert 0.3 < fit["values"]["alpha_tilt"] < 0.65
    bad = SPEC.format(edges=EDGES.tolist()).replace('parameter = "alpha_tilt"', 'parameter = "mu"')
    (tmp_path / "b.toml").write_text(bad)
    with pytest.raises(InputError, match="b.toml:21: model.templates\\[1\\].variations\\[0\\].parameter"):
        build_spec(load_spec(tmp_path / "b.toml"))
