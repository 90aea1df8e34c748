"""A small Feldman–Cousins run as a separate process (sharding, resume and merge tests).

    python tests/limits_run.py OUT [--shard i/n] [--chunk N] [--resume] [--json FILE]
"""
import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import nuejax  # noqa: E402

nuejax.enable_x64()

import numpy as np  # noqa: E402

from limits_models import CountingModel  # noqa: E402

GRID = np.array([0.0, 0.5, 1.0, 1.5])
N_TOYS = 96


def problem():
    # the shape of test_limits.mu_model: in-process runs share its traced kernels
    m = CountingModel.create(np.full(10, 100.0), np.linspace(1.0, 10.0, 10), poi="mu_nu", power=2, sigma_b=0.05)
    data = np.asarray(m.expected({"mu_nu": 0.7, "norm_b": 1.0})).round()
    return m, data


def run(out=None, shard=None, chunk=128, resume=False, progress=False):
    from nuejax.inference import feldman_cousins

    m, data = problem()
    return feldman_cousins(m, data, "mu_nu", GRID, N_TOYS, key=11, out=out, shard=shard, chunk=chunk, resume=resume,
                           progress=progress)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--shard")
    ap.add_argument("--chunk", type=int, default=128)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    progress = True
    if os.environ.get("LIMITS_RUN_CHUNK_PAUSE"):  # the resume test: a long run, so that a kill lands mid-way
        from nuejax.inference.runner import Progress

        class Slow(Progress):
            def update(self, n, computed=True):
                super().update(n, computed)
                time.sleep(float(os.environ["LIMITS_RUN_CHUNK_PAUSE"]))

        progress = Slow(len(GRID) * N_TOYS, "limits_run")
    r = run(a.out, a.shard, a.chunk, a.resume, progress=progress)
    if a.json:
        import jax

        payload = {"devices": len(jax.devices()), "result": None if r is None else r.to_dict()}
        Path(a.json).write_text(json.dumps(payload))
