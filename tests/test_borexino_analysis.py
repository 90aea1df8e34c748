"""The Borexino Phase-III model: reweighting on published shapes (closure at the SM point, fast ==
general path), the response calibration (recovers a known response from shapes it made), the
constraints of the analysis, and `nuejax borexino` end to end (slow)."""

import json
import subprocess
import sys
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.analyses.borexino import (BACKGROUNDS, SOLAR, Phase3Choices, borexino_phase3_model, calibration_targets,
                                      ssm_constrained)
from nuejax.detector.calibration import CalibrationTarget, KeVResponse, calibrate_response, group_prediction
from nuejax.io.borexino import packaged_borexino_shape
from nuejax.detector.transforms import ResponseTransform
from nuejax.model import AddTemplates, Exposure, fast_model

#: a response near the calibrated one (the model's closure holds for any response)
RESPONSE = KeVResponse(1075.0, 0.0026, 2.28, 0.042)
N_T = 60


@pytest.fixture(scope="module")
def models():
    cal = SimpleNamespace(response=RESPONSE)
    choices = Phase3Choices(n_T=N_T)
    general, data, _ = borexino_phase3_model(choices, calibration=cal, fast=False)
    return fast_model(general), general, data


def _input_spectrum(m, p, only):
    """One rate parameter's component on the input (MC keV) axis: the stages before the transform."""
    q = {**p, **{n: 0.0 * p[n] for n in m.component_names if n != only}}
    x = None
    for stage in m.stages:
        if isinstance(stage, ResponseTransform):
            return x
        x = stage(q, x)
    raise AssertionError("no transform stage")


def packaged_text():
    from importlib import resources

    return (resources.files("nuejax") / "data" / "borexino_phase3" /
            "PRL2022_SubtractedSpectrumFit_Data.txt").read_text()


def _published(name):
    stem, _, drawn = SOLAR[name]
    sh = packaged_borexino_shape(stem)
    return sh.density * np.diff(sh.edges) / drawn


@pytest.mark.slow
def test_sm_point_reproduces_the_published_shapes_exactly(models):
    fast, general, _ = models
    p = fast.parameters.values()
    for name in SOLAR:
        for m in (fast, general):
            x = np.asarray(_input_spectrum(m, p, only=name))
            expected = float(p[name]) * _published(name)
            np.testing.assert_allclose(x, expected, rtol=1e-12, atol=1e-12 * expected.max())


def test_new_physics_adds_the_folded_difference(models):
    fast, general, _ = models
    sm = fast.parameters.values()
    bsm = fast.parameters.values(eps_ee_L=0.3, eps_ee_R=-0.2, mu_nu=5.0)
    for name in SOLAR:
        a = np.asarray(_input_spectrum(fast, bsm, only=name))
        b = np.asarray(_input_spectrum(general, bsm, only=name))
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12 * np.abs(b).max())
        # and the change is real (not zero): the NSI point moves every solar spectrum
        assert np.max(np.abs(a - np.asarray(_input_spectrum(fast, sm, only=name)))) > 1e-3 * a.max()
    np.testing.assert_allclose(np.asarray(fast.expected(bsm)), np.asarray(general.expected(bsm)), rtol=1e-10)


def test_templates_follow_their_declared_normalisation(models):
    fast, _, _ = models
    templates = [s for s in fast.stages if isinstance(s, AddTemplates)][-1]
    assert templates.names == tuple(BACKGROUNDS)
    for k, n in enumerate(templates.names):
        stem, drawn = BACKGROUNDS[n]
        sh = packaged_borexino_shape(stem)
        t = np.asarray(templates.templates[k])
        if drawn is None:  # integral convention: the template sums to one
            assert t.sum() == pytest.approx(1.0, rel=1e-12)
        else:
            assert t.sum() == pytest.approx(sh.integral / drawn, rel=1e-12)


def test_the_analysis_constraints(models):
    fast, _, data = models
    p = fast.parameters.values()
    counts = jnp.asarray(data.counts)
    # 210Bi half-Gaussian: no penalty below 10.8, ((x - 10.8)/1)^2 above
    at = {**p, "rate_210Bi": jnp.asarray(12.3)}
    poisson = float(fast.nll(at, counts)) - float(fast.constraints[0](at))
    assert float(fast.nll(at, counts)) - poisson == pytest.approx(1.5**2, rel=1e-12)
    assert float(fast.constraints[0]({**p, "rate_210Bi": jnp.asarray(9.0)})) == 0.0
    g = jax.grad(lambda b: fast.constraints[0]({**p, "rate_210Bi": b}))
    assert float(g(jnp.asarray(10.0))) == 0.0 and float(g(jnp.asarray(11.8))) == pytest.approx(2.0)
    # SSM constraints replace the CNO fit's: pp 0.6 %, pep 1 %
    m = ssm_constrained(fast, {"rate_pp": 130.0, "rate_7Be": 48.0, "rate_pep": 2.8, "rate_CNO": 5.0, "rate_8B": 0.44})
    c = {q.name: q.constraint for q in m.parameters.parameters if q.constraint is not None}
    assert c["rate_pp"] == pytest.approx((130.0, 0.78)) and c["rate_pep"] == pytest.approx((2.8, 0.028))


def test_data_selection_and_exposure(models):
    fast, _, data = models
    raw = [line.split() for line in packaged_text().splitlines()[2:]]
    hi_edges = np.array([float(r[2]) + 0.5 * float(r[3]) for r in raw])
    assert data.edges[-1] <= 2610.79 and data.n_bins == int(np.sum(hi_edges <= 2610.79)) // 4
    assert fast.stage(Exposure).exposure == pytest.approx(1431.6 * 0.713 * 0.6397)


@pytest.mark.slow
def test_calibration_recovers_a_response_from_shapes_it_made(tmp_path, monkeypatch):
    """Closure of the calibration: targets folded from nuejax's spectra at a known response (with
    their published relative errors) are fitted back to that response, norms 1, chi^2 ~ 0. A
    second call loads the result from the on-disk cache, equal to the fitted one bit for bit
    (that other arguments make other keys: tests/test_cache.py)."""
    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(tmp_path))
    from nuejax.detector.response import quenching_table
    from nuejax.detector.calibration import _sources
    from nuejax.physics.oscillation import OscillationParams

    edges = packaged_borexino_shape("pp").edges
    truth = KeVResponse(1050.0, 0.008, 3.0, 0.03)
    targets = []
    osc = OscillationParams()
    for t in calibration_targets():
        members = _sources((t,), "gs98", 400, N_T, osc, True, quenching_table(), 2)[0]
        pred = np.asarray(group_prediction(members, jnp.asarray(edges), truth, quenching_table(), osc, True))
        targets.append(CalibrationTarget(t.name, t.labels, pred, np.where(pred > 0, 0.01 * pred + 1e-9, 0.0)))
    r = calibrate_response(targets, edges, n_T=N_T)
    assert r.converged
    for got, want in zip(r.response, truth):
        assert got == pytest.approx(want, rel=1e-5)
    for v in r.norms.values():
        assert v == pytest.approx(1.0, rel=1e-6)
    assert r.chi2_total < 1e-6
    assert len(list(tmp_path.glob("calibration-*.npz"))) == 1
    again = calibrate_response(targets, edges, n_T=N_T)
    assert again.response == r.response and again.converged == r.converged and again.n_par == r.n_par
    for name in ("norms", "chi2", "n_bins", "pulls", "relative_residual"):
        a, b = getattr(again, name), getattr(r, name)
        assert set(a) == set(b) and all(np.array_equal(a[k], b[k], equal_nan=True) for k in b), name
    assert np.array_equal(again.extra["prediction"], r.extra["prediction"])
    assert len(list(tmp_path.glob("calibration-*.npz"))) == 1


@pytest.mark.slow
def test_nuejax_borexino_command(tmp_path):
    # one start (--starts 1): the command end to end in 11 minutes instead of the default's 16; the
    # multi-start scans it otherwise runs are checked in tests/test_global_minima.py, and the
    # default run's branches are recorded in docs/borexino.md
    out = subprocess.run([sys.executable, "-m", "nuejax.cli", "borexino", "--out", str(tmp_path), "--toys", "20",
                          "--json", "--no-plots", "--starts", "1"], capture_output=True, text=True, timeout=3600)
    assert out.returncode == 0, out.stderr[-3000:]
    s = json.loads(out.stdout.strip().splitlines()[-1])
    for key in ("cno_best", "cno_profile", "deviance", "ndf", "mu_nu_upper_90", "eps_ee_L_interval_90",
                "eps_ee_R_interval_90", "seconds"):
        assert key in s
    assert set(s["cno_profile"]) == {"4", "5", "8.6", "10"}
    assert 0.0 < s["cno_best"] < 20.0 and s["fit_valid"]
    assert (tmp_path / "summary.json").is_file()


def test_regions_of_a_profile_with_two_minima():
    """The eps_L profile has two minima (g_L + eps -> -g_L): every region below the threshold is
    reported, with linear interpolation at the crossings and None where a region reaches the end."""
    from nuejax.inference.results import regions_from_profile

    x = np.linspace(-2.0, 1.0, 301)
    d = np.minimum(((x + 1.5) / 0.1) ** 2, (x / 0.2) ** 2)
    r = regions_from_profile(x, d, 2.706)
    assert len(r) == 2
    w1, w2 = 0.1 * np.sqrt(2.706), 0.2 * np.sqrt(2.706)
    np.testing.assert_allclose(r[0], [-1.5 - w1, -1.5 + w1], atol=2e-4)
    np.testing.assert_allclose(r[1], [-w2, w2], atol=2e-4)
    open_end = regions_from_profile(x, (x / 3.0) ** 2, 2.706)
    assert open_end == [[None, None]]
    left_open = regions_from_profile(x[x > -0.1], d[x > -0.1], 2.706)
    assert left_open[0][0] is None and left_open[0][1] == pytest.approx(w2, abs=2e-4)


@pytest.fixture(scope="module")
def mediator_models():
    cal = SimpleNamespace(response=RESPONSE)
    choices = Phase3Choices(n_T=30, mediators=True)
    fast, _, _ = borexino_phase3_model(choices, calibration=cal, fast=True)
    general, _, _ = borexino_phase3_model(choices, calibration=cal, fast=False)
    return fast, general


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.slow
def test_fast_mediators_equal_the_general_evaluation(mediator_models, seed):
    """The Borexino model's fast mediator signals (one recoil grid per spectrum) equal the general
    evaluation at random couplings and masses, and they do move the spectrum."""
    fast, general = mediator_models
    assert not {"eps_ee_L", "eps_ee_R"} & set(fast.parameters.names)  # the fast path does not read them
    rng = np.random.default_rng(seed)
    point = dict(zprime_coupling=rng.uniform(-5, 5) * 10 ** rng.uniform(-1, 3), zprime_mass=10 ** rng.uniform(-2, 2),
                 phi_coupling=rng.uniform(-5, 5) * 10 ** rng.uniform(-1, 3), phi_mass=10 ** rng.uniform(-2, 2),
                 mu_nu=rng.uniform(0, 5))
    a = np.asarray(fast.expected(fast.parameters.values(**point)))
    b = np.asarray(general.expected(general.parameters.values(**point)))
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12 * np.abs(b).max())
    sm = np.asarray(fast.expected(fast.parameters.values()))
    assert np.max(np.abs(a - sm)) > 1e-3 * sm.max()


def test_mediators_with_general_nsi_have_no_fast_path():
    from nuejax.errors import InputError

    with pytest.raises(InputError, match="no fast path"):
        borexino_phase3_model(Phase3Choices(mediators=True, general_nsi=("eps_etau_L_re",)),
                              calibration=SimpleNamespace(response=RESPONSE))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fast", "mediators_general"])
def test_the_cached_model_equals_a_fresh_build(kind, tmp_path, monkeypatch):
    """The whole Phase-III model is one cache entry: a second build loads it (no build runs) and it
    equals, bit for bit, the model built with the cache off; also for the general mediator model,
    whose tree holds the general case's static structure."""
    import warnings

    from nuejax import cache
    from test_cache import assert_same_bits

    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NUEJAX_CACHE", raising=False)
    monkeypatch.setattr(cache, "_warned", set())
    cal = SimpleNamespace(response=RESPONSE)
    choices, fast = (Phase3Choices(n_T=30), True) if kind == "fast" else (Phase3Choices(n_T=30, mediators=True), False)
    said = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", cache.CacheWarning)  # a model that cannot be stored fails here
        first, data, _ = borexino_phase3_model(choices, calibration=cal, fast=fast, progress=said.append)
        second, _, _ = borexino_phase3_model(choices, calibration=cal, fast=fast, progress=said.append)
        # another response is another entry
        borexino_phase3_model(choices, calibration=SimpleNamespace(response=RESPONSE._replace(scale=1080.0)),
                              fast=fast, progress=said.append)
    assert [m.split(" the model")[0] for m in said] == ["built", "loaded from the cache", "built"], said
    assert len(list((tmp_path / "cache").glob("phasethree-model-*.npz"))) == 2
    monkeypatch.setenv("NUEJAX_CACHE", "0")
    reference, _, _ = borexino_phase3_model(choices, calibration=cal, fast=fast)
    leaves, tree = jax.tree_util.tree_flatten(reference)
    for m in (first, second):
        # by value: the general model's static fields hold arrays, which a treedef's == compares
        # by identity
        assert cache.treedef_digest(jax.tree_util.tree_structure(m)) == cache.treedef_digest(tree) is not None
        assert_same_bits(jax.tree_util.tree_leaves(m), leaves)
    p = reference.defaults()
    counts = np.asarray(data.counts)
    assert float(first.nll(p, counts)) == float(second.nll(p, counts)) == float(reference.nll(p, counts))
