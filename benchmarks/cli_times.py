"""Wall time of the command-line jobs on this machine, each in a fresh process.

  python benchmarks/cli_times.py [--out benchmarks/results/cpu2_cli_times.json]

``nuejax rates`` (twice) and ``nuejax demo`` (default n_T = 2000) with an empty temporary tensor
cache (the first run on a machine), then again on that cache (every later run), with and without
the figures. The temporary cache folder is removed at the end.
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
               "rates_s": [_timed(exe + ["rates"], env) for _ in range(2)],
               "demo_uncached_s": _timed(exe + ["demo", "--no-plots", "--out", out_dir], env),
               "demo_cached_s": _timed(exe + ["demo", "--no-plots", "--out", out_dir], env),
               "demo_cached_with_plots_s": _timed(exe + ["demo", "--out", out_dir], env)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(out_dir, ignore_errors=True)
    text = json.dumps(res, indent=1)
    if a.out:
        Path(a.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
