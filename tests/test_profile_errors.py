"""Profile-likelihood (MINOS-like) errors from batched refits (nuejax.inference.profile_errors),
against iminuit's MINOS (an independent minimiser and crossing search), against the crossings of
a fine profile scan where the profile is far from a parabola, and at a bound."""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chi2

from nuejax.errors import ParameterError
from nuejax.inference import fit, newton_fit, profile_errors, profile_scan

sys.path.insert(0, str(Path(__file__).parent))
from test_impacts import _data, _model  # noqa: E402


def _quiet(f, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*a, **k)


@pytest.mark.slow
def test_profile_errors_equal_minuit_minos():
    pytest.importorskip("iminuit")
    m = _model(0.1)
    m = m.with_parameters(m.parameters.fix("flat"))  # nothing on a bound: MINOS runs on every parameter
    n = _data(m, 3)
    ours = profile_errors(m, n, newton_fit(m, n))
    ref = _quiet(fit, m, n, minos=True)
    assert ref.valid and ref.minos
    for name in ours.names:
        err = ours.errors[name]
        for a, b in zip(ours.minos[name], ref.minos[name]):
            assert a == pytest.approx(b, abs=3e-3 * err), name
    d = ours.diagnostics["profile_errors"]
    assert d["not_converged"] == [] and d["launches"] <= 6


@pytest.mark.slow
def test_profile_errors_follow_an_asymmetric_profile_to_its_crossings():
    """Few events: the profile of mu is not a parabola (upper error 9 % above the lower, both 4 %
    off the Hessian error)."""
    m = _model(0.05)
    m = m.with_parameters(m.parameters.fix("flat"))
    n = _data(m, 5)
    best = newton_fit(m, n)
    ours = profile_errors(m, n, best, names=("mu",))
    lo, hi = ours.minos["mu"]
    mu, err = best.values["mu"], best.errors["mu"]
    grid = np.linspace(max(0.0, mu - 3 * err), mu + 4 * err, 561)
    scan = _quiet(profile_scan, m, n, "mu", grid, global_fit=best)
    iv = scan.interval(float(chi2.cdf(1.0, 1)))  # the Delta chi2 = 1 crossings
    step = grid[1] - grid[0]
    assert mu + lo == pytest.approx(iv.lower, abs=0.05 * step) and mu + hi == pytest.approx(iv.upper, abs=0.05 * step)
    assert hi / -lo > 1.05 and -lo < 0.97 * err < 0.97 * hi  # not the Hessian's symmetric error
    assert set(ours.minos) == {"mu"}


@pytest.mark.slow
def test_a_side_without_a_crossing_inside_the_bounds_is_none():
    m = _model(0.1)
    ps = m.parameters.fix("flat").update("scale", lower=-0.05)  # the constraint's sigma is 0.1
    m = m.with_parameters(ps)
    n = _data(m, 3)
    best = newton_fit(m, n)
    assert "scale" not in best.at_bound
    r = profile_errors(m, n, best, names=("scale", "b1"))
    lo, hi = r.minos["scale"]
    assert lo is None and hi == pytest.approx(best.errors["scale"], rel=0.05)
    assert r.diagnostics["profile_errors"]["no_crossing_in_bounds"] == ["scale-"]
    assert all(v is not None for v in r.minos["b1"])


@pytest.mark.slow
def test_profile_errors_refuse_an_invalid_fit_and_unknown_names():
    import dataclasses

    m = _model(0.1)
    n = _data(m, 3)
    best = newton_fit(m, n)
    with pytest.raises(ParameterError, match="not valid"):
        profile_errors(m, n, dataclasses.replace(best, valid=False, reason="test"))
    with pytest.raises(ParameterError, match="not fitted"):
        profile_errors(m, n, best, names=("nope",))


def test_minuit_minos_after_an_invalid_migrad_says_so_instead_of_raising():
    """A parameter on its bound leaves MIGRAD invalid and the Newton solver finishes the fit;
    MINOS then needs MINUIT's own valid minimum (iminuit raised RuntimeError before)."""
    pytest.importorskip("iminuit")
    m = _model(0.1)
    n = _data(m, 3)
    r = _quiet(fit, m, n, minos=True)
    assert r.valid and "flat" in r.at_bound
    assert r.minos is not None or "MINOS not run" in r.reason
    if r.minos is not None:  # MIGRAD from the solver's end point was valid: MINOS equals the batched errors
        ours = profile_errors(m, n, r)
        for name, (lo, hi) in r.minos.items():
            assert lo == pytest.approx(ours.minos[name][0], abs=3e-3 * r.errors[name]), name
