"""Global minima (issue 26): the multi-start design of every fit, scan and toy fit finds the lowest
minimum of a likelihood with several, checked against two independent references:

* on Asimov data the global minimum is known in closed form: every Poisson term is smallest where
  the expectation equals the data and every constraint term where the parameter sits at its
  auxiliary measurement, so −2 ln L is smallest at the generating point;
* on 100 Poisson toys, a brute-force search (tests/brute_force.py: 64 random starts over the box
  of the parameters of interest, nuisances scattered, each minimised by scipy's L-BFGS-B and
  polished), which shares nothing with nuejax but −2 ln L. It takes 10 s a toy, so it is recorded
  (tests/record_global_minima.py → tests/data/global_minima_reference.json, with the toys' data)
  and the toy with the most minima is searched again live.

The model: general NSI (ε^L_ee and Re ε^L_eτ free with 9 nuisances) on the fast path, truth
ε^L_ee = 0, Re ε^L_eτ = 0.3. Its −2 ln L has a second branch near ε^L_ee ≈ −2 g_L (the sign of
g_L + ε^L_ee flips) and Re ε^L_eτ ↔ −Re ε^L_eτ images; on most toys the branches hold separate
minima a few units apart, and a single start ends on the wrong one.
"""
import json
import warnings
from pathlib import Path

import jax
import numpy as np
import pytest

from brute_force import Objective, brute_force
from nuejax.inference import SecondMinimumWarning, batch_fit, fit, newton_fit, profile_scan, profile_scan_2d
from nuejax.inference.starts import DEFAULT_STARTS

TRUTH = dict(eps_etau_L_re=0.3)
MIRROR = dict(eps_ee_L=0.0, eps_etau_L_re=-0.3)
WRONG_BRANCH = dict(eps_ee_L=-1.4, eps_etau_L_re=-0.3)


def build_model():
    from nuejax.model import borexino_like_model, fast_model

    m = borexino_like_model(n_T=60, window=(150, 900), signals=("pp", "pep", "7Be_862", "7Be_384", "13N"),
                            backgrounds=("210Bi", "85Kr", "210Po", "11C", "ext_208Tl"), nsi=("eps_etau_L_re",))
    return fast_model(m.with_parameters(m.parameters.release("eps_ee_L", "eps_etau_L_re")))


@pytest.fixture(scope="module")
def nsi():
    return build_model()


def _toys(model, n, seed=1):
    truth = model.parameters.values(**TRUTH)
    counts, aux = jax.vmap(lambda k: model.draw_toy(k, truth))(jax.random.split(jax.random.PRNGKey(seed), n))
    return np.asarray(counts), aux, truth


def _n_minima(funs, best):
    """Distinct end values (to 0.01) of a brute-force search within 50 of its best."""
    return len(np.unique(np.round(funs[funs < best + 50], 2)))


def _row(aux, i):
    return jax.tree_util.tree_map(lambda v: v[i], aux)


@pytest.mark.slow
@pytest.mark.parametrize("init", [MIRROR, pytest.param(WRONG_BRANCH, marks=pytest.mark.slow)],
                         ids=["mirror", "other_branch"])
def test_asimov_fits_from_the_wrong_branch_reach_the_generating_point(nsi, init):
    truth = nsi.parameters.values(**TRUTH)
    data = nsi.asimov(truth)
    f_truth = float(nsi.nll(truth, data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = newton_fit(nsi, data, init=init, starts=1)
    # one start does not reach the generating point (the test below can fail): from the mirror it
    # converges to the mirror minimum (Re eps_etau ~ -0.41, 0.005 higher), from the other branch it
    # crawls along the valley and stops at the iteration limit
    assert not (one.valid and one.fval < f_truth + 1e-3), (one.valid, one.fval - f_truth, one.values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = {"newton_fit": newton_fit(nsi, data, init=init), "fit": fit(nsi, data, init=init)}
        b = batch_fit(nsi, np.stack([np.asarray(data)] * 2), init=init)
    for name, r in fits.items():
        assert r.valid and r.fval == pytest.approx(f_truth, abs=1e-6), name
        assert r.values["eps_ee_L"] == pytest.approx(0.0, abs=1e-2) and r.values["eps_etau_L_re"] == pytest.approx(
            0.3, abs=1e-2), (name, r.values)
        assert r.n_starts == DEFAULT_STARTS and len(r.minima) >= 2, (name, r.n_starts, r.minima)
        assert r.minima[0]["fval"] == pytest.approx(r.fval, abs=1e-6), name
        assert all(m["fval"] >= r.fval - 1e-6 for m in r.minima), name
    assert np.all(b.converged) and np.allclose(b.fval, f_truth, atol=1e-6)
    assert np.allclose(b.values["eps_etau_L_re"], 0.3, atol=1e-2)


@pytest.mark.slow
def test_second_minimum_warning_names_the_other_minimum(nsi):
    truth = nsi.parameters.values(**TRUTH)
    data = nsi.asimov(truth)
    r = newton_fit(nsi, data, warn_delta=None)
    gap = r.minima[1]["fval"] - r.minima[0]["fval"]
    best, other = r.minima[0]["values"], r.minima[1]["values"]
    moved = [n for n in best if abs(other[n] - best[n]) > 1e-3 * max(1.0, abs(best[n]))]
    assert set(moved) & {"eps_ee_L", "eps_etau_L_re"}  # another branch or the mirror minimum
    with pytest.warns(SecondMinimumWarning) as seen:
        newton_fit(nsi, data, warn_delta=gap + 0.5)
    message = str(seen[0].message)
    assert all(f"{n} = " in message for n in moved), (moved, message)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SecondMinimumWarning)
        newton_fit(nsi, data, warn_delta=gap - 0.5)


REFERENCE = Path(__file__).resolve().parent / "data" / "global_minima_reference.json"


@pytest.fixture(scope="module")
def reference(nsi):
    """The recorded brute-force minima of 100 toys (tests/record_global_minima.py: 64 starts each)."""
    assert REFERENCE.exists(), "run python tests/record_global_minima.py"
    ref = json.loads(REFERENCE.read_text())
    names = nsi.parameters.free_names
    assert tuple(ref["names"]) == names, (ref["names"], names)
    counts = np.asarray(ref["counts"], dtype=float)
    treedef = jax.tree_util.tree_structure(_toys(nsi, 1)[1])
    aux = jax.tree_util.tree_unflatten(treedef, [np.asarray(v) for v in ref["aux_leaves"]])
    f = np.array([t["fval"] for t in ref["toys"]])
    x = np.array([t["x"] for t in ref["toys"]])
    n_min = np.array([len(t["distinct_end_values"]) for t in ref["toys"]])
    return counts, aux, names, f, x, n_min, ref["starts"]


@pytest.mark.slow
def test_the_recorded_reference_is_reproduced(nsi, reference):
    """A live brute-force search gives the recorded minimum (and the toy's data were read back as
    recorded): on the first toy with the most distinct minima (one toy: each search is 64 scipy
    minimisations, about a minute on 2 cores)."""
    counts, aux, names, f, x, n_min, n_starts = reference
    truth = nsi.parameters.values(**TRUTH)
    obj = Objective(nsi, names, truth)
    poi = [names.index("eps_ee_L"), names.index("eps_etau_L_re")]
    x_truth = np.array([truth[k] for k in names])
    i = int(np.argmax(n_min))
    obj.bind(counts[i], _row(aux, i))
    f_live = brute_force(obj, x_truth, poi, n_starts=n_starts, seed=i)[0]
    assert f_live == pytest.approx(f[i], abs=1e-6), i


@pytest.mark.slow
def test_default_fits_find_the_brute_force_minimum_on_toys(nsi, reference):
    counts, aux, names, f_ref, x_ref, n_min, _ = reference
    n = len(f_ref)
    assert n >= 100
    # the problem is real: most toys have a second minimum, and one start misses the global one
    n_multi = int(np.sum(n_min >= 2))
    print(f"{n_multi} of {n} toys have two or more minima")
    assert n_multi >= n // 2, n_multi
    one = batch_fit(nsi, counts, aux=aux, starts=1)
    n_wrong_one = int(np.sum(~one.converged | (one.fval > f_ref + 1e-3)))
    print(f"one start: wrong on {n_wrong_one} of {n}")
    assert n_wrong_one >= n // 5
    b = batch_fit(nsi, counts, aux=aux)
    assert np.all(b.converged), np.nonzero(~b.converged)
    np.testing.assert_allclose(b.fval, f_ref, atol=1e-3)
    bad = []
    for i in range(n):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fit(nsi, counts[i], aux=_row(aux, i))
        if not (r.valid and abs(r.fval - f_ref[i]) < 1e-3):
            bad.append((i, r.valid, r.fval - f_ref[i]))
    assert not bad, bad
    for i in range(0, n, 10):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = newton_fit(nsi, counts[i], aux=_row(aux, i))
        assert r.valid and r.fval == pytest.approx(f_ref[i], abs=1e-3), (i, r.fval, f_ref[i])


@pytest.mark.slow
def test_profiles_are_the_lower_envelope(nsi, reference):
    """A 1-D scan of Re ε^L_eτ (ε^L_ee profiled: two branches) and a 2-D scan of both against
    brute-force profiles at every point, on the first toy with two minima."""
    counts, aux, names, f_ref, x_ref, n_min, _ = reference
    i = int(np.nonzero(n_min >= 2)[0][0])
    data, a = counts[i], _row(aux, i)
    truth = nsi.parameters.values(**TRUTH)
    values = np.linspace(-0.8, 0.8, 9)
    scan = profile_scan(nsi, data, "eps_etau_L_re", values, aux=a)
    prof = [n for n in names if n != "eps_etau_L_re"]
    obj = Objective(nsi, prof, truth)
    x0 = np.array([truth[k] for k in prof])
    for j, (v, f) in enumerate(zip(values, np.asarray(scan.nll))):
        obj.bind(data, a, fixed=dict(eps_etau_L_re=v))
        f_ref = brute_force(obj, x0, [prof.index("eps_ee_L")], n_starts=16, seed=j)[0]
        assert f == pytest.approx(f_ref, abs=1e-3), (v, f, f_ref)

    vx, vy = np.linspace(-1.6, 0.2, 4), np.linspace(-0.6, 0.6, 3)
    scan2 = profile_scan_2d(nsi, data, ("eps_ee_L", "eps_etau_L_re"), vx, vy, aux=a)
    prof2 = [n for n in names if n not in ("eps_ee_L", "eps_etau_L_re")]
    obj2 = Objective(nsi, prof2, truth)
    x0 = np.array([truth[k] for k in prof2])
    f2 = np.asarray(scan2.nll)
    for ix, x in enumerate(vx):
        for iy, y in enumerate(vy):
            obj2.bind(data, a, fixed=dict(eps_ee_L=x, eps_etau_L_re=y))
            f_ref = brute_force(obj2, x0, [], n_starts=4, seed=ix * 10 + iy)[0]
            assert f2[ix, iy] == pytest.approx(f_ref, abs=1e-3), (x, y, f2[ix, iy], f_ref)


@pytest.mark.slow
def test_envelope_passes_fit_each_start_once(nsi, reference, monkeypatch):
    """The envelope's passes (scan.profile_points) refit a point only from an end point that no
    earlier pass started it from, and end where passes that refit every point from every
    neighbour end (the loop restated below): the same profile, passes and refitted points (on
    this toy; in general up to the tie of best_of_starts, 1e-6 in -2 ln L). The
    scan starts from one branch alone (one start, on the other branch), so that the passes have
    a branch to spread (6 passes on this toy)."""
    import nuejax.inference.scan as scan_mod
    from nuejax.inference.fitting import best_of_starts
    from nuejax.inference.problem import Pins

    counts, aux, _, _, _, n_min, _ = reference
    i = int(np.nonzero(n_min >= 2)[0][1])
    calls, solve_rows, profile_points, inside = [], scan_mod.solve_rows, scan_mod.profile_points, []

    def recording(problem, x0, fixed=None, **kw):  # the envelope's solves: its first, then one per pass
        out = solve_rows(problem, x0, fixed, **kw)
        if inside:
            calls.append((problem, np.asarray(x0), fixed, kw.get("group", 1), out))
        return out

    def envelope(*args, **kw):
        inside.append(1)
        try:
            return profile_points(*args, **kw)
        finally:
            inside.pop()

    monkeypatch.setattr(scan_mod, "solve_rows", recording)
    monkeypatch.setattr(scan_mod, "profile_points", envelope)
    values = np.linspace(-0.8, 0.8, 9)
    scan = profile_scan(nsi, counts[i], "eps_etau_L_re", values, aux=_row(aux, i), starts=1, init=WRONG_BRANCH)
    monkeypatch.undo()
    assert scan.passes >= 3 and scan.refitted >= 2, (scan.passes, scan.refitted)  # the passes have work
    problem, x0, pins, g, out = calls[0]
    n = values.size
    assert x0.shape[0] == n * g
    seen = set()
    for _, x, f, _, _ in calls[1:]:  # no start of a point is fitted in two passes
        rows = {(tuple(np.round(r[0], 12)), tuple(np.round(p, 12))) for r, p in zip(x, np.asarray(f.values))}
        assert not rows & seen
        seen |= rows
    res = best_of_starts(type(out)(*(np.asarray(a).reshape((n, g) + np.shape(a)[1:]) for a in out)), axis=1)[0]
    point_pins = Pins(np.asarray(pins.mask)[::g], np.asarray(pins.values)[::g])
    nb = scan_mod.grid_neighbours((n,))
    passes, refitted = 0, np.zeros(n, dtype=bool)
    for passes in range(1, scan_mod.ENVELOPE_PASSES + 1):  # every point from every neighbour, each pass
        ok = res.converged & np.isfinite(res.fun)
        use = (nb >= 0) & ok[np.clip(nb, 0, None)]
        starts = np.where(use[..., None], res.x[np.clip(nb, 0, None)], res.x[:, None, :])
        m = nb.shape[1]
        new = solve_rows(problem, starts.reshape(n * m, -1),
                         Pins(np.repeat(point_pins.mask, m, axis=0), np.repeat(point_pins.values, m, axis=0)),
                         max_iter=scan_mod.SCAN_MAX_ITER)
        new = best_of_starts(type(new)(*(np.asarray(a).reshape((n, m) + np.shape(a)[1:]) for a in new)), axis=1)[0]
        better = new.converged & np.isfinite(new.fun) & ((new.fun < res.fun - 1e-6) | ~ok)
        if not better.any():
            break
        refitted |= better
        res = type(res)(*(np.where(better.reshape((n,) + (1,) * (np.ndim(a) - 1)), b, a) for a, b in zip(res, new)))
    # equal to rounding: a launch of other rows may round differently (vmapped rows)
    np.testing.assert_allclose(np.asarray(scan.nll), res.fun, rtol=0, atol=1e-6)
    assert (scan.passes, scan.refitted) == (passes, int(refitted.sum()))


@pytest.mark.slow
def test_toy_fits_from_the_asimov_design_find_the_global_minimum(nsi):
    """The toys of a Neyman construction start from u, its symmetry images and the minima of an
    Asimov fit at u (toys.toy_starts), not from the full design: on toys at the truth their global
    fits equal the default batch_fit's (which test_default_fits_find_the_brute_force_minimum_on_toys
    checks against brute force), and a single start does not."""
    from nuejax.inference.construction import key_data
    from nuejax.inference.problem import FitProblem
    from nuejax.inference.toys import draw_parts, resample_flags, toy, toy_fits, toy_starts

    truth = nsi.parameters.values(**TRUTH)
    poi = ("eps_ee_L", "eps_etau_L_re")
    names = poi + tuple(n for n in nsi.parameters.free_names if n not in poi)
    pr = FitProblem.create(nsi, np.asarray(nsi.expected(truth)), names=names)
    n = 24  # one start ends wrong on 56 of the 100 recorded toys (docs/inference.md): >= n // 5 is safe
    gen_x = np.repeat(np.array([[float(truth[k]) for k in names]]), n, axis=0)
    design_g, design_c, idx = toy_starts(pr, gen_x, 2, DEFAULT_STARTS)
    assert design_g is not None and 4 <= design_g.shape[1] <= DEFAULT_STARTS, design_g.shape
    # the four images of u under Re ε_eτ → −Re ε_eτ and ε^L_ee → −2 g_L − ε^L_ee are in it
    assert len(np.unique(np.round(design_g[0][:, :2], 6), axis=0)) >= 4
    key, resample, parts = jax.random.PRNGKey(5), resample_flags(nsi, names), draw_parts(pr, gen_x)
    run = toy_fits(pr, jax.numpy.asarray(key_data(key)), gen_x, gen_x[:, :2], np.arange(n, dtype=np.uint32), k=2,
                   parts=parts, resample=resample, designs=(design_g, design_c), design_index=idx)
    drawn = [toy(nsi, truth, key, i, resample=resample, parts=parts) for i in range(n)]
    counts = np.stack([np.asarray(c) for c, _ in drawn])
    aux = jax.tree_util.tree_map(lambda *v: np.stack(v), *[a for _, a in drawn])
    ref = batch_fit(nsi, counts, aux=aux, names=names)
    one = batch_fit(nsi, counts, aux=aux, names=names, starts=1)
    assert np.sum(one.fval > ref.fval + 1e-3) >= n // 5  # the toys are multimodal
    assert np.all(run["conv_global"]) and np.all(ref.converged)
    np.testing.assert_allclose(run["f_global"], ref.fval, atol=1e-3)
