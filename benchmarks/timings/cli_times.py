"""Wall time of the command-line jobs on this machine, each in a fresh process.

  python benchmarks/timings/cli_times.py [--out benchmarks/results/cpu2_cli_times.json]

``import nuejax.cli`` (twice), ``nuejax rates`` (twice) and ``nuejax demo`` (default n_T = 2000)
with an empty temporary tensor cache (the first run on a machine), then again on that cache (every
later run), with and without the figures; for the demo runs without figures, the demo's own split
of its time (build, fit, scans, the rest) from its summary.json. The temporary cache folder is
removed at the end.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _timed(cmd, env) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _stages(out_dir, wall: float) -> dict:
    """The demo's own split of its time (its summary.json), and the rest of the process's wall time
    (the interpreter, imports, the backend's start)."""
    s = json.loads((Path(out_dir) / "summary.json").read_text())
    scans = sum(s["scan_seconds"].values())
    return {"build_s": s["build_seconds"], "fit_s": s["fit_seconds"], "scans_s": scans,
            "other_in_demo_s": s["total_seconds"] - s["build_seconds"] - s["fit_seconds"] - scans,
            "outside_demo_s": wall - s["total_seconds"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    exe = [sys.executable, "-m", "nuejax.cli"]
    folder = tempfile.mkdtemp(prefix="nuejax-cli-cache-")
    out_dir = tempfile.mkdtemp(prefix="nuejax-cli-out-")
    env = {**os.environ, "NUEJAX_CACHE_DIR": folder}
    try:
        res = {"date": datetime.date.today().isoformat(), "cpu_count": os.cpu_count(),
               "load_average_start": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
               "import_s": [_timed([sys.executable, "-c", "import nuejax.cli"], env) for _ in range(2)],
               "rates_s": [_timed(exe + ["rates"], env) for _ in range(2)],
               "demo_uncached_s": _timed(exe + ["demo", "--no-plots", "--out", out_dir], env)}
        res["demo_uncached_stages"] = _stages(out_dir, res["demo_uncached_s"])
        res["demo_cached_s"] = _timed(exe + ["demo", "--no-plots", "--out", out_dir], env)
        res["demo_cached_stages"] = _stages(out_dir, res["demo_cached_s"])
        res["demo_cached_with_plots_s"] = _timed(exe + ["demo", "--out", out_dir], env)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(out_dir, ignore_errors=True)
    text = json.dumps(res, indent=1)
    if a.out:
        Path(a.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
