"""``nuejax limits`` end to end in a fresh process (slow job). Its own module, so that the slow
job's workers take it beside tests/test_limits.py."""
import json
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_nuejax_limits_end_to_end(tmp_path):
    # in a fresh process, as a user runs it (and away from the long-lived test worker: see
    # tests/test_demo.py)
    run = subprocess.run([sys.executable, "-m", "nuejax", "limits", "--n-T", "50", "--toys", "20", "--grid", "3",
                          "--json", "--no-plots", "--out", str(tmp_path)], capture_output=True, text=True,
                         timeout=3000)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout)
    assert out["complete"] and out["toys_valid_fraction"] > 0.95
    lo, hi = out["mu_nu_fc_interval_90"]
    assert lo == 0.0 and hi > 0
    assert (tmp_path / "fc_mu_nu" / "manifest.json").exists() and (tmp_path / "summary.json").exists()
