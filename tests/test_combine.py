"""Combined likelihoods (nuejax.model.combine): one model equals itself combined; two copies with
every parameter shared equal the model with twice the exposure; shared names must agree; toys and
fits work on binned and unbinned parts together."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.errors import DataError, InputError, ParameterError
from nuejax.model import (AddPeaks, AddTemplates, Exposure, Model, Parameter, ParameterSet, UnbinnedPoisson, combine,
                          nll)
from nuejax.model.templates import GaussianPeak


def line_model(exposure=1.0, *, unbinned=False, step=0.25):
    """A Gaussian line (rate ``s``, mean ``m``) on a flat background ``b`` with a Gaussian
    constraint (an auxiliary measurement), times ``exposure``."""
    e = np.linspace(0.0, 10.0, int(round(10 / step)) + 1)
    stages = (AddTemplates(jnp.asarray((np.diff(e) / 10.0)[None, :]), ("b",)),
              AddPeaks((GaussianPeak(("s", "m", "w")),), jnp.asarray(e)),
              Exposure(jnp.ones(e.size - 1), float(exposure)))
    params = ParameterSet((Parameter("b", 100.0, 0.0, 1000.0, constraint=(100.0, 8.0)),
                           Parameter("s", 30.0, 0.0, 500.0), Parameter("m", 4.0, 1.0, 9.0),
                           Parameter("w", 0.6, 0.1, 2.0, fixed=True)))
    lik = UnbinnedPoisson.create(e, 600) if unbinned else None
    return Model.create(stages, params, obs_edges=e, likelihood=lik)


def _points(model, names, n=4, seed=0):
    rng = np.random.default_rng(seed)
    base = model.parameters.defaults()
    out = []
    for _ in range(n):
        p = dict(base)
        for k in names:
            lo, hi = model.parameters[k].lower, model.parameters[k].upper
            v = float(base[k])
            p[k] = jnp.asarray(np.clip(v * rng.uniform(0.7, 1.3), lo + 1e-3, hi - 1e-3))
        out.append(p)
    return out


def test_a_combination_of_one_model_equals_the_model():
    m = line_model()
    c = combine(m, labels=("a",))
    assert c.parameters.names == ("b_a", "s_a", "m_a", "w_a")
    data = np.asarray(m.pseudo_data(jax.random.PRNGKey(0), m.parameters.defaults()))
    for p in _points(m, ("b", "s", "m")):
        q = {f"{k}_a": v for k, v in p.items()}
        assert float(nll(c, q, c.join(data))) == pytest.approx(float(nll(m, p, data)), rel=1e-12)
        g1 = jax.grad(lambda pp: nll(m, pp, data))(p)
        g2 = jax.grad(lambda qq: nll(c, qq, c.join(data)))(q)
        for k in ("b", "s", "m"):
            assert float(g2[f"{k}_a"]) == pytest.approx(float(g1[k]), rel=1e-12, abs=1e-12)


@pytest.mark.slow
def test_two_copies_with_shared_parameters_equal_twice_the_exposure_on_asimov_data():
    m, m2 = line_model(1.0), line_model(2.0)
    c = combine(m, m, labels=("a", "b"), shared=m.parameters.names)
    assert c.parameters.names == m.parameters.names
    # the constraint of the shared b counts once (one auxiliary measurement)
    assert len(c.constraint_terms()) == len(m.constraint_terms()) == 1
    truth = m.parameters.defaults()
    a1, a2 = np.asarray(m.asimov(truth)), np.asarray(m2.asimov(truth))
    dc = c.join(a1, a1)
    pts = _points(m, ("b", "s", "m"), n=5, seed=3)
    vc = np.array([float(nll(c, p, dc)) for p in pts])
    v2 = np.array([float(nll(m2, p, a2)) for p in pts])
    # equal up to a constant of the data (ln Γ terms): compare differences
    np.testing.assert_allclose(vc[1:] - vc[0], v2[1:] - v2[0], rtol=1e-10, atol=1e-10)
    free = ("b", "s", "m")
    hc = jax.hessian(lambda x: nll(c, {**truth, **dict(zip(free, x))}, dc))(jnp.array([truth[k] for k in free]))
    h2 = jax.hessian(lambda x: nll(m2, {**truth, **dict(zip(free, x))}, a2))(jnp.array([truth[k] for k in free]))
    np.testing.assert_allclose(np.asarray(hc), np.asarray(h2), rtol=1e-10)

    from nuejax.inference import fit

    rc, r2 = fit(c, dc, starts=1), fit(m2, a2, starts=1)
    for k in free:
        assert float(rc.values[k]) == pytest.approx(float(r2.values[k]), rel=1e-6)
        assert rc.errors[k] == pytest.approx(r2.errors[k], rel=1e-6)


def test_a_shared_name_that_means_different_things_is_refused():
    m = line_model()
    other = m.with_parameters(m.parameters.update("s", upper=50.0))
    with pytest.raises(ParameterError, match="'s' means different things: upper is 500.0 in a and 50.0 in b"):
        combine(m, other, labels=("a", "b"), shared=("s",))
    with pytest.raises(InputError, match="none of the models"):
        combine(m, m, shared=("mu_nu",))
    with pytest.raises(InputError, match="labels"):
        combine(m, m, labels=("a", "a"))


@pytest.mark.slow  # fits and a batch fit of a binned + unbinned combination
def test_binned_and_unbinned_experiments_together_fit_and_draw_toys():
    from nuejax.inference import batch_fit, fit

    mb, mu = line_model(1.0), line_model(1.5, unbinned=True)
    c = combine(mb, mu, labels=("bin", "evt"), shared=("s", "m", "w"))
    assert set(c.parameters.names) == {"b_bin", "b_evt", "s", "m", "w"}
    truth = c.parameters.defaults()
    toys = c.pseudo_data(jax.random.PRNGKey(4), truth, 6)
    parts = c.split(toys[0])
    assert parts[0].shape == (40,) and parts[1].shape == (mu.likelihood.n_max, 2)
    # each experiment drawn from its own stage: integer counts, weights 0/1
    assert np.all(parts[0] == np.round(parts[0])) and set(np.unique(parts[1][:, 1])) <= {0.0, 1.0}
    r = fit(c, np.asarray(toys[0]))
    assert r.valid
    br = batch_fit(c, toys)
    assert br.converged.all()
    assert float(br.values["s"][0]) == pytest.approx(float(r.values["s"]), rel=1e-4)
    # the combination's −2 ln L is the sum of the experiments'
    p = dict(truth)
    q_b = {k.removesuffix("_bin"): v for k, v in p.items() if not k.endswith("_evt")}
    q_e = {k.removesuffix("_evt"): v for k, v in p.items() if not k.endswith("_bin")}
    total = float(nll(mb, q_b, parts[0])) + float(nll(mu, q_e, parts[1]))
    assert float(nll(c, p, np.asarray(toys[0]))) == pytest.approx(total, rel=1e-12)


def test_combination_data_errors_name_the_experiment():
    mb, mu = line_model(1.0), line_model(1.0, unbinned=True)
    c = combine(mb, mu, labels=("bin", "evt"), shared=("s",))
    good = c.join(np.ones(40), mu.likelihood.events([1.0, 2.0]))
    with pytest.raises(DataError, match="flat array"):
        c.nll(c.parameters.defaults(), good[:-1])
    bad = good.copy()
    bad[3] = -1.0
    with pytest.raises(DataError, match="data of bin"):
        c.nll(c.parameters.defaults(), bad)
    with pytest.raises(DataError, match="one data set per experiment"):
        c.join(np.ones(40))


@pytest.mark.slow
def test_binned_combination_takes_the_exact_poisson_hessian_route():
    from nuejax.inference.fitting import linear_mask, objective, value_grad_hessian
    from nuejax.inference.problem import FitProblem

    m = line_model()
    c = combine(m, line_model(2.0), labels=("a", "b"), shared=("s", "m", "w"))
    assert set(c.linear_parameters) == {"b_a", "b_b", "s"}
    data = c.join(np.asarray(m.asimov()) + 1.0, np.asarray(line_model(2.0).asimov()))
    pr = FitProblem.create(c, data)
    assert linear_mask(pr.model, pr.names) is not None
    x = pr.start() * 1.05
    fixed = jnp.zeros(0)
    v, g, h = value_grad_hessian(x, (pr, fixed))
    np.testing.assert_allclose(np.asarray(h), np.asarray(jax.hessian(objective)(x, (pr, fixed))), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jax.grad(objective)(x, (pr, fixed))), rtol=1e-10, atol=1e-10)


@pytest.mark.slow
def test_nuejax_combine_end_to_end(tmp_path):
    """``nuejax combine --json --no-eps --masses 0`` in a fresh process: the combined μ_ν limit is at least
    as strong as the stronger experiment's alone, and each experiment's is reported."""
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "nuejax", "combine", "--json", "--no-eps", "--masses", "0", "--no-plots", "--out",
                          str(tmp_path)], capture_output=True, text=True, timeout=3000)
    assert out.returncode == 0, out.stderr[-3000:]
    s = json.loads(out.stdout.strip().splitlines()[-1])
    for key in ("mu_nu_upper_90", "mu_nu_convention", "mu_nu_expected_90", "mediator_limits", "seconds",
                "per_experiment"):
        assert key in s
    alone = [d["mu_nu_upper_90"] for d in s["per_experiment"].values()]
    assert set(s["per_experiment"]) == {"borexino", "xenonnt"} and all(a is not None for a in alone)
    assert s["mu_nu_upper_90"] <= min(alone) * (1 + 1e-6)
    # the mediator curves (--masses 0: skipped here for CI's time; docs/combination.md has a full run)
    assert s["mediator_limits"] is None


@pytest.mark.slow
def test_combine_models_fitted_beside_each_other_give_the_same_summary(tmp_path, monkeypatch):
    """The accelerators' path of run_combine (the μ_ν stage's three models fitted beside each other
    in threads, each_beside), forced on the CPU, gives the summary and the lines of the run in
    turn, number for number (--no-eps, no mediators: the μ_ν stage and the combination's
    asymptotic CLs)."""
    import json

    from nuejax._internal import ahead
    from nuejax.analyses import combine_run

    monkeypatch.setattr(ahead, "spare_cores", lambda: 4)
    monkeypatch.setenv("NUEJAX_AHEAD", "1")
    runs = {}
    for label, on_cpu in (("in_turn", False), ("beside", True)):
        monkeypatch.setattr(combine_run, "BESIDE_ON_CPU", on_cpu)
        lines = []
        s = combine_run.run_combine(tmp_path / label, eps=False, masses=[], plots=False, progress=lines.append)
        runs[label] = ({k: v for k, v in s.items() if "seconds" not in k}, lines)
    def stages(lines):  # from the μ_ν stage on (the models' lines say built or loaded from the cache)
        return lines[next(i for i, line in enumerate(lines) if line.startswith("[2/5]")):]

    assert stages(runs["beside"][1]) == stages(runs["in_turn"][1])
    assert any("combined: mu_nu <" in line for line in runs["beside"][1])
    assert json.dumps(runs["beside"][0], sort_keys=True) == json.dumps(runs["in_turn"][0], sort_keys=True)
    assert runs["in_turn"][0]["mu_nu_upper_90"] is not None and len(runs["in_turn"][0]["per_experiment"]) == 2


def _fake_combine_stages(monkeypatch, combine_run, calls, mu_fails=False, lines=None, warmed=None):
    """run_combine's stages replaced by cheap ones that record how they were called: the
    orchestration (beside or in turn, merging, lines, warning filters) is what is tested. The
    warm-ups of the later stages' programs are one slow warm-up that records its thread in
    ``warmed`` (started by ahead.warm_ups, as the real ones)."""
    import threading
    import time
    import warnings

    class Saved:
        def __init__(self, tag):
            self.tag = tag

        def save(self, path):
            path.write_text(self.tag)

    names = ("borexino", "xenonnt", "combined")

    def models(say, on_calibration=None):
        say("[1/5] models")
        if on_calibration is not None:
            on_calibration("calibration")
        return {n: n for n in names}, {n: n for n in names}, "calibration"

    def mediator_models(calibration, say, in_turn):
        time.sleep(0.1)
        calls.append(("med_models", in_turn, threading.current_thread().name, calibration))
        return {"borexino": "borexino_med", "xenonnt": "xenonnt_med"}

    def mu_nu(models, data, say):
        if mu_fails:
            raise RuntimeError("the mu_nu stage failed")
        say("[2/5] mu_nu")
        time.sleep(0.2)
        return ({n: {"mu_nu_upper_90": 1.0 + i, "fit_valid": True} for i, n in enumerate(names)},
                {n: Saved(n) for n in names}, 0.5)

    def eps(models, data, eps, say, in_turn):
        with warnings.catch_warnings():  # a stage's own filter, as around fit's MINUIT set-up
            warnings.simplefilter("ignore", UserWarning)
            time.sleep(0.3)
        say("[3/5] eps")
        # in turn the line reaches the caller's progress at once; beside, only after the stage
        calls.append(("eps", in_turn, threading.current_thread().name, lines is not None and "[3/5] eps" in lines))
        return {n: Saved(n) for n in names}, {n: {"eps_region_90_points": 3} for n in names}

    def med(data, masses, calibration, say, in_turn, early=None):
        time.sleep(0.3)
        # the mediator models' builds started in stage 1 (beside), else none
        calls.append(("med", in_turn, threading.current_thread().name, None if early is None else early[0].result()))
        say("[4/5] mediators")
        return {n: {"scalar": [n]} for n in names}

    def warm_ups(models, data, eps, masses, early):
        def warm():
            time.sleep(0.8)  # longer than the stages: run_combine waits for it
            (warmed if warmed is not None else []).append((threading.current_thread().name, early is not None))

        return combine_run.warm_ups([(warm, ())], min_spare=combine_run.BESIDE_MIN_SPARE)

    for name, fn in (("_models", models), ("_mu_nu", mu_nu), ("_eps_regions", eps), ("_mediator_curves", med),
                     ("_mediator_models", mediator_models), ("_warm_ups", warm_ups)):
        monkeypatch.setattr(combine_run, name, fn)


def test_combine_stages_beside_give_the_summary_and_lines_in_turn(tmp_path, monkeypatch):
    """run_combine with its ε and mediator stages beside the μ_ν stage (allowed on the CPU for
    the test) gives the summary and the progress lines of the run in turn, in the stages' order;
    the stages run in threads and are told so (no jax.clear_caches beside), the caller's warning
    filters come back; on a CPU they run in turn unless allowed, their lines said as they come."""
    import json
    import threading
    import warnings

    from nuejax._internal import ahead
    from nuejax.analyses import combine_run

    monkeypatch.setattr(ahead, "spare_cores", lambda: 4)
    filters = list(warnings.filters)
    runs = {}
    for label, env, on_cpu in (("in_turn", "0", True), ("cpu", "1", False), ("beside", "1", True)):
        monkeypatch.setenv("NUEJAX_AHEAD", env)
        monkeypatch.setattr(combine_run, "BESIDE_ON_CPU", on_cpu)
        calls, lines, warmed = [], [], []
        _fake_combine_stages(monkeypatch, combine_run, calls, lines=lines, warmed=warmed)
        s = combine_run.run_combine(tmp_path / label, plots=False, progress=lines.append)
        files = {f.name: f.read_text() for f in (tmp_path / label).glob("*_scan_*.json")}
        runs[label] = ({k: v for k, v in s.items() if "seconds" not in k}, lines, calls, files)
        assert list(warnings.filters) == filters
        # the later stages' programs warm up where the stages run beside, given the mediator
        # models' early builds, and end before run_combine returns (its 0.8 s)
        assert warmed == ([] if label != "beside" else [(warmed[0][0], True)]), (label, warmed)
        assert label != "beside" or warmed[0][0].startswith("nuejax-warm-ups")
    main = threading.current_thread().name
    assert [(k, t) for k, t, _, _ in runs["in_turn"][2]] == [("eps", True), ("med", True)]
    assert all(n == main for _, _, n, _ in runs["in_turn"][2]) and runs["cpu"][2] == runs["in_turn"][2]
    assert runs["in_turn"][2][1][3] is None  # in turn the stage builds its mediator models itself
    # beside, the mediator models' builds start on the calibration, in stage 1, and the stage takes them
    assert sorted((k, t) for k, t, _, _ in runs["beside"][2]) == [("eps", False), ("med", False),
                                                                    ("med_models", False)]
    assert all(n != main for _, _, n, _ in runs["beside"][2])
    med = {k: x for k, _, _, x in runs["beside"][2]}
    assert med["med_models"] == "calibration" and med["med"] == {"borexino": "borexino_med", "xenonnt": "xenonnt_med"}
    live = {label: [x for k, _, _, x in runs[label][2] if k == "eps"] for label in runs}
    assert live == {"in_turn": [True], "cpu": [True], "beside": [False]}
    ref = runs["in_turn"]
    assert ref[1] == ["[1/5] models", "[2/5] mu_nu", "[3/5] eps", "[4/5] mediators", "[5/5] summary and figures"]
    assert ref[0]["combined"] == {"mu_nu_upper_90": 3.0, "fit_valid": True, "eps_region_90_points": 3,
                                  "mediator_limits": {"scalar": ["combined"]}}
    assert len(ref[3]) == 6
    for label in ("cpu", "beside"):
        assert runs[label][1] == ref[1] and runs[label][3] == ref[3]
        assert json.dumps(runs[label][0], sort_keys=True) == json.dumps(ref[0], sort_keys=True)


def test_combine_stages_in_turn_wait_for_the_early_mediator_builds(tmp_path, monkeypatch):
    """Where the mediator models' builds started in stage 1 but the stages run in turn (the two
    decided apart; forced here), a stage starts, and drops the compiled programs, only once the
    builds have ended."""
    import threading
    import time

    from nuejax._internal import ahead
    from nuejax.analyses import _clock, combine_run

    monkeypatch.setattr(ahead, "spare_cores", lambda: 4)
    monkeypatch.setenv("NUEJAX_AHEAD", "1")
    monkeypatch.setattr(combine_run, "BESIDE_ON_CPU", True)
    calls, events = [], []
    _fake_combine_stages(monkeypatch, combine_run, calls)

    def slow_builds(calibration, say, in_turn):
        time.sleep(0.5)
        events.append(("built", time.perf_counter(), threading.current_thread().name))
        return {"borexino": "b", "xenonnt": "x"}

    def eps(models, data, eps, say, in_turn):
        events.append(("eps", time.perf_counter(), in_turn))
        return {}, {}

    monkeypatch.setattr(combine_run, "_mediator_models", slow_builds)
    monkeypatch.setattr(combine_run, "_eps_regions", eps)
    in_turn = lambda *a, **k: _clock.with_stages_beside(*a, **{**k, "allowed": False})  # noqa: E731
    monkeypatch.setattr(combine_run, "with_stages_beside", in_turn)
    combine_run.run_combine(tmp_path, plots=False)
    (what, t_built, thread), (what2, t_eps, told) = events
    assert (what, what2, told) == ("built", "eps", True) and thread != threading.current_thread().name
    assert t_eps >= t_built


def test_the_mediator_stage_takes_the_early_builds(monkeypatch):
    """_mediator_curves with builds started in stage 1 (a future and its branch) fits the curves
    of those models, builds none itself, and says the builds' lines in the stage; without them it
    builds the models itself."""
    from concurrent.futures import Future

    from nuejax.analyses import combine_run
    from nuejax.analyses._clock import StageClock

    built, fitted = [], []
    monkeypatch.setattr(combine_run, "_mediator_models", lambda calibration, say, in_turn: (
        built.append(calibration), {"borexino": "bx", "xenonnt": "xe"})[1])
    monkeypatch.setattr(combine_run, "combine", lambda a, b, labels, shared: f"{a}+{b}")
    monkeypatch.setattr(combine_run, "mediator_curves", lambda m, data, masses, say, **kw: (
        fitted.append(m), say(f"      curves of {m}"), {"scalar": m})[2])
    say = StageClock()
    branch = say.branch()
    branch("      built early")
    future = Future()
    future.set_result({"borexino": "bx_early", "xenonnt": "xe_early"})
    data = {"borexino": 0, "xenonnt": 1, "combined": 2}
    out = combine_run._mediator_curves(data, np.array([1.0]), "calibration", say, True, (future, branch))
    assert built == [] and sorted(fitted) == ["bx_early", "bx_early+xe_early", "xe_early"]
    assert out["combined"] == {"scalar": "bx_early+xe_early"}
    said = [msg for _, msg in say.lines]
    assert said[0].startswith("[4/5]") and said[1] == "      built early"
    fitted.clear()
    out = combine_run._mediator_curves(data, np.array([1.0]), "calibration", StageClock(), True)
    assert built == ["calibration"] and out["xenonnt"] == {"scalar": "xe"}


def test_combine_stages_beside_end_before_an_error_leaves(tmp_path, monkeypatch):
    """Where the μ_ν stage raises while the ε and mediator stages run beside it, run_combine waits
    for them before it leaves: the error is the μ_ν stage's, both stages (and the mediator models'
    builds started in stage 1) ended, the caller's warning filters are back; where stage 1 raises
    after those builds started, they end before the error leaves."""
    import warnings

    from nuejax._internal import ahead
    from nuejax.analyses import combine_run

    monkeypatch.setattr(ahead, "spare_cores", lambda: 4)
    monkeypatch.setenv("NUEJAX_AHEAD", "1")
    monkeypatch.setattr(combine_run, "BESIDE_ON_CPU", True)
    calls = []
    _fake_combine_stages(monkeypatch, combine_run, calls, mu_fails=True)
    filters = list(warnings.filters)
    with pytest.raises(RuntimeError, match="mu_nu stage failed"):
        combine_run.run_combine(tmp_path, plots=False)
    assert sorted(k for k, *_ in calls) == ["eps", "med", "med_models"]
    assert list(warnings.filters) == filters

    def models_fail(say, on_calibration=None):
        on_calibration("calibration")
        raise RuntimeError("stage 1 failed")

    calls.clear()
    monkeypatch.setattr(combine_run, "_models", models_fail)
    with pytest.raises(RuntimeError, match="stage 1 failed"):
        combine_run.run_combine(tmp_path, plots=False)
    assert [k for k, *_ in calls] == ["med_models"]  # its 0.1 s build ended before the error left


def _seeded_scan_case(shared):
    """Two line experiments (the same model, two data sets: one compiled fit program for both)
    combined with ``shared``, their own 2-D scans of (s, m), the combination's global fit, plain
    scan, seeds and lower bound."""
    from nuejax.inference import newton_fit, profile_scan_2d

    ma = mb = line_model(1.0)
    da = np.asarray(ma.pseudo_data(jax.random.PRNGKey(1), ma.parameters.defaults()))
    db = np.asarray(mb.pseudo_data(jax.random.PRNGKey(2), mb.parameters.defaults()))
    xs, ys = np.linspace(10.0, 60.0, 4), np.linspace(3.0, 5.0, 3)
    names = ("s", "m")
    parts = {}
    for lab, m, d in (("a", ma, da), ("b", mb, db)):
        parts[lab] = profile_scan_2d(m, d, names, xs, ys, global_fit=newton_fit(m, d, one_sided=False))
        assert parts[lab].profiled == ("b",) and parts[lab].profiled_values.shape == (4, 3, 1)
    c = combine(ma, mb, labels=("a", "b"), shared=shared)
    dc = c.join(da, db)
    g = newton_fit(c, dc, one_sided=False)
    plain = profile_scan_2d(c, dc, names, xs, ys, global_fit=g)
    seeds = c.joined_values(plain.profiled, {k: (p.profiled, p.profiled_values.reshape(-1, 1))
                                             for k, p in parts.items()})
    scan = lambda **kw: profile_scan_2d(c, dc, names, xs, ys, global_fit=g, **kw)  # noqa: E731
    return scan, plain, seeds.reshape(4, 3, 2, -1), parts["a"].nll + parts["b"].nll, c, parts


def test_a_combined_scan_from_the_experiments_end_points_equals_the_full_scan():
    """profile_scan_2d with seeds and a lower bound (nuejax.inference.scan): where the experiments
    share only the scanned parameters, the sum of their profiles is the combination's, so a fit
    from their end points settles every point at the bound; a wrong bound settles none, and the
    points run the full procedure. Each time the scan equals the one without seeds; its end
    points and counts survive a save."""
    from nuejax.inference.results import Scan2DResult

    scan, plain, seeds, bound, c, parts = _seeded_scan_case(("s", "m"))
    for low, want in ((bound, 12), (bound - 1.0, 0)):
        s2 = scan(seeds=seeds, lower_bound=low)
        np.testing.assert_allclose(s2.nll, plain.nll, rtol=0, atol=1e-6)
        assert np.all(s2.converged) and s2.certified == want
        back = Scan2DResult.from_dict(s2.to_dict())
        np.testing.assert_array_equal(back.profiled_values, s2.profiled_values)
        assert back.certified == s2.certified
    with pytest.raises(ParameterError, match="seeds and lower_bound go together"):
        scan(seeds=seeds)
    with pytest.raises(ParameterError, match="seeds must be"):
        scan(seeds=seeds[0], lower_bound=bound)
    with pytest.raises(ParameterError, match="no values of"):
        c.joined_values(plain.profiled, {"a": (parts["a"].profiled, np.zeros((12, 1)))})


@pytest.mark.slow
def test_a_combined_scan_sharing_a_profiled_parameter_runs_the_unsettled_points_in_full():
    """The background b shared as well: each seed holds one experiment's own b, so the fits from
    them rarely reach the bound; the points they do not settle run the full procedure, and the
    scan equals the one without seeds."""
    scan, plain, seeds, bound, _, _ = _seeded_scan_case(("s", "m", "b"))
    s2 = scan(seeds=seeds, lower_bound=bound)
    np.testing.assert_allclose(s2.nll, plain.nll, rtol=0, atol=1e-6)
    assert np.all(s2.converged) and 0 <= s2.certified < 12
