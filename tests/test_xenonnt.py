"""The XENONnT SR0 analysis: the fast mediator signals equal the general evaluation; the unbinned
SR0 model agrees with the binned one; ``nuejax xenonnt`` end to end (slow)."""

import json
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.model.xenon import xenon_model

EDGES = np.arange(1.0, 31.0, 1.0)


@pytest.fixture(scope="module")
def mediator_models():
    general = xenon_model(EDGES, 1.16, mediators=("zprime", "phi"))
    fast = xenon_model(EDGES, 1.16, mediators=("zprime", "phi"), fast_mediators=True)
    return general, fast


def _mediator_data(fast, seed: int):
    """Poisson data of 200 times the exposure's counts (scaled back) at a vector mediator of
    coupling product 0.3 and mass 0.3 MeV: the profile scans' tests' data."""
    truth = fast.parameters.values(zprime_coupling=0.3, zprime_mass=0.3)
    return np.random.default_rng(seed).poisson(np.asarray(fast.expected(truth)) * 200.0) / 200.0


@pytest.mark.parametrize("point", [dict(zprime_coupling=2.0, zprime_mass=0.05),
                                   dict(zprime_coupling=-40.0, zprime_mass=3.0, mu_nu=0.4),
                                   dict(phi_coupling=5.0, phi_mass=0.3),
                                   dict(zprime_coupling=300.0, zprime_mass=20.0, phi_coupling=80.0, phi_mass=7.0)])
def test_fast_mediator_signals_equal_the_general_evaluation(mediator_models, point):
    general, fast = mediator_models
    pg = general.parameters.values(**point)
    pf = fast.parameters.values(**point)
    a, b = np.asarray(general.expected(pg)), np.asarray(fast.expected(pf))
    sm = np.asarray(general.expected(general.parameters.values()))
    assert np.max(np.abs(a - sm) / sm) > 1e-3  # the point changes the spectrum
    np.testing.assert_allclose(b, a, rtol=1e-10)
    # the stage reads every name it depends on; nothing else of the general case is left in it
    assert "eps_ee_L" not in fast.parameters.names and "sin2_theta12" not in fast.parameters.names
    assert {p.name for p in fast.baked} == {"sin2_theta12", "dm2_21", "sin2_theta13", "sin2_theta23"}


@pytest.mark.slow
def test_the_diagonal_fold_equals_the_dense_kernel_fold(mediator_models):
    """The xenon model's fold is an element-wise product (DiagonalFold): the same expected counts
    and gradient as the dense KernelFold through the same diagonal kernels, on both signal paths."""
    import jax

    from nuejax.model import DiagonalFold, KernelFold

    for m in mediator_models:
        diag = m.stage(DiagonalFold)
        dense = m.replace_stage(diag, KernelFold(jnp.stack(diag.kernel_list()), None, diag.norms))
        p = m.parameters.values(zprime_coupling=30.0, zprime_mass=0.4, phi_coupling=9.0, phi_mass=2.0, mu_nu=0.3,
                                norm_7Be=1.1)
        np.testing.assert_allclose(np.asarray(m.expected(p)), np.asarray(dense.expected(p)), rtol=1e-12)
        data = np.round(np.asarray(m.expected(m.parameters.values())))
        ga = jax.grad(lambda q: m.nll(q, data))(p)
        gb = jax.grad(lambda q: dense.nll(q, data))(p)
        for k in ga:
            np.testing.assert_allclose(float(ga[k]), float(gb[k]), rtol=1e-10, atol=1e-12, err_msg=k)


def test_a_diagonal_fold_refuses_a_kernel_off_its_diagonal(mediator_models):
    import dataclasses

    from nuejax.errors import InputError
    from nuejax.model import DiagonalFold, SolarSignals

    sigs = list(mediator_models[0].stage(SolarSignals).signals)
    k = np.array(sigs[2].kernel)
    k[5, 6] = 1e-3
    sigs[2] = dataclasses.replace(sigs[2], kernel=jnp.asarray(k))
    with pytest.raises(InputError, match=rf"kernel of {sigs[2].name} has the entry 0.001 at \(5, 6\)"):
        DiagonalFold.create(sigs)
    sigs[2] = dataclasses.replace(sigs[2], kernel=jnp.asarray(k[:, :-1]))
    with pytest.raises(InputError, match="not square"):
        DiagonalFold.create(sigs)


@pytest.mark.slow
def test_profile_scans_equal_one_profile_scan_per_mass(mediator_models):
    """profile_scans (every mass's points in the same launches, the mass pinned per row) gives
    what profile_scan gives at each mass (its global fit from the problem's start, starts=1)."""
    from nuejax.analyses.mediators import Q_REF, mediator_model
    from nuejax.errors import ParameterError
    from nuejax.inference import profile_scan
    from nuejax.inference.scan import profile_scans

    fast = mediator_models[1]
    data = _mediator_data(fast, 3)
    m = mediator_model(fast, "zprime")
    masses = np.array([0.05, 0.3, 5.0])
    grids = [np.concatenate([[0.0], np.logspace(-1, 2.5, 6 + k) * (mm**2 + Q_REF)]) for k, mm in enumerate(masses)]
    together = profile_scans(m, data, "zprime_coupling", grids, {"zprime_mass": masses}, n_iter=60)
    assert len(together) == 3
    limits = 0
    for mm, grid, s in zip(masses, grids, together):
        one = profile_scan(m, data, "zprime_coupling", grid, init={"zprime_mass": float(mm)}, starts=1, n_iter=60)
        np.testing.assert_array_equal(s.values, one.values)
        np.testing.assert_array_equal(s.converged, one.converged)
        assert s.converged.all()
        np.testing.assert_allclose(s.nll, one.nll, rtol=1e-10)
        assert s.nll_min == pytest.approx(one.nll_min, rel=1e-10)
        assert s.best == pytest.approx(one.best, rel=1e-6, abs=1e-9)
        ul, ul_one = s.upper_limit(0.9), one.upper_limit(0.9)
        assert (ul is None) == (ul_one is None)
        if ul is not None:
            assert ul == pytest.approx(ul_one, rel=1e-6)
            limits += 1
    assert limits >= 2
    assert np.ptp([s.best for s in together]) > 0  # the masses' minima differ: each case has its own
    with pytest.raises(ParameterError, match="zprime_mass has \\(2,\\) values for 3 grids"):
        profile_scans(m, data, "zprime_coupling", grids, {"zprime_mass": masses[:2]})
    with pytest.raises(ParameterError, match="value -1.0 of zprime_mass \\(case 1\\)"):
        profile_scans(m, data, "zprime_coupling", grids, {"zprime_mass": [0.1, -1.0, 2.0]})
    with pytest.raises(ParameterError, match="case 2"):
        profile_scans(m, data, "zprime_coupling", grids[:2] + [grids[2][::-1]], {"zprime_mass": masses})


@pytest.mark.slow
def test_profile_scans_of_two_couplings_equal_a_call_per_coupling(mediator_models):
    """profile_scans with a scanned parameter per case (both mediators' couplings in the same
    launches, each case holding the other coupling at its value, zero) gives what one call per
    coupling gives; mediators_limits of both equals mediator_limits of each."""
    from nuejax.analyses.mediators import Q_REF, mediator_limits, mediator_model, mediators_limits
    from nuejax.errors import ParameterError
    from nuejax.inference.scan import profile_scans

    fast = mediator_models[1]
    data = _mediator_data(fast, 5)
    m = mediator_model(fast, None)  # both couplings free from 0
    masses = np.array([0.05, 2.0])
    grids = [np.concatenate([[0.0], np.logspace(-1, 2.5, 5 + k) * (mm**2 + Q_REF)]) for k, mm in enumerate(masses)]
    profile = tuple(n for n in m.parameters.free_names if n not in ("zprime_coupling", "phi_coupling"))
    given = {"zprime_mass": np.tile(masses, 2), "phi_mass": np.tile(masses, 2)}
    names = ["zprime_coupling"] * 2 + ["phi_coupling"] * 2
    for init in (None, {"zprime_coupling": 0.2, "phi_coupling": 0.1}):  # the other coupling held at 0, or not
        together = profile_scans(m, data, names, grids + grids, given, profile=profile, init=init, n_iter=60)
        for c in ("zprime_coupling", "phi_coupling"):
            apart = profile_scans(m, data, c, grids, {"zprime_mass": masses, "phi_mass": masses}, profile=profile,
                                  init=init, n_iter=60)
            for s, one in zip(together[names.index(c):names.index(c) + 2], apart):
                assert s.name == one.name == c
                np.testing.assert_array_equal(s.values, one.values)
                np.testing.assert_array_equal(s.converged, one.converged)
                np.testing.assert_allclose(s.nll, one.nll, rtol=1e-10)
                assert s.nll_min == pytest.approx(one.nll_min, rel=1e-10)
                assert s.best == pytest.approx(one.best, rel=1e-6, abs=1e-9)
        assert together[0].nll[1] != together[2].nll[1]  # two different scans
        at_zero = [float(s.nll[0]) for s in together]
        if init is None:
            first = at_zero
    assert at_zero != first  # the other coupling's held value counts
    both = mediators_limits(m, data, ("zprime", "phi"), masses, ratios=np.logspace(-1, 2, 5), refine_points=4)
    for md in ("zprime", "phi"):
        one = mediator_limits(m, data, md, masses, ratios=np.logspace(-1, 2, 5), refine_points=4)
        assert [r["passes"] for r in both[md]] == [r["passes"] for r in one]
        for a, b in zip(both[md], one):
            assert (a["product"] is None) == (b["product"] is None)
            if a["product"] is not None:
                assert a["product"] == pytest.approx(b["product"], rel=1e-8)
    assert any(r["product"] is not None for r in both["phi"])
    assert all(any(r["passes"] == 2 for r in both[md]) for md in both)  # each mediator's refinement ran
    with pytest.raises(ParameterError, match="3 scanned names for 4 grids"):
        profile_scans(m, data, names[:3], grids + grids, given, profile=profile)
    with pytest.raises(ParameterError, match="not the scanned"):
        profile_scans(m, data, names, grids + grids, {**given, "phi_coupling": np.zeros(4)}, profile=profile)


def test_fast_mediators_need_both_mediators():
    from nuejax.errors import InputError

    with pytest.raises(InputError, match="fast_mediators"):
        xenon_model(EDGES, 1.16, mediators=("zprime",), fast_mediators=True)


@pytest.mark.slow
def test_nuejax_xenonnt_json_end_to_end(tmp_path):
    """``nuejax xenonnt --json`` in a fresh process (asymptotic, three mediator masses): the keys
    the analysis promises, a μ_ν limit of the published size (XENONnT: 6.3-6.4e-12 μ_B), and
    mediator limits that grow with the mass above the propagator's scale."""
    out = subprocess.run([sys.executable, "-m", "nuejax", "xenonnt", "--json", "--toys", "0", "--masses", "3",
                          "--no-plots", "--out", str(tmp_path)], capture_output=True, text=True, timeout=3000)
    assert out.returncode == 0, out.stderr[-3000:]
    s = json.loads(out.stdout.strip().splitlines()[-1])
    for key in ("mu_nu_upper_90", "mu_nu_convention", "mu_nu_expected_90", "mediator_limits", "seconds"):
        assert key in s
    assert 3e-12 < s["mu_nu_upper_90"] < 1.3e-11
    assert set(s["mediator_limits"]) == {"universal_vector", "b_minus_l", "scalar"}
    for d in s["mediator_limits"].values():
        g = d["couplings"]
        assert d["masses_mev"] == pytest.approx([0.01, 1.0, 100.0])
        assert all(x is not None for x in g) and g[0] < g[1] < g[2]


@pytest.mark.slow
def test_xenonnt_stages_beside_give_the_same_summary_and_lines(tmp_path, monkeypatch):
    """nuejax xenonnt runs its toy, NSI and mediator stages beside the μ_ν fit and profile where
    cores are to spare: the summary equals the one of the stages run in turn (asymptotic, one
    mediator mass; the toy stage beside with toys was compared on a GPU: benchmarks/NOTES.md),
    number for number, and the progress lines come out in the same order; the caller's warning
    filters are restored."""
    import warnings

    from nuejax._internal import ahead
    from nuejax.analyses.xenonnt_run import run_xenonnt

    monkeypatch.setenv("NUEJAX_AHEAD", "1")
    filters = list(warnings.filters)
    runs = {}
    for spare in (0, 4):  # in turn first: the threads then find its programs compiled
        monkeypatch.setattr(ahead, "spare_cores", lambda spare=spare: spare)
        lines = []
        s = run_xenonnt(tmp_path / str(spare), n_toys=0, plots=False, masses=np.array([1.0]), progress=lines.append)
        assert set(s["phase_start_seconds"]) == {"1/5", "2/5", "3/5", "4/5", "5/5"}
        runs[spare] = ({k: v for k, v in s.items() if k not in ("seconds", "phase_start_seconds", "progress_seconds")}, lines)
        assert list(warnings.filters) == filters
    assert runs[4][1] == runs[0][1]
    assert [ln[:5] for ln in runs[0][1] if ln.startswith("[")] == ["[1/5]", "[2/5]", "[3/5]", "[4/5]", "[5/5]"]
    assert json.dumps(runs[4][0], sort_keys=True) == json.dumps(runs[0][0], sort_keys=True)


def test_xenonnt_stages_beside_end_before_an_error_leaves(tmp_path, monkeypatch):
    """Where the μ_ν fit and profile raise while the toy, NSI and mediator stages run beside them,
    run_xenonnt waits for those (each with a warning filter of its own) before it leaves: the error
    raised is the μ_ν stage's, the three stages have ended and the caller's warning filters are back."""
    import threading
    import time
    import warnings

    from nuejax._internal import ahead
    from nuejax.analyses import xenonnt_run

    monkeypatch.setenv("NUEJAX_AHEAD", "1")
    monkeypatch.setattr(ahead, "spare_cores", lambda: 4)
    class Model:  # what run_xenonnt reads of the model before its stages
        def release(self, *names):
            return self

    monkeypatch.setattr(xenonnt_run, "xenonnt_sr0_model", lambda unbinned=False: (Model(), "data"))
    monkeypatch.setattr(xenonnt_run, "fast_model", lambda m: m)
    ended = []

    def stage(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            time.sleep(0.5)
        ended.append(threading.current_thread().name)

    def broken(*args):
        raise RuntimeError("the mu_nu stages failed")

    monkeypatch.setattr(xenonnt_run, "_nsi", stage)
    monkeypatch.setattr(xenonnt_run, "_mediators", stage)
    monkeypatch.setattr(xenonnt_run, "_mu_nu_toys", stage)
    monkeypatch.setattr(xenonnt_run, "_mu_nu", broken)
    filters = list(warnings.filters)
    with pytest.raises(RuntimeError, match="mu_nu stages failed"):
        xenonnt_run.run_xenonnt(tmp_path, plots=False)
    assert len(ended) == 3 and threading.current_thread().name not in ended
    assert list(warnings.filters) == filters


@pytest.mark.parametrize("unbinned", [False, True])
@pytest.mark.slow
def test_the_cached_sr0_model_equals_a_fresh_build(unbinned, tmp_path, monkeypatch):
    """The SR0 model is one cache entry: the second build runs no xenon_model and equals, bit for
    bit, the build with the cache off; an option the cache cannot key builds uncached, silently."""
    import warnings

    import jax

    from nuejax import cache
    from nuejax.analyses import xenonnt
    from test_cache import assert_same_bits

    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("NUEJAX_CACHE", raising=False)
    monkeypatch.setattr(cache, "_warned", set())
    calls = []
    real = xenonnt.xenon_model

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(xenonnt, "xenon_model", counting)
    with warnings.catch_warnings():
        warnings.simplefilter("error", cache.CacheWarning)
        first, data = xenonnt.xenonnt_sr0_model(unbinned=unbinned)
        n_built = len(calls)
        second, data2 = xenonnt.xenonnt_sr0_model(unbinned=unbinned)
        assert n_built == 2 and len(calls) == 2, "the second build did not come from the cache"
        if not unbinned:  # a type object as an option: not keyable, so built (no warning, no entry)
            xenonnt.xenonnt_sr0_model(dtype=np.float64)
            assert len(calls) == 4
    assert len(list((tmp_path / "cache").glob("xenonnt-model-*.npz"))) == 1
    monkeypatch.setenv("NUEJAX_CACHE", "0")
    reference, _ = xenonnt.xenonnt_sr0_model(unbinned=unbinned)
    leaves, tree = jax.tree_util.tree_flatten(reference)
    for m in (first, second):
        assert cache.treedef_digest(jax.tree_util.tree_structure(m)) == cache.treedef_digest(tree) is not None
        assert_same_bits(jax.tree_util.tree_leaves(m), leaves)
    p = reference.defaults()
    values = [float(m.nll(p, d)) for m, d in ((first, data), (second, data2), (reference, data))]
    assert values[0] == values[1] == values[2], values


@pytest.mark.slow
def test_profile_scans_stop_above_a_crossing(mediator_models):
    """profile_scans with ``stop_above`` fits each case's grid in ascending waves and stops a case
    once a converged point right of its best fit lies above the level and has a fitted point to
    its right: the points it fits are the full scan's (same values, same −2 ln L), the limits are
    the full scan's, and a case whose grid does not cross runs to its end. Global fits handed over
    give what the call's own give; fits in another case's order are refused."""
    from nuejax.analyses.mediators import Q_REF, mediator_model
    from nuejax.errors import ParameterError
    from nuejax.inference.intervals import one_sided_threshold
    from nuejax.inference.scan import profile_scans, scans_global_fits

    fast = mediator_models[1]
    data = _mediator_data(fast, 3)
    m = mediator_model(fast, "zprime")
    masses = np.array([0.05, 0.3, 5.0])
    grids = [np.concatenate([[0.0], np.logspace(-2, 4, 13) * (mm**2 + Q_REF)]) for mm in masses]
    grids[2] = grids[2][:6]  # ratios up to 1: no crossing at 5 MeV
    given = {"zprime_mass": masses}
    level = one_sided_threshold(0.9)
    full = profile_scans(m, data, "zprime_coupling", grids, given)
    fits = scans_global_fits(m, data, "zprime_coupling", grids, given)
    waved = profile_scans(m, data, "zprime_coupling", grids, given, stop_above=level, waves=(4, 2), global_fits=fits)
    own = profile_scans(m, data, "zprime_coupling", grids, given, stop_above=level, waves=(4, 2))
    for f, w, o, grid in zip(full, waved, own, grids):
        n = w.values.size
        np.testing.assert_array_equal(w.values, grid[:n])
        np.testing.assert_allclose(w.nll, f.nll[:n], rtol=1e-10)
        assert w.converged.all()
        assert w.nll_min == pytest.approx(f.nll_min, rel=1e-12) and w.best == pytest.approx(f.best, rel=1e-8, abs=1e-12)
        for a, b in zip((w.nll, w.nll_min, w.best), (o.nll, o.nll_min, o.best)):
            np.testing.assert_array_equal(a, b)
        ul, ul_full = w.upper_limit(0.9), f.upper_limit(0.9)
        assert (ul is None) == (ul_full is None)
        if ul is not None:
            assert ul == pytest.approx(ul_full, rel=1e-12)
            # it stopped after the first wave that fitted a point to the right of the first point
            # above the level right of the best fit (waves ending at 4, 6, 8, ...)
            d = np.asarray(w.delta_chi2)
            first = int(np.nonzero((w.values > w.best) & (d > level))[0][0])
            assert n == min(grid.size, 4 + 2 * max(0, -(-(first + 2 - 4) // 2)))
    assert waved[1].best > grids[1][3]  # a best fit beyond the first wave
    assert all(w.values.size < g.size for w, g in zip(waved[:2], grids[:2]))  # the far points were left out
    assert waved[2].values.size == grids[2].size and waved[2].upper_limit(0.9) is None
    with pytest.raises(ParameterError, match="global fit 0 holds zprime_mass = 0.3, not case 0's 0.05"):
        profile_scans(m, data, "zprime_coupling", grids, given, global_fits=fits[1:] + fits[:1])


def test_profile_scans_refuses_bad_waves_and_global_fits(mediator_models):
    """profile_scans' wave arguments and handed global fits are checked before any fit."""
    from nuejax.analyses.mediators import mediator_model
    from nuejax.errors import ParameterError
    from nuejax.inference.scan import profile_scans

    fast = mediator_models[1]
    m = mediator_model(fast, "zprime")
    data = np.asarray(fast.expected(fast.parameters.values()))
    grids, given = [np.array([0.0, 1.0, 2.0])] * 2, {"zprime_mass": np.array([0.1, 1.0])}
    for waves in ((4, 0), (), 2.5, (2, True)):
        with pytest.raises(ParameterError, match="waves must be a positive integer"):
            profile_scans(m, data, "zprime_coupling", grids, given, stop_above=1.6, waves=waves)
    for level in (-1.0, float("nan"), [1.0, 2.0]):
        with pytest.raises(ParameterError, match="stop_above must be a finite"):
            profile_scans(m, data, "zprime_coupling", grids, given, stop_above=level)
    with pytest.raises(ParameterError, match="1 global fits for 2 grids"):
        profile_scans(m, data, "zprime_coupling", grids, given, global_fits=[None])


@pytest.mark.slow
def test_mediator_limits_in_waves_equal_the_full_grid(mediator_models, monkeypatch):
    """mediators_limits with its coarse grids in waves gives the limits of fitting every point of
    them (a first wave that holds the whole grid), for both mediators at three masses."""
    from nuejax.analyses import mediators
    from nuejax.analyses.mediators import mediator_model, mediators_limits
    from nuejax.inference import scan

    fast = mediator_models[1]
    data = _mediator_data(fast, 5)
    m = mediator_model(fast, None)
    masses, ratios = np.array([0.05, 0.3, 5.0]), np.logspace(-2, 4, 13)
    fitted, points = [], scan.profile_points

    def counted(s, pts, *a, **k):
        fitted[-1] += len(pts)
        return points(s, pts, *a, **k)

    monkeypatch.setattr(scan, "profile_points", counted)
    fitted.append(0)
    waved = mediators_limits(m, data, ("zprime", "phi"), masses, ratios=ratios, refine_points=6)
    monkeypatch.setattr(mediators, "FIRST_WAVE_RATIO", np.inf)
    fitted.append(0)
    full = mediators_limits(m, data, ("zprime", "phi"), masses, ratios=ratios, refine_points=6)
    assert fitted[0] < fitted[1]  # the waves left points out (116 of 128 here)
    for md in ("zprime", "phi"):
        for a, b in zip(waved[md], full[md]):
            assert (a["product"] is None) == (b["product"] is None)
            if a["product"] is not None:
                assert a["product"] == pytest.approx(b["product"], rel=1e-10)
            assert a["best_product"] == pytest.approx(b["best_product"], rel=1e-8, abs=1e-30)
            assert a["delta_chi2_at_zero"] == pytest.approx(b["delta_chi2_at_zero"], rel=1e-8, abs=1e-9)
    assert sum(a["product"] is not None for md in waved for a in waved[md]) >= 4
