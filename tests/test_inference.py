"""Fits (MINUIT with autodiff, JAX-native Newton), scans, fast path, injection-recovery."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from iminuit import Minuit

from nuejax.inference import FitProblem, NLLCost, fit, interval_from_profile, newton_fit, profile_scan, profile_scan_2d
from nuejax.inference.newton import newton_minimize
from nuejax.inference.problem import Pins
from nuejax.model.fast import fast_model
from nuejax.validation.injection import injection_recovery

SIGNALS = ("pp", "pep", "7Be_862", "7Be_384", "13N")
BKG = ("210Bi", "85Kr", "11C", "210Po")
TRUTH = {"eps_ee_L": 0.05, "mu_nu": 3.0}


@pytest.fixture(scope="module")
def models(small_model):
    m = small_model
    m = m.with_parameters(m.parameters.release("eps_ee_L", "mu_nu"))
    fm = fast_model(m)
    data = m.asimov(m.parameters.values(TRUTH))
    return m, fm, data


def test_fast_path_equals_general_path_on_random_points(models):
    m, fm, _ = models
    rng = np.random.default_rng(42)
    for _ in range(6):
        eps = {f"eps_{f}_{c}": rng.normal(0, 0.3) for f in ("ee", "mumu", "tautau") for c in ("L", "R")}
        p = m.parameters.values(eps, mu_nu=abs(rng.normal(0, 5)), norm_pp=rng.uniform(0.8, 1.2),
                                rate_11C=rng.uniform(10, 40))
        a = np.asarray(m.expected(p))
        b = np.asarray(fm.expected({k: v for k, v in p.items() if k in fm.parameters}))
        np.testing.assert_allclose(b, a, rtol=1e-12)


def _autodiff_vgh(problem, x):
    from nuejax.inference.fitting import objective

    args = (problem, jnp.zeros(0))
    f = lambda y: objective(y, args)  # noqa: E731
    v, g = jax.value_and_grad(f)(x)
    return v, g, jax.hessian(f)(x)


@pytest.mark.slow
def test_structured_hessian_equals_autodiff(models):
    """value_grad_hessian's Poisson-structure Hessian (linear norms and rates) against jax.hessian of
    -2 ln L on the general path, at a non-SM point, on data with empty bins."""
    from nuejax.inference.fitting import linear_mask, value_grad_hessian
    from nuejax.model.likelihood import poisson_nll

    m, fm, _ = models
    m = m.with_parameters(m.parameters.release("eps_ee_R", "sin2_theta12"))
    rng = np.random.default_rng(7)
    assert linear_mask(fm, fm.parameters.free_names) is not None  # the fast path declares its norms too
    model = m
    p = model.parameters.values(eps_ee_L=0.07, eps_ee_R=-0.04, mu_nu=2.5, norm_pp=1.03, rate_85Kr=20.0)
    data = np.asarray(rng.poisson(np.asarray(model.expected(p)) * 1.02), dtype=float)
    data[::37] = 0.0
    names = model.parameters.free_names
    assert linear_mask(model, names) is not None and not all(linear_mask(model, names))
    x = jnp.asarray([float(p[n]) for n in names])
    problem = FitProblem.create(model, data, init={k: float(v) for k, v in p.items()})
    assert problem.names == names
    v, g, H = jax.jit(value_grad_hessian)(x, (problem, jnp.zeros(0)))
    v0, g0, H0 = _autodiff_vgh(problem, x)
    assert float(v) == pytest.approx(float(v0), rel=1e-13)
    np.testing.assert_allclose(g, g0, rtol=1e-8, atol=1e-9 * float(jnp.max(jnp.abs(g0))))
    d = np.sqrt(np.abs(np.diag(H0)))
    np.testing.assert_allclose(np.asarray(H) / np.outer(d, d), np.asarray(H0) / np.outer(d, d), atol=1e-11)
    # the decomposition the structure relies on
    assert float(model.nll(p, data)) == pytest.approx(
        float(poisson_nll(model.expected(p), data) + model.constraint_nll(p)), rel=1e-14)


def test_cost_follows_the_iminuit_protocol(models):
    _, fm, data = models
    cost = NLLCost(fm, data)
    assert cost.errordef == 1.0 and cost.ndata == fm.n_obs
    assert set(cost._parameters) == set(fm.parameters.free_names)
    x0 = np.array([float(cost.base[n]) for n in cost.names])
    g = cost.grad(*x0)
    h = 1e-6 * np.maximum(1, np.abs(x0))
    for i in (0, 1, 2):
        e = np.zeros_like(x0)
        e[i] = h[i]
        assert g[i] == pytest.approx((cost(*(x0 + e)) - cost(*(x0 - e))) / (2 * h[i]), rel=1e-5, abs=1e-4)
    with pytest.warns(Warning, match="hessian overrides g2"):  # iminuit's note, harmless (NLLCost.g2)
        m = Minuit(cost, *x0)  # directly usable
    m.migrad()
    assert m.valid and m.values["eps_ee_L"] == pytest.approx(0.05, abs=1e-3)
    with pytest.warns(Warning, match="hessian overrides g2"):
        ma = Minuit(cost, x0)  # the array form: iminuit then calls cost(array)
    ma.migrad()
    assert ma.valid and ma.values[0] == pytest.approx(0.05, abs=1e-3)
    assert tuple(ma.parameters) == cost.names and ma.limits[cost.names.index("mu_nu")] == (0.0, 100.0)


def test_minuit_fit_recovers_asimov_truth_with_autodiff_errors(models):
    _, fm, data = models
    r = fit(fm, data, {"eps_ee_L": 0.0, "mu_nu": 1.0, "norm_pp": 0.97, "rate_210Bi": 12.0})
    assert r.valid and r.ngrad > 0
    for k, v in TRUTH.items():
        assert abs(r.values[k] - v) < 0.01 * r.errors[k]
    # autodiff covariance vs MINUIT's own finite-difference HESSE on a plain function
    names = r.names

    def plain(*x):
        return float(fm.nll({**r.params, **dict(zip(names, map(jnp.asarray, x)))}, data))

    mp = Minuit(plain, *[r.values[n] for n in names], name=names)
    mp.errordef = 1.0
    mp.errors = [r.errors[n] for n in names]
    mp.hesse()
    for n in ("eps_ee_L", "mu_nu", "norm_pp", "rate_11C"):
        assert r.errors[n] == pytest.approx(mp.errors[n], rel=0.02)
    assert np.allclose(np.diag(r.correlation), 1.0)


@pytest.mark.slow
def test_fit_launches_the_solver_only_where_it_would_not_stop_at_once(models):
    """Where MIGRAD's end point passes the KKT test (run on the host's copies) and no coordinate is
    next to a bound, fit does not launch the bound-constrained solver. Launched there anyway, the
    solver stops at once, does not move, and reports the same test and value (general path,
    whose Hessian comes from the Poisson structure)."""
    from nuejax.inference.fitting import bound_flags, solve_rows

    m, _, data = models
    r = fit(m, data, {"eps_ee_L": 0.0, "mu_nu": 1.0})
    assert r.valid and r.minimizer == "migrad" and r.diagnostics["migrad_kkt"]
    assert not r.diagnostics["newton_launched"] and r.diagnostics["newton_iterations"] == 0
    s = FitProblem.create(m, data, init=r.params)
    x = np.array([r.values[n] for n in r.names])
    res = solve_rows(s, x[None], max_iter=100, edm_tol=0.002 * 0.001)
    res = type(res)(*(np.asarray(a)[0] for a in res))
    assert int(res.n_iter) == 0 and bool(res.converged) and np.array_equal(np.asarray(res.x), x)
    assert r.at_bound == bound_flags(s.names, np.asarray(res.at_lower), np.asarray(res.at_upper))
    assert r.diagnostics["migrad_kkt_edm"] == pytest.approx(float(res.edm), rel=1e-6, abs=1e-14)
    assert r.fval == pytest.approx(float(res.fun), rel=1e-13) and r.edm == pytest.approx(float(res.edm), rel=1e-6,
                                                                                          abs=1e-14)


def test_minos_on_request(models):
    _, fm, data = models
    r = fit(fm, data, minos=["eps_ee_L"])
    lo, hi = r.minos["eps_ee_L"]
    assert lo < 0 < hi and abs(-lo - r.errors["eps_ee_L"]) < 0.2 * r.errors["eps_ee_L"]
    assert "MINOS" in str(r)


def test_newton_agrees_with_minuit(models):
    _, fm, data = models
    start = {"eps_ee_L": 0.0, "mu_nu": 1.0}
    rm = fit(fm, data, start)
    rn = newton_fit(fm, data, start)
    assert rn.valid
    assert rn.fval <= rm.fval + 1e-3  # MINUIT stops at EDM < 2e-6 here
    for n in rm.names:
        assert abs(rn.values[n] - rm.values[n]) < 0.01 * rm.errors[n], n
        assert rn.errors[n] == pytest.approx(rm.errors[n], rel=1e-3)


@pytest.mark.slow
def test_batched_newton_fits_of_toys_in_one_launch(models):
    _, fm, _ = models
    names = fm.parameters.free_names
    lo, hi = fm.parameters.bounds()
    base = fm.parameters.values(TRUTH)
    toys = fm.pseudo_data(jax.random.PRNGKey(1), base, n_toys=4)

    def one(d):
        f = lambda x: fm.nll({**base, **{n: x[i] for i, n in enumerate(names)}}, d)  # noqa: E731
        return newton_minimize(f, jnp.stack([base[n] for n in names]), lo, hi)

    batch = jax.jit(jax.vmap(one))(toys)
    assert bool(jnp.all(batch.converged))
    single = newton_fit(fm, toys[2], base, starts=1)  # the same single start as the batch
    # the same minimum, to the precision of the EDM tolerance (1e-8 each: 1.4e-4 standard
    # deviations at most; the CPU's single fit takes another path, its Gauss-Newton phase)
    sd = np.array([single.errors[n] for n in names])
    assert np.all(np.abs(np.asarray(batch.x[2]) - [single.values[n] for n in names]) < 1e-3 * sd)
    assert float(batch.fun[2]) == pytest.approx(single.fval, abs=2e-8)


@pytest.mark.slow  # 40 s; the default run keeps the batched-scan checks of test_profile_scan_2d and test_bounded_fits
def test_profile_scan_matches_minuit_profiles_and_interval(models):
    _, fm, data = models
    g = fit(fm, data)
    values = np.linspace(-0.03, 0.13, 33)
    s = profile_scan(fm, data, "eps_ee_L", values, global_fit=g, chunk=16, progress=lambda m: None)
    assert s.converged.all() and s.values[np.argmin(s.nll)] == pytest.approx(0.05)
    for v in (0.0, 0.05, 0.1):
        i = int(np.argmin(np.abs(values - v)))
        fixed = fm.with_parameters(fm.parameters.fix(eps_ee_L=values[i]))
        rm = fit(fixed, data, {k: v for k, v in g.values.items() if k != "eps_ee_L"})
        assert s.nll[i] <= rm.fval + 1e-3 and s.nll[i] == pytest.approx(rm.fval, abs=2e-3)
    lo, hi = s.interval(0.9)
    assert lo < 0.05 < hi
    # the asymptotic interval is ~ +-1.645 sigma of the (nearly parabolic) profile
    assert (hi - lo) / 2 == pytest.approx(1.645 * g.errors["eps_ee_L"], rel=0.05)


@pytest.mark.slow
def test_profile_scan_2d(models):
    _, fm, data = models
    s = profile_scan_2d(fm, data, ("eps_ee_L", "mu_nu"), np.linspace(0.0, 0.1, 5), np.linspace(1.0, 5.0, 5))
    assert s.nll.shape == (5, 5) and s.converged.all()
    assert np.unravel_index(np.argmin(s.nll), s.nll.shape) == (2, 2)  # (0.05, 3.0)


def test_profile_starts_follow_the_profile_tangent(models):
    """Near the global minimum the predicted start is the profile minimum to second order: at
    offsets of 0.05 and 0.1 sigma its distance to the fitted profile point falls ~4x (first-order
    error would halve), and it is far closer than the global minimum is; a candidate whose -2 ln L
    is not finite is never taken."""
    from nuejax.inference.fitting import profile_starts, solve_rows

    _, fm, data = models
    g = fit(fm, data)
    s = FitProblem.create(fm, data, fixed_names=("eps_ee_L",))
    sig = g.errors["eps_ee_L"]
    pts = g.values["eps_ee_L"] + np.array([[0.05], [0.1]]) * sig
    starts = profile_starts(g, ("eps_ee_L",), s.names, pts, s.lower, s.upper)
    assert starts.shape == (2, 2, len(s.names))
    res = solve_rows(s, starts, pts)
    assert np.asarray(res.converged).all()
    scale = np.sqrt(np.diag(g.covariance))[[g.names.index(n) for n in s.names]]
    scale = np.where(scale > 0, scale, 1.0)
    d_pred = np.linalg.norm((starts[:, 0] - np.asarray(res.x)) / scale, axis=1)
    d_glob = np.linalg.norm((starts[:, 1] - np.asarray(res.x)) / scale, axis=1)
    assert np.all(d_pred < 0.05 * d_glob)
    assert d_pred[1] / d_pred[0] > 3.0
    # a NaN candidate (a rate of NaN) loses to the finite one
    bad = starts.copy()
    bad[:, 0, s.names.index("rate_210Bi")] = np.nan
    res_bad = solve_rows(s, bad, pts)
    assert np.asarray(res_bad.converged).all()
    np.testing.assert_allclose(np.asarray(res_bad.fun), np.asarray(res.fun), atol=1e-6)


def test_interval_from_profile_on_a_parabola():
    x = np.linspace(-3, 3, 61)
    lo, hi = interval_from_profile(x, x**2, 1.0)
    assert lo == pytest.approx(-1.0, abs=1e-3) and hi == pytest.approx(1.0, abs=1e-3)
    assert interval_from_profile(x, x**2, 100.0) == (None, None)


@pytest.mark.slow  # the default run's demo test makes the same checks on both injections
@pytest.mark.parametrize("case", ["nsi", "mm"])
def test_injection_recovery(full_model, case):
    r = injection_recovery(full_model, case)
    assert abs(r.fitted - r.injected) < 0.01 * r.error
    assert r.scan.values[np.argmin(r.scan.nll)] == pytest.approx(r.injected)
    lo, hi = r.interval_90
    assert lo < r.injected < hi


@pytest.mark.slow
def test_cost_writing_results_to_pinned_host_memory_equals_the_default(models, monkeypatch):
    """The minimiser's calls compiled to write their results into pinned host memory (the GPU
    route, host_output_sharding) give the default calls' value, gradient and Hessian."""
    from nuejax.inference import cost as cost_mod

    m, _, data = models
    dev = jax.devices()[0]
    assert cost_mod.host_output_sharding(dev) is None  # a CPU: its memory is the host's
    pinned = jax.sharding.SingleDeviceSharding(dev, memory_kind="pinned_host")
    ref = NLLCost(m, data)
    monkeypatch.setattr(cost_mod, "host_output_sharding", lambda device: pinned)
    c = NLLCost(m, data)
    assert c._value is not ref._value
    x = np.array([float(c.base[n]) for n in c.names]) * 1.01
    assert c(x) == ref(x)
    np.testing.assert_array_equal(c.grad(x), ref.grad(x))
    np.testing.assert_allclose(c.hessian(x), ref.hessian(x), rtol=1e-12, atol=0)


@pytest.mark.slow
def test_second_cost_and_scan_reuse_the_compiled_code(models):
    """A new NLLCost (each fit makes one) or a second scan of the same shape must not recompile:
    the jitted functions take the model as an argument and are cached at module level."""
    from nuejax.inference import cost as cost_mod
    from nuejax.inference import fitting as fitting_mod

    m, fm, data = models
    for _ in range(2):
        c = NLLCost(m, data)
        c.grad(np.array([float(c.base[n]) for n in c.names]))
    compiled = c._vg_host  # what grad calls: module-level, the same for every cost object
    assert compiled is cost_mod._compiled("value_and_grad", cost_mod.host_output_sharding(jax.devices()[0]))
    n_cost = compiled._cache_size()
    c = NLLCost(m, data, fixed={"eps_ee_L": 0.01})  # Python floats as fixed values must not retrace either
    c.grad(np.array([float(c.base[n]) for n in c.names]))
    c(np.array([float(c.base[n]) for n in c.names]) * 1.01)  # a numpy vector as the argument: no retrace
    assert compiled._cache_size() == n_cost
    grid = np.linspace(0.0, 0.1, 4)
    rf = fit(fm, data)
    solve = fitting_mod.row_solver()
    n_scan = solve._cache_size()
    # the scan runs the program of the fit's multi-start design (one problem, rows padded alike)
    profile_scan(fm, data, "eps_ee_L", grid, global_fit=rf)
    assert solve._cache_size() == n_scan
    profile_scan(fm, data, "eps_ee_L", grid + 0.01, global_fit=rf)
    assert solve._cache_size() == n_scan
    # a scan of another parameter of the same model is the same problem (the scanned parameters
    # are pinned coordinates of the model-ordered fit): no new program
    profile_scan(fm, data, "mu_nu", np.linspace(0.0, 4.0, 4), global_fit=rf)
    assert solve._cache_size() == n_scan


def test_pinned_coordinates_equal_fixed_parameters(models):
    """A fit with a coordinate pinned (Pins) is the fit with that parameter fixed: same -2 ln L and
    end point (to the solver's rounding), converged, the pinned coordinate never reported on a bound,
    also where the pinned value sits on its bound (mu_nu = 0)."""
    from nuejax.inference.fitting import solve_rows
    from nuejax.inference.problem import Pins

    _, fm, data = models
    for value in (0.0, 2.5):
        narrow = FitProblem.create(fm, data, fixed_names=("mu_nu",))
        wide = narrow.with_names(tuple(n for n in narrow.value_names if n in set(narrow.names) | {"mu_nu"}))
        i = wide.names.index("mu_nu")
        ref = solve_rows(narrow, np.asarray(narrow.start())[None], np.full((1, 1), value), max_iter=200, edm_tol=1e-8)
        mask = np.zeros((1, len(wide.names)), dtype=bool)
        mask[0, i] = True
        pins = Pins(mask, np.where(mask, value, 0.0))
        got = solve_rows(wide, np.asarray(wide.start())[None], pins, max_iter=200, edm_tol=1e-8)
        keep = [k for k in range(len(wide.names)) if k != i]
        assert bool(ref.converged[0]) and bool(got.converged[0])
        assert float(got.fun[0]) == pytest.approx(float(ref.fun[0]), abs=1e-9)
        np.testing.assert_allclose(np.asarray(got.x[0])[keep], np.asarray(ref.x[0]), rtol=1e-6, atol=1e-8)
        assert float(got.x[0, i]) == value and not bool(got.at_lower[0, i]) and not bool(got.at_upper[0, i])


def test_solve_rows_fits_distinct_rows_once_and_keeps_its_program(models):
    """solve_rows: rows equal in every input get the same result (fitted once), a launch of
    another number of rows or in other chunks runs the same compiled program, and the results
    do not depend on how the rows were cut."""
    from nuejax.inference import fitting

    _, fm, data = models
    s = FitProblem.create(fm, data)
    x = np.asarray(s.start(), dtype=float)
    rows = np.stack([x, x * 1.01, x, x * 1.01, x])
    r = fitting.solve_rows(s, rows)
    assert np.asarray(r.converged).all()
    for a, b in ((0, 2), (0, 4), (1, 3)):
        for field in r:
            np.testing.assert_array_equal(np.asarray(field)[a], np.asarray(field)[b])
    n = fitting.row_solver()._cache_size()
    r3 = fitting.solve_rows(s, rows[:3])
    r1 = fitting.solve_rows(s, rows, chunk=1)
    assert fitting.row_solver()._cache_size() == n
    np.testing.assert_array_equal(np.asarray(r3.x), np.asarray(r.x)[:3])
    np.testing.assert_allclose(np.asarray(r1.fun), np.asarray(r.fun), rtol=1e-12)
    with pytest.raises(ValueError, match="starts must be"):
        fitting.solve_rows(s, rows[None])


def test_cheap_rows_reads_the_cost_of_a_rows_hessian(models, monkeypatch):
    """cheap_rows: XLA's cost analysis of one row's value, gradient and Hessian, against
    ACCELERATOR_ROW_BYTES (the fast model's row moves far fewer bytes than the threshold; a
    threshold below its cost makes it costly), and more bytes than −2 ln L alone."""
    from nuejax.inference import fitting

    m, fm, data = models
    s = FitProblem.create(fm, data)
    fixed = Pins(np.zeros(len(s.names), dtype=bool), np.zeros(len(s.names)))
    x = np.asarray(s.start(), dtype=float)
    vgh = fitting._row_cost("vgh", s, fixed, x)["bytes accessed"]
    assert vgh > fitting._row_cost("objective", s, fixed, x)["bytes accessed"] > 0
    assert fitting.cheap_rows(s, fixed, x)
    monkeypatch.setattr(fitting, "ACCELERATOR_ROW_BYTES", vgh / 2)
    assert not fitting.cheap_rows(s, fixed, x)


def test_cheap_rows_where_the_default_backend_has_no_cost_analysis(models, monkeypatch, tmp_path):
    """A GPU's lowering has no cost analysis before compilation (JAX returns None): cheap_rows
    then reads that of the program lowered for the host's CPU device, the same bytes as where the
    CPU is the default backend; without a CPU device, the compiled program's analysis. Simulated
    on the CPU: a lowering without a default device set answers None, as a GPU's did on one H200
    (every problem then counted as costly)."""
    import jax.stages

    from nuejax.inference import fitting

    m, fm, data = models
    s = FitProblem.create(fm, data)
    fixed = Pins(np.zeros(len(s.names), dtype=bool), np.zeros(len(s.names)))
    x = np.asarray(s.start(), dtype=float)
    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(tmp_path))  # nothing remembered on disk
    monkeypatch.setattr(fitting, "_COSTLY", {})
    want = fitting._row_cost("vgh", s, fixed, x)["bytes accessed"]
    original = jax.stages.Lowered.cost_analysis

    def like_a_gpu(self):
        return original(self) if jax.config.jax_default_device is not None else None

    monkeypatch.setattr(jax.stages.Lowered, "cost_analysis", like_a_gpu)
    monkeypatch.setattr(fitting, "_COSTLY", {})
    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(tmp_path / "b"))
    assert fitting._row_cost("vgh", s, fixed, x)["bytes accessed"] == want
    assert fitting.cheap_rows(s, fixed, x)
    # no CPU backend (JAX_PLATFORMS without cpu): the compiled program's own analysis
    devices = jax.devices

    def no_cpu(backend=None):
        if backend == "cpu":
            raise RuntimeError("Backend 'cpu' failed to initialize")
        return devices(backend)

    monkeypatch.setattr(jax, "devices", no_cpu)
    monkeypatch.setattr(fitting, "_COSTLY", {})
    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(tmp_path / "c"))
    assert fitting._row_cost("vgh", s, fixed, x)["bytes accessed"] > 0
    assert fitting.cheap_rows(s, fixed, x)


def test_row_launch_sizes(monkeypatch):
    """Launch sizes of solve_rows: CPU row-by-row launches padded to CPU_CHUNK (one program for
    any length up to it), vmapped CPU launches to a power of two, accelerators' to a power of two
    of at least ROW_LAUNCH_MIN rows and to multiples of ROW_LAUNCH_QUANTUM beyond it; cheap rows'
    launches in chunks of ROW_LAUNCH_CHEAP_STEP all hold that many rows."""
    from nuejax.inference import fitting

    assert fitting._row_launch(5, fitting.CPU_CHUNK, True) == fitting.CPU_CHUNK
    assert fitting._row_launch(300, 300, True) == 300
    assert fitting._row_launch(5, fitting.CPU_CHUNK, False) == 8
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    q = fitting.ROW_LAUNCH_QUANTUM
    assert [fitting._row_launch(r, 1 << 30, False) for r in (1, 4, 8, 9, q, q + 1)] == [8, 8, 8, 16, q, 2 * q]
    cheap = fitting.ROW_LAUNCH_MIN_CHEAP
    assert [fitting._row_launch(r, 1 << 30, False, cheap) for r in (1, cheap, cheap + 1, q + 1)] == [
        cheap, cheap, 2 * cheap, 2 * q]
    step = fitting.ROW_LAUNCH_CHEAP_STEP  # cheap rows in chunks of step: one size, one program per problem
    assert {fitting._row_launch(r, step, False, cheap) for r in (1, 8, 64, step - 1, step)} == {step}
