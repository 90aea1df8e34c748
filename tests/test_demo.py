"""The main job: `nuejax demo --json` (reduced recoil grid to keep the test quick)."""

import json

import pytest

from nuejax.cli import main


def test_demo_json_recovers_injection_and_writes_outputs(tmp_path, capsys):
    assert main(["demo", "--json", "--n-T", "300", "--outdir", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("eps_ee_L_hat", "eps_ee_L_interval_90", "mu_nu_hat", "mu_nu_interval_90", "ms_per_call", "device"):
        assert key in out
    assert out["eps_ee_L_hat"] == pytest.approx(0.05, abs=0.01 * out["eps_ee_L_error"])
    assert out["mu_nu_hat"] == pytest.approx(3.0, abs=0.01 * out["mu_nu_error"])
    lo, hi = out["eps_ee_L_interval_90"]
    assert lo < 0.05 < hi
    lo, hi = out["mu_nu_interval_90"]
    assert lo < 3.0 < hi
    assert out["fast_vs_general_max_rel_diff"] < 1e-12
    assert out["ms_per_call"] > 0 and out["device"].startswith("cpu")
    assert json.loads((tmp_path / "summary.json").read_text())["eps_ee_L_hat"] == out["eps_ee_L_hat"]
    for f in ("spectrum.png", "profile_eps_ee_L.png", "profile_mu_nu.png"):
        assert (tmp_path / f).stat().st_size > 10_000
