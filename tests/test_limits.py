"""Neyman constructions from toys: Feldman–Cousins against the textbook Gaussian case, CLs
against its closed form, coverage, the same numbers on 1 and 4 devices, resume after a kill,
two processes merged. Small models (tests/limits_models.py) so that each compiles in seconds."""
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest
from scipy.stats import norm

from nuejax.errors import InputError, ParameterError
from nuejax.inference import (CLsResult, CoverageResult, FeldmanCousinsResult, cls_upper_limit, coverage,
                              feldman_cousins, load_run, merge_runs)
from nuejax.inference.runner import RunStore
from nuejax.inference.toys import resample_flags, toy
from nuejax.model.constraints import HalfGaussianConstraint

sys.path.insert(0, str(Path(__file__).parent))
from fc_reference import FC_TABLE_90, fc_critical_value, fc_statistic  # noqa: E402
from limits_models import CountingModel, gaussian_counts, gaussian_model  # noqa: E402
import limits_run  # noqa: E402

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def gauss_fc():
    """x0 = 1.7 (table: [0.38, 3.34]) with grid points bracketing both ends."""
    m = gaussian_model()
    grid = np.array([0.0, 0.3, 0.4, 3.3, 3.4])
    return m, feldman_cousins(m, gaussian_counts(m, 1.7), "mu", grid, 20000, key=3)


@pytest.mark.slow
def test_fc_gaussian_critical_values_match_closed_form(gauss_fc):
    _, r = gauss_fc
    assert np.all(r.n_valid == r.n_toys)
    exact = np.array([fc_critical_value(x) for x in r.axes[0]])
    pull = (r.t_crit - exact) / r.t_crit_err
    assert np.all(np.abs(pull) < 3.5), pull
    # the observed statistic is the closed form (x0 - mu)^2 - (x0 - max(0, x0))^2, up to the Poisson
    # count's departure from a Gaussian of fixed width (relative 1e-3 per sigma of mu)
    np.testing.assert_allclose(r.t_obs, [fc_statistic(1.7, x) for x in r.axes[0]], rtol=5e-3, atol=1e-6)


def test_fc_gaussian_interval_matches_table(gauss_fc):
    _, r = gauss_fc
    lo, hi = r.interval
    tab = FC_TABLE_90[1.7]
    # tolerance: the table's rounding (0.005) plus 3 sigma of the toys, propagated through the slope of t_obs - t_c
    slope = np.abs(np.gradient(r.t_obs - r.t_crit, r.axes[0]))
    for end, ref, k in ((lo, tab[0], 1), (hi, tab[1], 3)):
        tol = 0.005 + 3 * r.t_crit_err[k] / slope[k]
        assert abs(end - ref) < tol, (end, ref, tol)
    assert r.regions == [(lo, hi)]


def test_cheap_toys_run_side_by_side_with_the_same_numbers(monkeypatch):
    """On the CPU the one-bin Gaussian model's toy fits are too cheap to run one after another
    (``costly_toys``): they go in launches of ``CPU_CHEAP_CHUNK`` rows (fewer per start of a
    design), and the belt equals the one in launches of 128 rows (``chunk=128``), number for number."""
    from nuejax.inference import runner
    from nuejax.inference.construction import construction
    from nuejax.inference.fitting import CPU_CHEAP_CHUNK
    from nuejax.inference.toys import costly_toys

    m = gaussian_model()
    data = gaussian_counts(m, 1.7)
    pr = construction(m, data, "mu", None, {"mu": 1.0})
    assert not costly_toys(pr.full, pr.resample, 1)
    seen = []
    launch = runner._launch
    monkeypatch.setattr(runner, "_launch", lambda kernel, rows, mesh, per: (seen.append(per), launch(kernel, rows, mesh, per))[1])
    grid = np.array([0.0, 0.4, 1.7, 3.3])
    a = feldman_cousins(m, data, "mu", grid, 500, key=3)
    n_side = list(seen)
    b = feldman_cousins(m, data, "mu", grid, 500, key=3, chunk=128)
    print("rows per launch:", n_side, seen[len(n_side):])
    if jax.default_backend() == "cpu":
        assert n_side and all(128 < n <= CPU_CHEAP_CHUNK for n in n_side), n_side
    assert all(n <= 128 for n in seen[len(n_side):])
    np.testing.assert_array_equal(a.t_crit, b.t_crit)
    np.testing.assert_array_equal(a.t_obs, b.t_obs)
    assert a.interval == b.interval


def test_cls_asymptotic_and_toys_match_gaussian_closed_form():
    # x0 = 0: q~ = q_A = mu^2, CLs = 2 (1 - Phi(mu)) = 0.1 at mu = Phi^-1(0.95)
    m = gaussian_model()
    data = gaussian_counts(m, 0.0)
    values = np.linspace(0.1, 3.0, 30)
    a = cls_upper_limit(m, data, "mu", values, cl=0.9)
    assert a.method == "asymptotic"
    assert a.limit == pytest.approx(norm.ppf(0.95), abs=2e-3)
    assert a.expected["0"] == pytest.approx(norm.ppf(0.95), abs=2e-3)
    assert a.expected["-1"] < a.expected["0"] < a.expected["1"]
    t = cls_upper_limit(m, data, "mu", np.linspace(1.2, 2.2, 6), cl=0.9, n_toys=2000, key=2)
    assert t.method == "toys" and t.n_toys == 2000
    assert t.limit == pytest.approx(norm.ppf(0.95), abs=0.08)
    back = CLsResult.from_dict(json.loads(json.dumps(t.to_dict(), allow_nan=False)))
    assert back.limit == t.limit and np.allclose(back.cls, t.cls, equal_nan=True)
    with pytest.raises(ParameterError, match="> 0"):
        cls_upper_limit(m, data, "mu", [0.0, 1.0])


def test_cls_with_feldman_cousins_from_the_same_toys(tmp_path):
    """``cls_upper_limit(..., feldman_cousins=True)`` on the Gaussian mean bounded at 0 (x0 = 1.7):
    its CLs part is the plain run's, number for number (the added rows come last); its
    Feldman-Cousins part has the stand-alone construction's observed statistic, critical values
    that agree with the closed form, and the table's interval; both survive JSON and a stored run."""
    m = gaussian_model()
    data = gaussian_counts(m, 1.7)
    values = np.array([0.3, 0.4, 3.3, 3.4])
    n = 4000
    both = cls_upper_limit(m, data, "mu", values, n_toys=n, key=3, feldman_cousins=True, out=tmp_path / "run")
    plain = cls_upper_limit(m, data, "mu", values, n_toys=n, key=3)
    assert plain.feldman_cousins is None
    for k in ("q_obs", "clsb", "clb", "cls"):
        np.testing.assert_array_equal(getattr(both, k), getattr(plain, k), err_msg=k)
    assert (both.limit, both.expected, both.limit_sb, both.expected_sb) == \
        (plain.limit, plain.expected, plain.limit_sb, plain.expected_sb)
    fc = both.feldman_cousins
    assert isinstance(fc, FeldmanCousinsResult) and fc.n_toys == n and np.all(fc.n_valid == n)
    np.testing.assert_array_equal(fc.axes[0], np.concatenate([[0.0], values]))
    alone = feldman_cousins(m, data, "mu", fc.axes[0], 200, key=5)
    np.testing.assert_array_equal(fc.t_obs, alone.t_obs)  # two-sided: not q~ (0 above the best fit)
    assert fc.t_obs[-1] > 0 and both.q_obs[0] == 0.0
    exact = np.array([fc_critical_value(x) for x in fc.axes[0]])
    pull = (fc.t_crit - exact) / fc.t_crit_err
    assert np.all(np.abs(pull) < 3.5), pull
    lo, hi = fc.interval
    tab = FC_TABLE_90[1.7]
    slope = np.abs(np.gradient(fc.t_obs - fc.t_crit, fc.axes[0]))
    for end, ref, k in ((lo, tab[0], 1), (hi, tab[1], 3)):
        assert abs(end - ref) < 0.005 + 3 * fc.t_crit_err[k] / slope[k], (end, ref)
    back = CLsResult.from_dict(json.loads(json.dumps(both.to_dict(), allow_nan=False)))
    np.testing.assert_array_equal(back.feldman_cousins.t_crit, fc.t_crit)
    assert back.feldman_cousins.interval == fc.interval
    stored = load_run(tmp_path / "run")
    np.testing.assert_array_equal(stored.feldman_cousins.t_crit, fc.t_crit)
    assert stored.limit == both.limit
    with pytest.raises(InputError, match="needs toys"):
        cls_upper_limit(m, data, "mu", values, feldman_cousins=True)


def test_merging_folders_of_two_versions_of_a_run_names_the_set_up_arrays(tmp_path):
    """merge_runs refuses slices whose set-ups hold different arrays (two versions of the package
    ran them) and names the array, instead of failing on a missing key."""
    m = gaussian_model()
    data = gaussian_counts(m, 1.7)
    grid = np.array([0.0, 1.0, 2.0])
    a, b = tmp_path / "a", tmp_path / "b"
    assert feldman_cousins(m, data, "mu", grid, 64, key=1, out=a, shard="0/2", chunk=64) is None
    assert feldman_cousins(m, data, "mu", grid, 64, key=1, out=b, shard="1/2", chunk=64) is None
    with np.load(b / "setup.npz") as z:
        kept = {k: z[k] for k in z.files if k != "branch_images"}
    np.savez(b / "setup.npz", **kept)
    with pytest.raises(InputError, match="branch_images"):
        merge_runs([a, b], tmp_path / "merged")
    with pytest.raises(InputError, match="branch_images"):
        merge_runs([b, a], tmp_path / "merged2")


@pytest.fixture(scope="module")
def mu_model():
    """A mu_nu-like signal (grows as mu^2) on 10 bins with a Gaussian-constrained background norm."""
    return CountingModel.create(np.full(10, 100.0), np.linspace(1.0, 10.0, 10), poi="mu_nu", power=2, sigma_b=0.05)


@pytest.mark.slow
def test_coverage_at_the_boundary(mu_model):
    c = coverage(mu_model, {"mu_nu": 0.0}, "mu_nu", 1500, key=4)
    print(c)
    assert c.n_valid == 1500
    assert abs(c.fraction - 0.9) < 2 * c.error, c
    back = CoverageResult.from_dict(json.loads(json.dumps(c.to_dict(), allow_nan=False)))
    assert back.fraction == c.fraction


@pytest.mark.slow
def test_coverage_away_from_zero(mu_model):
    c = coverage(mu_model, {"mu_nu": 1.5}, "mu_nu", 1500, key=5)
    print(c)
    assert c.n_valid == 1500
    assert abs(c.fraction - 0.9) < 2 * c.error, c


@pytest.mark.slow
def test_coverage_profile_construction_away_from_zero(mu_model):
    c = coverage(mu_model, {"mu_nu": 1.5}, "mu_nu", 1000, key=5, inner_toys=200)
    print(c)
    assert c.inner_toys == 200 and c.n_valid == 1000
    assert abs(c.fraction - 0.9) < 2 * c.error, c


@pytest.mark.slow
def test_coverage_keeps_each_toys_statistic_and_conditional_nuisances(mu_model):
    """Per toy: the statistic at the truth, its critical value and the conditional fit's
    nuisances (the inner toys' generating point), consistent with the count and saved to JSON."""
    from nuejax.inference.construction import ACCEPT_TOL

    c = coverage(mu_model, {"mu_nu": 1.5}, "mu_nu", 40, key=6, inner_toys=20)
    assert c.nuisances == ("norm_b",) and c.nuisance_hat.shape == (40, 1) and c.t.shape == (40,)
    assert int(np.sum(c.t <= c.t_crit + ACCEPT_TOL)) == c.n_covered
    # the conditional fits moved norm_b off its generating value, within a few of its 5 % widths
    assert np.all(np.abs(c.nuisance_hat[:, 0] - 1.0) < 0.25) and np.std(c.nuisance_hat[:, 0]) > 1e-3
    back = CoverageResult.from_dict(json.loads(json.dumps(c.to_dict(), allow_nan=False)))
    np.testing.assert_array_equal(back.nuisance_hat, c.nuisance_hat)
    np.testing.assert_array_equal(back.t, c.t)


def test_a_toys_global_fit_runs_once_for_all_its_rows(mu_model, monkeypatch):
    """toy_fits fits the global fit of a toy (generating point and index) once for the rows that
    share it (a CLs run's background-only toys, tested at every value, and at 0 for the
    Feldman-Cousins interval): the results are those of fitting it in every row, number for
    number; the rows it runs are one per distinct toy, padded with the first."""
    from nuejax.inference import toys

    take, back = toys._distinct_toys(np.array([[1.0], [2.0], [1.0], [1.0], [3.0]]), np.array([4, 4, 4, 5, 4]))
    np.testing.assert_array_equal(take, [0, 1, 3, 4, 0])
    np.testing.assert_array_equal(back, [0, 1, 0, 2, 3])
    assert toys._distinct_toys(np.zeros((3, 1)), np.arange(3)) is None
    data = np.asarray(mu_model.expected(mu_model.parameters.values({"mu_nu": 0.8}))).round()
    values = [0.5, 1.0, 1.5]
    once = cls_upper_limit(mu_model, data, "mu_nu", values, n_toys=40, key=7, feldman_cousins=True)
    monkeypatch.setattr(toys, "_distinct_toys", lambda gen_x, index: None)
    every = cls_upper_limit(mu_model, data, "mu_nu", values, n_toys=40, key=7, feldman_cousins=True)
    for k in ("q_obs", "clsb", "clb", "cls"):
        np.testing.assert_array_equal(getattr(once, k), getattr(every, k), err_msg=k)
    assert once.expected == every.expected and once.expected_sb == every.expected_sb
    np.testing.assert_array_equal(once.feldman_cousins.t_crit, every.feldman_cousins.t_crit)


def test_cls_row_layouts_old_and_by_toy():
    """Where a CLs run's rows are: the s+b toys value by value; the background-only toys value by
    value (a run stored before 9d54273) or toy by toy (tested at each value, then at 0 with
    feldman_cousins)."""
    from nuejax.inference.cls import _row_layout

    sb, b, zero = _row_layout({"n_toys": 2, "axes": [[0.1, 0.2, 0.3]]})
    np.testing.assert_array_equal(sb, [[0, 1], [2, 3], [4, 5]])
    np.testing.assert_array_equal(b, [[6, 7], [8, 9], [10, 11]])
    assert zero is None
    _, _, zero = _row_layout({"n_toys": 2, "axes": [[0.1, 0.2, 0.3]], "feldman_cousins": True})
    np.testing.assert_array_equal(zero, [12, 13])
    sb, b, zero = _row_layout({"n_toys": 2, "axes": [[0.1, 0.2, 0.3]], "feldman_cousins": True,
                               "background_rows": "by_toy"})
    np.testing.assert_array_equal(b, [[6, 10], [7, 11], [8, 12]])
    np.testing.assert_array_equal(zero, [9, 13])
    _, b, zero = _row_layout({"n_toys": 2, "axes": [[0.1, 0.2, 0.3]], "background_rows": "by_toy"})
    np.testing.assert_array_equal(b, [[6, 9], [7, 10], [8, 11]])
    assert zero is None


def test_toys_redraw_the_auxiliary_measurements(mu_model):
    """A toy is (counts, aux) from one key: the Gaussian constraint's measurement of norm_b is drawn
    about the generating value with its width; the same (key, index) gives the same toy."""
    flags = resample_flags(mu_model, ("mu_nu", "norm_b"))
    assert flags == (True,)
    key = jax.random.PRNGKey(0)
    centres = np.array([float(toy(mu_model, {"mu_nu": 0.5}, key, i, flags)[1][0][0]) for i in range(400)])
    assert abs(centres.mean() - 1.0) < 4 * 0.05 / 20 and abs(centres.std() - 0.05) < 0.01
    a, b = toy(mu_model, {"mu_nu": 0.5}, key, 7, flags), toy(mu_model, {"mu_nu": 0.5}, key, 7, flags)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1][0], b[1][0])
    kept = resample_flags(mu_model, ("mu_nu", "norm_b"), resample_aux=False)
    assert kept == (False,) and float(toy(mu_model, {"mu_nu": 0.5}, key, 7, kept)[1][0][0]) == 1.0
    # a term on a parameter that is not fitted keeps its measurement
    assert resample_flags(mu_model, ("mu_nu",)) == (False,)


def test_unresamplable_constraint_is_refused(mu_model):
    m = dataclasses.replace(mu_model, constraints=(HalfGaussianConstraint.create("norm_b", 1.2, 0.1),))
    with pytest.raises(InputError, match="half-Gaussian.*resample_aux=False"):
        resample_flags(m, ("norm_b",))


def test_constraint_terms_take_their_measurements_as_data(mu_model):
    """-2 ln L's constraint part with auxiliary measurements passed as data: the Gaussian (from the
    parameter's constraint) and a log-normal term in closed form, +inf (not NaN) where the
    log-normal's parameter is not positive."""
    from nuejax.model.constraints import LogNormalConstraint

    m = dataclasses.replace(mu_model, constraints=(LogNormalConstraint.create("norm_b", 1.0, 0.1),))
    terms = m.constraint_terms()
    assert [type(t).__name__ for t in terms] == ["GaussianConstraint", "LogNormalConstraint"]
    aux = tuple(np.asarray(a) * 1.1 for a in m.aux())
    assert np.isinf(float(terms[1]({"norm_b": -1.0}, aux[1])))
    want = ((1.05 - 1.1) / 0.05) ** 2 + ((np.log(1.05) - np.log(1.1)) / 0.1) ** 2
    assert float(m.constraint_nll({"norm_b": 1.05}, aux)) == pytest.approx(want, rel=1e-12)
    nominal = ((1.05 - 1.0) / 0.05) ** 2 + (np.log(1.05) / 0.1) ** 2
    assert float(m.constraint_nll({"norm_b": 1.05})) == pytest.approx(nominal, rel=1e-12)
    p = m.parameters.values(mu_nu=0.4, norm_b=1.05)
    data = np.asarray(m.expected(p))
    assert float(m.nll(p, data, aux)) - float(m.nll(p, data)) == pytest.approx(want - nominal, rel=1e-10)


def test_fc_input_errors(mu_model, tmp_path):
    data = np.asarray(mu_model.expected({"mu_nu": 0.0, "norm_b": 1.0}))
    with pytest.raises(ParameterError, match="mu_nv"):
        feldman_cousins(mu_model, data, "mu_nv", [0.0, 1.0], 10)
    with pytest.raises(InputError, match="n_toys"):
        feldman_cousins(mu_model, data, "mu_nu", [0.0, 1.0], 0)
    with pytest.raises(ParameterError, match="increasing"):
        feldman_cousins(mu_model, data, "mu_nu", [1.0, 0.0], 10)
    with pytest.raises(InputError, match="shard"):
        feldman_cousins(mu_model, data, "mu_nu", [0.0, 1.0], 8, shard="2/2")
    RunStore(tmp_path / "run", {"n_toys": 8}, resume=False).setup(lambda: {"a": np.zeros(2)})
    with pytest.raises(InputError, match="resume"):
        RunStore(tmp_path / "run", {"n_toys": 8}, resume=False)
    with pytest.raises(InputError, match="n_toys: stored 8, now 9"):
        RunStore(tmp_path / "run", {"n_toys": 9}, resume=True)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not a nuejax run folder"):
        RunStore(tmp_path / "other", {"n_toys": 8}, resume=True)


@pytest.mark.slow
def test_fc_2d_and_json_round_trip(tmp_path):
    m = CountingModel.create(np.full(8, 100.0), np.linspace(1.0, 8.0, 8), poi="mu", sigma_b=0.0, poi_range=(-5, 5))
    m = m.__class__(m.b, m.s, m.parameters, 1)
    # a second parameter of interest: the background normalisation, released
    m = dataclasses.replace(m, parameters=m.parameters.release("norm_b"))
    data = np.asarray(m.expected({"mu": 1.0, "norm_b": 1.0})).round()
    r = feldman_cousins(m, data, ("mu", "norm_b"), (np.linspace(0.0, 2.0, 5), np.linspace(0.9, 1.1, 4)), 200, key=1)
    assert r.accepted_grid.shape == (5, 4)
    assert r.accepted_grid.any() and not r.accepted_grid.all()
    path = r.save(tmp_path / "fc2d.json")
    back = FeldmanCousinsResult.load(path)
    assert np.array_equal(back.accepted, r.accepted) and np.allclose(back.t_crit, r.t_crit)


def _run_script(args, env=None, **kw):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.Popen([sys.executable, str(HERE / "limits_run.py"), *args], env=e, **kw)


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    """The uninterrupted run on this process's one device, stored (its chunks are compared too)."""
    out = tmp_path_factory.mktemp("reference") / "run"
    return limits_run.run(out), out


def _chunks(folder):
    return sorted((folder / "chunks").glob("chunk_*.npz"))


@pytest.mark.slow
def test_four_devices_and_two_processes_merge(reference_run, tmp_path):
    """Two processes, one on 4 (forced host) devices and one on 1, each take half the chunks;
    every chunk of the 4-device process equals the 1-device reference's, and the merged run is
    the reference run."""
    ref, ref_dir = reference_run
    a, b, info = tmp_path / "a", tmp_path / "b", tmp_path / "a.json"
    procs = [_run_script([str(a), "--shard", "0/2", "--json", str(info)],
                         env={"XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=4",
                              "JAX_PLATFORMS": "cpu"}),
             _run_script([str(b), "--shard", "1/2"])]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    d = json.loads(info.read_text())
    assert d["devices"] == 4 and d["result"] is None  # a slice alone has no result
    assert len(jax.devices()) == 1
    assert len(_chunks(a)) == 2 and len(_chunks(b)) == 1  # chunks 0, 2 and chunk 1 of 3
    for f in _chunks(a):
        with np.load(f) as got, np.load(ref_dir / "chunks" / f.name) as want:
            for k in want.files:
                np.testing.assert_allclose(got[k], want[k], rtol=1e-12, atol=1e-12, err_msg=f"{f.name}: {k}")
    with pytest.raises(InputError, match="missing"):
        load_run(a)
    r = load_run(merge_runs([a, b], tmp_path / "merged"))
    np.testing.assert_allclose(r.t_crit, ref.t_crit, rtol=1e-12)
    np.testing.assert_array_equal(r.accepted, ref.accepted)
    np.testing.assert_allclose(np.asarray(r.regions), np.asarray(ref.regions), rtol=1e-12)


@pytest.mark.slow
def test_shards_share_one_folder(reference_run, tmp_path):
    ref, _ = reference_run
    out = tmp_path / "shared"
    assert limits_run.run(out, shard="0/2") is None  # the other slice is not on disk yet
    r = limits_run.run(out, shard="1/2")
    np.testing.assert_array_equal(r.t_crit, ref.t_crit)


@pytest.mark.slow
def test_resume_after_kill_gives_the_uninterrupted_result(reference_run, tmp_path):
    ref, _ = reference_run
    out = tmp_path / "run"
    # 384 rows in 3 chunks of 128, with a pause after each: kill once one is on disk
    p = _run_script([str(out), "--resume"], env={"LIMITS_RUN_CHUNK_PAUSE": "2"}, stderr=subprocess.DEVNULL)
    t0 = time.time()
    while time.time() - t0 < 240 and p.poll() is None:
        if (out / "chunks").exists() and len(_chunks(out)) >= 1:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    n_before = len(_chunks(out))
    assert 1 <= n_before < 3, f"kill came too late or too early: {n_before} chunks on disk"
    stamps = {f.name: f.stat().st_mtime_ns for f in _chunks(out)}
    resumed = limits_run.run(out, resume=True)
    assert all((out / "chunks" / n).stat().st_mtime_ns == s for n, s in stamps.items())  # not recomputed
    assert len(_chunks(out)) == 3
    np.testing.assert_array_equal(resumed.t_crit, ref.t_crit)
    np.testing.assert_array_equal(resumed.p_values, ref.p_values)
    np.testing.assert_array_equal(load_run(out).t_crit, ref.t_crit)


def test_poisson_draw_is_poisson_at_large_means():
    """jax.random.poisson's variance is off at large means (benchmarks/accuracy/poisson_sampler.py); the
    split draws are not: variance/mean within 4 standard errors of 1, mean within 4 too."""
    from nuejax.model.likelihood import POISSON_PART_MAX, poisson_draw, poisson_parts

    n = 50_000
    for lam in (6.5e5,):  # jax.random.poisson: variance/mean 0.945 here
        parts = poisson_parts(lam)
        assert lam / parts <= POISSON_PART_MAX
        x = np.asarray(poisson_draw(jax.random.PRNGKey(2), np.full(n, lam), parts=parts))
        assert abs(x.var() / lam - 1) < 4 * np.sqrt(2 / n), x.var() / lam
        assert abs(x.mean() - lam) < 4 * np.sqrt(lam / n)


@pytest.mark.slow
@pytest.mark.parametrize("truth", [0.0, 2.0])
def test_coverage_of_mu_nu_on_the_borexino_like_model(small_model, truth):
    """The μ_ν interval of the (small) default model's fast path, flux constraints resampled."""
    from nuejax.model.fast import fast_model

    fm = fast_model(small_model.with_parameters(small_model.parameters.release("mu_nu")))
    c = coverage(fm, {"mu_nu": truth}, "mu_nu", 600, key=7)
    print(c)
    assert c.n_valid >= 590
    assert abs(c.fraction - 0.9) < 2 * c.error, c


def test_results_plot(gauss_fc, tmp_path):
    import matplotlib

    _, r = gauss_fc
    from nuejax.plotting import plot_feldman_cousins

    assert plot_feldman_cousins(r, path=tmp_path / "fc.png") is not None and (tmp_path / "fc.png").stat().st_size > 0
    covs = [CoverageResult(("mu_nu",), {"mu_nu": v}, 100, 100, 90, 0.9, 0.03, 0.9, 0, np.array([2.7]))
            for v in (0.0, 1.0)]
    from nuejax.plotting import plot_coverage

    ax = plot_coverage(covs)
    assert len(ax.lines) >= 1
    matplotlib.pyplot.close("all")
    two_d = dataclasses.replace(r, poi=("mu", "norm_b"), axes=(r.axes[0], np.array([0.9, 1.1])),
                                points=np.array([[a, b] for a in r.axes[0] for b in (0.9, 1.1)]),
                                t_obs=np.repeat(r.t_obs, 2), t_crit=np.repeat(r.t_crit, 2),
                                accepted=np.repeat(r.accepted, 2), best_fit=(1.7, 1.0))
    plot_feldman_cousins(two_d, path=tmp_path / "fc2.png")
    assert (tmp_path / "fc2.png").stat().st_size > 0


def test_limits_data_file_is_checked(tmp_path):
    from nuejax.analyses.limits import read_counts
    from nuejax.errors import DataError

    (tmp_path / "ok.txt").write_text("# counts\n1 2 3\n4\n")
    assert read_counts(tmp_path / "ok.txt", 4).tolist() == [1, 2, 3, 4]
    np.save(tmp_path / "ok.npy", np.array([5.0, 6.0]))
    assert read_counts(tmp_path / "ok.npy", 2).tolist() == [5, 6]
    with pytest.raises(DataError, match="ok.txt.*4 bins.*5"):
        read_counts(tmp_path / "ok.txt", 5)
    (tmp_path / "neg.csv").write_text("1,-2,3")
    with pytest.raises(DataError, match="neg.csv"):
        read_counts(tmp_path / "neg.csv", 3)
    with pytest.raises(DataError, match="no such file"):
        read_counts(tmp_path / "missing.txt", 3)
