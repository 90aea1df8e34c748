"""Where the toy stage of ``nuejax xenonnt`` spends its time: the stage's two constructions (CLs
with toys, Feldman–Cousins of μ_ν; as ``nuejax.analyses.xenonnt_run``) run twice in one process,
the first (with ``--profile`` under cProfile: tracing, loading, host work), the second in-process
warm. Under cProfile a first run on empty caches did not finish in 150 s on one H200 (2026-11-30):
time without it.

    python benchmarks/probes/xenonnt_toys_probe.py [--toys 100] [--json FILE] [--top 30] [--launch-min N] [--profile]

Prints each run's times and the first run's functions by cumulative and by own time.
``--launch-min``: ``nuejax.inference.runner.ACCELERATOR_LAUNCH_MIN`` for the run (on an
accelerator, a value of at least the chunk, e.g. 16384, pads every launch to the full chunk, as
before the setting existed).
"""
import argparse
import cProfile
import io
import json
import pstats
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common
import common  # noqa: E402, F401  (puts the repository root on sys.path)

import jax  # noqa: E402
import numpy as np  # noqa: E402

import nuejax  # noqa: E402
from nuejax.cache import enable_compilation_cache  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--toys", type=int, default=100)
    ap.add_argument("--json", default=None)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--launch-min", type=int, default=None)
    ap.add_argument("--profile", action="store_true", help="the first run under cProfile")
    a = ap.parse_args()
    from nuejax.inference import runner
    if a.launch_min is not None:
        runner.ACCELERATOR_LAUNCH_MIN = a.launch_min
    nuejax.enable_x64()
    enable_compilation_cache()
    from nuejax.analyses.xenonnt import xenonnt_sr0_model
    from nuejax.analyses.xenonnt_run import MU_TEST
    from nuejax.inference import cls_upper_limit, feldman_cousins
    from nuejax.model.fast import fast_model

    warnings.simplefilter("ignore", RuntimeWarning)
    model, data = xenonnt_sr0_model()
    m = fast_model(model).release("mu_nu")
    key = jax.random.PRNGKey(0)
    out = {"device": jax.devices()[0].device_kind, "jax": jax.__version__, "toys": a.toys,
           "launch_min": runner.ACCELERATOR_LAUNCH_MIN, "runs": []}
    for run in range(2):
        prof = cProfile.Profile() if run == 0 and a.profile else None
        if prof:
            prof.enable()
        t0 = time.perf_counter()
        cls = cls_upper_limit(m, data, "mu_nu", MU_TEST, n_toys=a.toys, key=key)
        t1 = time.perf_counter()
        fc = feldman_cousins(m, data, "mu_nu", np.concatenate([[0.0], MU_TEST]), a.toys, key=jax.random.fold_in(key, 1))
        t2 = time.perf_counter()
        if prof:
            prof.disable()
            for order in ("cumulative", "tottime"):
                s = io.StringIO()
                pstats.Stats(prof, stream=s).sort_stats(order).print_stats(a.top)
                print(s.getvalue(), flush=True)
                out[f"profile_{order}"] = s.getvalue()
        r = {"cls_s": t1 - t0, "fc_s": t2 - t1, "cls_limit_sb": cls.limit_sb, "fc_interval": list(fc.interval)}
        print(json.dumps(r), flush=True)
        out["runs"].append(r)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
