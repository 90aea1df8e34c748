"""The Neyman constructions on several XLA:CPU devices (virtual: ``--xla_force_host_platform_device_count``),
each in a subprocess with a time limit: the Feldman–Cousins case that hung on four devices
(benchmarks/repro/fc_multidevice.py: μ_ν on the fast path of a three-signal, four-background
model, 7 grid points, 64 toys) finishes on 1, 2 and 4 devices with the same numbers. The runs on 1
and 2 devices share the model through the on-disk cache (the device count is not part of its key,
nuejax.cache.environment); the run on 4 builds it afresh, and it must be the same bit for bit."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "repro" / "fc_multidevice.py"


def _run(n_dev: int, fresh: bool = False) -> dict:
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={n_dev}".strip()
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=flags)
    if fresh:
        env["NUEJAX_CACHE"] = "0"
    # a hang shows as the time limit (all threads idle): one device takes about a minute
    out = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=420)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_feldman_cousins_on_one_two_and_four_cpu_devices():
    runs = {n: _run(n, fresh=n == 4) for n in (1, 2, 4)}
    for n, r in runs.items():
        assert r["devices"] == n
    ref = runs[1]
    assert runs[4]["model_digest"] == ref["model_digest"]  # built on 4 devices, not loaded
    for n in (2, 4):
        assert runs[n]["interval"] == ref["interval"], (n, runs[n]["interval"], ref["interval"])
        np.testing.assert_allclose(runs[n]["t_crit"], ref["t_crit"], rtol=1e-9, atol=1e-12)
