"""Rows per CPU launch for toys too cheap to fit one after another (``CPU_CHEAP_CHUNK``).

  python benchmarks/probes/cheap_launch_probe.py 128 512 2048

For each size, in a fresh process: the one-bin Gaussian model of tests/limits_models.py,
``feldman_cousins`` at x0 = 1.7 on 20 grid points in [0, 4], a 1000-toy run first (compiles), then
the timed 20000-toy run with ``nuejax.inference.fitting.CPU_CHEAP_CHUNK`` set to the size. Prints
the seconds, the interval and whether the critical values equal the first size's bit for bit.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402,F401  (puts the repository root on sys.path too)

ONE = """
import json, sys, time
sys.path.insert(0, {tests!r})
import nuejax
nuejax.enable_x64()
import numpy as np
import nuejax.inference.fitting as fitting
fitting.CPU_CHEAP_CHUNK = {size}
from limits_models import gaussian_counts, gaussian_model
from nuejax.inference import feldman_cousins
m = gaussian_model()
grid = np.linspace(0, 4, 20)
feldman_cousins(m, gaussian_counts(m, 1.7), "mu", grid, 1000, key=5)
t0 = time.perf_counter()
r = feldman_cousins(m, gaussian_counts(m, 1.7), "mu", grid, 20000, key=5)
print(json.dumps(dict(size={size}, seconds=time.perf_counter() - t0, interval=list(r.interval),
                      t_crit=np.asarray(r.t_crit).tolist())))
"""


def main(sizes):
    tests = str(Path(__file__).resolve().parents[2] / "tests")
    first = None
    for size in sizes:
        out = subprocess.run([sys.executable, "-c", ONE.format(tests=tests, size=int(size))], capture_output=True,
                             text=True, check=True)
        rec = json.loads(out.stdout.strip().splitlines()[-1])
        first = first or rec["t_crit"]
        print(f"{rec['size']:6d} rows: {rec['seconds']:.1f} s, interval {rec['interval']}, "
              f"critical values as the first size's: {rec['t_crit'] == first}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["128", "512"])
