"""The benchmarks' entry points: `python benchmarks/run.py --quick --json` prints its JSON contract (timings are
not asserted); `benchmarks/session.py` lists steps whose scripts exist; the manifests that `benchmarks/report.py`
reads name files that exist."""

import importlib.util
import json
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
#: The steps of the shell runners that session.py replaced: perf_session.sh, gpu_session.sh (paper,
#: float32) and limits_session.sh (toys on all devices, and on one).
OLD_RUNNER_STEPS = {"paper", "profile", "float32", "build", "floating", "floating200", "general", "trace", "dispatch",
                    "migrad", "blocks", "gridprobe", "scanconv", "fitoverhead", "toys", "toys1dev"}
#: What report.py reads of each machine.
REPORT_STEPS = {"cpu2": {"paper", "float32", "profile", "migrad", "fitoverhead", "build", "cli", "floating"},
                "h100": {"paper", "float32", "profile", "migrad", "fitoverhead", "build", "floating"}}


def _python(*args, timeout=120):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, check=True,
                          timeout=timeout, cwd=ROOT)


@pytest.mark.slow  # ~1 min: part of the slow job (README), keeps the default run well under 10 min
def test_quick_benchmark_json():
    out = subprocess.run([sys.executable, str(BENCH / "run.py"), "--quick", "--json"],
                         capture_output=True, text=True, check=True, timeout=600)
    d = json.loads(out.stdout)
    for key in ("ms_per_call_value", "ms_per_call_value_and_grad", "ms_per_call_fast", "evals_per_s_batched", "device"):
        assert key in d and d[key]
    assert d["dims"] == {"n_sig": 9, "n_lines": 3, "n_T": 200, "n_obs": 200, "n_E": 200, "n_bkg": 9, "n_r": 1000,
                         "n_free": 25}
    # the same parameter points give the same -2lnL whichever path: fast path agrees with general at the truth
    assert all(p["nll"] > 0 for p in d["agreement_points"])


def test_session_lists_steps_whose_scripts_exist():
    d = json.loads(_python(BENCH / "session.py", "--list", "--json").stdout)
    steps = d["steps"]
    for name, s in steps.items():
        assert (ROOT / s["script"]).is_file(), (name, s["script"])
        assert s["script"].startswith("benchmarks/")
    assert set(d["machines"]) == {"cpu2", "h100", "h100x2"}
    for machine, names in d["machines"].items():
        assert names and set(names) <= set(steps), machine
    assert OLD_RUNNER_STEPS <= set(steps)
    for machine, needed in REPORT_STEPS.items():  # a machine's default session writes what the report reads
        assert needed <= set(d["machines"][machine]), machine
    text = _python(BENCH / "session.py", "--list").stdout
    assert all(name in text for name in steps)


def test_session_dry_run_prints_the_default_commands(tmp_path):
    out = _python(BENCH / "session.py", "--machine", "h100", "--out", tmp_path / "s", "--dry-run").stdout
    d = json.loads(_python(BENCH / "session.py", "--list", "--json").stdout)
    lines = out.strip().splitlines()
    assert [ln.split(":")[0] for ln in lines] == d["machines"]["h100"]
    for ln in lines:
        name = ln.split(":")[0]
        assert d["steps"][name]["script"] in ln
    assert "h100_paper_float64.json" in out
    assert not (tmp_path / "s").exists()  # a dry run writes nothing


def test_session_step_time_limit_stops_the_process_group(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("benchmarks_session", BENCH / "session.py")
    session = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, session)  # dataclasses look their module up while it runs
    spec.loader.exec_module(session)
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); " \
           "print('started', flush=True); time.sleep(60)"
    res = session.run_step([sys.executable, "-c", code], None, tmp_path, tmp_path / "x.log", None, timeout=3)
    assert res["timed_out"] and res["returncode"] != 0 and res["wall_s"] < 30
    assert "started" in (tmp_path / "x.log").read_text()


def test_report_manifests_reference_existing_files():
    out = _python(BENCH / "report.py", "--check").stdout
    assert "results/manifest_cpu2.json" in out and "results/manifest_h100.json" in out
    paths = sorted((BENCH / "results").glob("manifest*.json")) + sorted((BENCH / "results").glob("*/manifest*.json"))
    assert paths
    seen = {}
    for p in paths:
        m = json.loads(p.read_text())
        for s in m["steps"]:
            assert s["outputs"] or s.get("skipped"), (p, s["name"])
            for f in s["outputs"]:
                assert (p.parent / f).is_file(), (p, s["name"], f)
            assert (ROOT / s["script"]).is_file(), (p, s["name"], s["script"])
            if not m.get("archived"):
                seen.setdefault(s.get("machine") or m["machine"], set()).add(s["name"])
    for machine, needed in REPORT_STEPS.items():
        assert needed <= seen.get(machine, set()), machine


def test_benchmark_scripts_compile(tmp_path):
    scripts = sorted(BENCH.glob("*.py")) + sorted(BENCH.glob("*/*.py"))
    assert {p.parent.name for p in scripts} >= {"benchmarks", "timings", "probes", "accuracy", "repro"}
    for i, p in enumerate(scripts):
        py_compile.compile(str(p), cfile=str(tmp_path / f"{i}.pyc"), doraise=True)
