"""nuejax._internal.stats: the distribution functions taken from scipy.special equal scipy.stats'
to the last bit, the Sobol points are scipy's, and a process whose design is cached does not
import scipy.stats (1.4 s of every command's start, nuejax._internal.stats)."""

import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from nuejax._internal import stats as ns


@pytest.mark.parametrize("ndof", [1, 2, 3, 7])
def test_chi2_equals_scipy_stats(ndof):
    p = np.array([0.1, 0.5, 0.68, 0.8, 0.9, 0.95, 0.99, 0.999999])
    np.testing.assert_array_equal(ns.chi2_ppf(p, ndof), stats.chi2.ppf(p, ndof))
    x = np.array([0.0, 1e-3, 0.5, 2.705543454095404, 10.0, 300.0])
    np.testing.assert_array_equal(ns.chi2_sf(x, ndof), stats.chi2.sf(x, ndof))


def test_normal_equals_scipy_stats():
    x = np.array([-40.0, -8.0, -2.0, -1.0, 0.0, 0.3, 1.0, 2.0, 8.0, 40.0])
    np.testing.assert_array_equal(ns.norm_cdf(x), stats.norm.cdf(x))
    np.testing.assert_array_equal(ns.norm_sf(x), stats.norm.sf(x))
    assert ns.norm_sf(20.0) > 1e-90  # the tail without cancellation (1 - Φ would be 0)


@pytest.mark.parametrize("d,power,seed", [(1, 3, 0), (2, 2, 0), (3, 1, 5)])
def test_sobol_points_are_scipys_and_cached(d, power, seed, monkeypatch):
    ref = stats.qmc.Sobol(d=d, scramble=True, seed=seed).random_base2(power)
    np.testing.assert_array_equal(ns.sobol_points(d, power, seed), ref)
    ns._sobol_points.cache_clear()  # the on-disk entry now
    got = ns.sobol_points(d, power, seed)
    np.testing.assert_array_equal(got, ref)
    got[:] = -1.0  # a caller's copy: the next call is not changed by it
    np.testing.assert_array_equal(ns.sobol_points(d, power, seed), ref)
    monkeypatch.setenv("NUEJAX_CACHE", "0")
    ns._sobol_points.cache_clear()
    np.testing.assert_array_equal(ns.sobol_points(d, power, seed), ref)
    ns._sobol_points.cache_clear()


def test_a_process_with_a_cached_design_does_not_import_scipy_stats():
    ns.sobol_points(1, 3, 0)  # stored in this run's cache folder, which the subprocess shares
    code = ("import sys; import nuejax; nuejax.enable_x64(); from nuejax._internal import stats as s; from nuejax.inference import intervals, cls; "
            "s.sobol_points(1, 3, 0); intervals.two_sided_threshold(0.9); cls.asymptotic_cls(1.0, 2.0); "
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, JAX_PLATFORMS="cpu"), capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"
