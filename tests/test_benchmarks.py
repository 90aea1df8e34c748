"""`python benchmarks/run.py --quick --json` runs and prints its JSON contract (timings are not asserted)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # ~1 min: part of the slow job (README), keeps the default run well under 10 min
def test_quick_benchmark_json():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--json"],
                         capture_output=True, text=True, check=True, timeout=600)
    d = json.loads(out.stdout)
    for key in ("ms_per_call_value", "ms_per_call_value_and_grad", "ms_per_call_fast", "evals_per_s_batched", "device"):
        assert key in d and d[key]
    assert d["dims"] == {"n_sig": 9, "n_lines": 3, "n_T": 200, "n_obs": 200, "n_E": 200, "n_bkg": 9, "n_r": 1000,
                         "n_free": 25}
    # the same parameter points give the same -2lnL whichever path: fast path agrees with general at the truth
    assert all(p["nll"] > 0 for p in d["agreement_points"])
