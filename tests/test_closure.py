"""Closure of the reweighting against the direct continuum fold (paper Sec. VI.A targets)."""

import json

import numpy as np
import pytest

from nuejax.cli import main
from nuejax.validation.closure import CLOSURE_POINTS, closure_case, run_closure


@pytest.mark.slow
@pytest.mark.parametrize("case", ["nsi", "mm"])
def test_closure_targets_at_2000_bins(case):
    x, direct, rw, rw_sm, direct_sm = closure_case(2000, CLOSURE_POINTS[case])
    assert abs(rw.sum() - direct.sum()) / direct.sum() < 1e-6
    assert np.max(np.abs(rw / direct - 1)) < 1e-5
    np.testing.assert_allclose(rw_sm, direct_sm, rtol=1e-12)  # SM recovered by construction
    assert abs(direct.sum() / direct_sm.sum() - 1) > 0.05  # and the test point is a real change


@pytest.mark.slow  # in the slow job (README): keeps the default run under 10 min
def test_closure_converges_as_inverse_square_and_json(capsys, tmp_path, monkeypatch):
    result, _ = run_closure((25, 100, 400))
    assert -2.2 < result.slope_nsi < -1.8 and -2.2 < result.slope_mm < -1.8
    assert result.integral_deviation_mm[0] > result.integral_deviation_nsi[0]  # 1/T weight is steeper
    monkeypatch.chdir(tmp_path)  # figures go to ./nuejax_output of the folder the user is in
    assert main(["closure", "--json", "--n-T", "25,100"]) == 0
    figures = sorted(p.name for p in (tmp_path / "nuejax_output").iterdir())
    assert figures == ["closure_convergence.png", "closure_mm.png", "closure_nsi.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nuejax_output"]  # nothing in ./docs/figures
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"n_T", "integral_deviation_nsi", "integral_deviation_mm", "slope_nsi", "slope_mm",
                        "max_bin_residual_nsi", "max_bin_residual_mm"}
    assert out["n_T"] == [25, 100] and len(out["integral_deviation_mm"]) == 2
