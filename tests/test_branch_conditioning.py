"""Critical values conditioned on the branch (nuejax.inference.feldman_cousins, module docstring):
the classification of toys by the branch of their conditional fit, and the Feldman–Cousins
critical values recomputed by hand from a stored run's toys. Their coverage on the bimodal
physics models is measured in benchmarks/accuracy/coverage_bimodal.py (docs/inference.md)."""
import sys
from pathlib import Path

import numpy as np
import pytest

from nuejax.inference import cls_upper_limit, feldman_cousins
from nuejax.inference.construction import (branch_images, branch_selection, construction, critical_value,
                                           on_generating_branch, read_run)
from nuejax.inference.feldman_cousins import fc_assemble

sys.path.insert(0, str(Path(__file__).parent))
from limits_models import MirrorModel  # noqa: E402


def test_on_generating_branch_uses_the_bisector_in_the_moved_coordinates():
    gen = np.array([[0.0, 5.0, 1.0], [0.0, 5.0, 1.0]])
    # point 0: one image moving coordinate 0 to -1; point 1: also one moving coordinates 0 and 2
    images = np.full((2, 2, 3), np.nan)
    images[0, 0] = [-1.0, 5.0, 1.0]
    images[1, 0] = [-1.0, 5.0, 1.0]
    images[1, 1] = [-1.0, 5.0, -1.0]
    toys = np.array([[[-0.4, 9.0, 1.0], [-0.6, 5.0, 1.0], [-0.4, 5.0, -0.9]],
                     [[-0.4, 9.0, 1.0], [-0.6, 5.0, 1.0], [-0.4, 5.0, -0.9]]])
    own = on_generating_branch(gen, images, toys)
    # coordinate 1 is moved by no image: a far excursion there does not count
    np.testing.assert_array_equal(own[0], [True, False, True])
    # (-0.4, -0.9) is nearer to (-1, -1) than to (0, 1) in the two coordinates the image moves
    np.testing.assert_array_equal(own[1], [True, False, False])
    ok = np.array([[True, True, True], [False, True, True]])
    sel, fell_back = branch_selection(ok, gen, images, toys)
    np.testing.assert_array_equal(sel[0], [True, False, True])
    # no toy of point 1 is both valid and on its branch: the point falls back to its valid toys
    np.testing.assert_array_equal(sel[1], ok[1])
    np.testing.assert_array_equal(fell_back, [False, True])


def test_branch_images_move_nuisances_only_and_stay_in_bounds():
    m = MirrorModel.create()
    # with mu of interest, a is the nuisance the symmetry moves; with a of interest there is no image
    pr = construction(m, np.asarray(m.expected(m.parameters.values())), "mu", None, None)
    img = branch_images(pr, np.array([[1.0, 0.2], [1.0, 2.5]]))
    assert img.shape == (2, 1, 1)
    assert img[0, 0, 0] == -1.2  # -2c - a
    assert np.isnan(img[1, 0, 0])  # -3.5 lies outside a's bounds [-3, 3]
    pr_a = construction(m, np.asarray(m.expected(m.parameters.values())), "a", None, None)
    assert branch_images(pr_a, np.array([[0.2, 1.0]])).shape == (1, 0, 1)


@pytest.mark.slow
def test_feldman_cousins_critical_values_from_the_toys_on_the_branch(tmp_path):
    """A stored run's toys, classified by hand (|a_toy - a_gen| <= |a_toy - image|): the critical
    value and p-value of every point use the valid toys on the branch; without the conditioning,
    every valid toy."""
    m = MirrorModel.create()
    data = np.round(np.asarray(m.expected(m.parameters.values({"mu": 1.0, "a": -0.3}))))
    grid = [0.5, 1.0, 2.0]
    r = feldman_cousins(m, data, "mu", grid, 150, key=2, out=tmp_path / "run")
    config, st, res = read_run(tmp_path / "run")
    t = res["t"].reshape(3, 150)
    ok = (res["conv_global"] & res["conv_cond"]).reshape(3, 150)
    a_gen = st["gen_x"][:, 1]
    a_toy = res["nuis_hat"].reshape(3, 150)
    own = np.abs(a_toy - a_gen[:, None]) <= np.abs(a_toy - (-1.0 - a_gen)[:, None])
    # the test means something: at every point some valid toys cross to the other branch
    assert np.all(np.sum(ok & ~own, axis=1) > 0) and np.all(np.sum(ok & own, axis=1) > 0), np.sum(ok & ~own, axis=1)
    np.testing.assert_array_equal(r.n_branch, np.sum(ok & own, axis=1))
    np.testing.assert_array_equal(r.n_valid, np.sum(ok, axis=1))
    for k in range(3):
        assert r.t_crit[k] == critical_value(t[k][ok[k] & own[k]], 0.9)[0]
        assert r.p_values[k] == np.mean(t[k][ok[k] & own[k]] >= r.t_obs[k])
    assert "branch" in r.convention
    pooled = fc_assemble(dict(config, condition_on_branch=False), st, res, 0.0)
    assert pooled.n_branch is None and "branch" not in pooled.convention
    for k in range(3):
        assert pooled.t_crit[k] == critical_value(t[k][ok[k]], 0.9)[0]


def test_feldman_cousins_beside_cls_classifies_the_shared_toys(tmp_path):
    """``cls_upper_limit(..., feldman_cousins=True)``: the interval at each tested value uses that
    value's signal+background toys and at 0 the background-only toys fitted at 0 (the rows after
    the CLs rows), with the two-sided statistic (equal to the stored q~ where the best fit lies
    below the tested value, else the difference of the two minima) and the toys on the branch,
    classified here by hand from the stored run."""
    m = MirrorModel.create()
    data = np.round(np.asarray(m.expected(m.parameters.values({"mu": 1.0, "a": -0.3}))))
    grid, n = [0.5, 1.0, 2.0], 150
    r = cls_upper_limit(m, data, "mu", grid, n_toys=n, key=2, feldman_cousins=True, out=tmp_path / "run").feldman_cousins
    config, st, res = read_run(tmp_path / "run")
    g = len(grid)
    assert len(res["t"]) == (2 * g + 1) * n
    # the s+b toys value by value, then each background-only toy's rows together: at each value, then at 0
    by_toy = g * n + np.arange(n * (g + 1)).reshape(n, g + 1)
    rows = [by_toy[:, g]] + [np.arange(k * n, (k + 1) * n) for k in range(g)]
    tested = np.concatenate([[0.0], grid])
    a_gen = st["gen_x"][:, 1]
    for k, idx in enumerate(rows):
        f_c, f_g, mu_hat = res["f_cond"][idx], res["f_global"][idx], res["poi_hat"][idx, 0]
        t = np.maximum(f_c - np.minimum(f_g, f_c), 0.0)
        below = mu_hat <= tested[k]
        np.testing.assert_array_equal(t[below], res["t"][idx][below])  # q~ where it is not set to 0
        ok = res["conv_global"][idx] & res["conv_cond"][idx]
        a_toy = res["nuis_hat"][idx, 0]
        own = np.abs(a_toy - a_gen[k]) <= np.abs(a_toy - (-1.0 - a_gen[k]))
        assert r.n_branch[k] == np.sum(ok & own) and r.n_valid[k] == np.sum(ok)
        assert r.t_crit[k] == critical_value(t[ok & own], 0.9)[0], k
        assert r.p_values[k] == np.mean(t[ok & own] >= r.t_obs[k])
    assert np.any(res["poi_hat"][rows[1], 0] > 0.5)  # the test means something: q~ and t differ
    # the toys at 0 are the background-only toys (same index, same generating point): one global fit
    np.testing.assert_array_equal(res["f_global"][rows[0]], res["f_global"][by_toy[:, 0]])


@pytest.mark.slow
def test_coverage_conditions_each_toys_inner_toys_on_its_own_branch(monkeypatch):
    """coverage(inner_toys=...) hands each coverage toy's own conditional nuisances and their
    image (a -> -2c - a) to the selection, and its critical values differ from the pooled ones
    where inner toys cross; with condition_on_branch=False the pooled ones are the result's."""
    import importlib

    from nuejax.inference import coverage

    cov_mod = importlib.import_module("nuejax.inference.coverage")  # the package's name is the function

    seen = {}
    real = cov_mod.branch_selection

    def spy(ok, gen_nuis, images, nuis_hat):
        seen.update(ok=ok, gen=gen_nuis, images=images, nuis_hat=nuis_hat)
        return real(ok, gen_nuis, images, nuis_hat)

    monkeypatch.setattr(cov_mod, "branch_selection", spy)
    m = MirrorModel.create()
    truth = {"mu": 1.0, "a": -0.3}
    c = coverage(m, truth, "mu", 12, key=1, inner_toys=60)
    np.testing.assert_array_equal(seen["gen"], c.nuisance_hat)
    img = -1.0 - c.nuisance_hat[:, 0]
    inside = (img >= -3.0) & (img <= 3.0)
    np.testing.assert_allclose(seen["images"][inside, 0, 0], img[inside], rtol=0, atol=1e-12)
    assert seen["nuis_hat"].shape == (12, 60, 1)
    own = np.abs(seen["nuis_hat"][..., 0] - c.nuisance_hat[:, :1]) <= np.abs(seen["nuis_hat"][..., 0] - img[:, None])
    assert np.any(seen["ok"] & ~own) and np.any(c.t_crit != c.t_crit_pooled)
    monkeypatch.setattr(cov_mod, "branch_selection", real)
    pooled = coverage(m, truth, "mu", 12, key=1, inner_toys=60, condition_on_branch=False)
    assert pooled.t_crit_pooled is None
    np.testing.assert_array_equal(pooled.t_crit, c.t_crit_pooled)
