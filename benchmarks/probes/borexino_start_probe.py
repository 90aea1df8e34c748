"""Where a warm ``nuejax borexino`` spends the time outside its stages: the process's imports,
and its first stage (calibration and model, loaded from the on-disk cache), under cProfile.

  python benchmarks/probes/borexino_start_probe.py [--top 30] [--out FILE]

Run it after a ``nuejax borexino`` run has filled the cache folder (``NUEJAX_CACHE_DIR``).
Prints the import time and the stage's time, and the stage's profile by cumulative time. Sets
``XLA_FLAGS`` as the commands do (``nuejax.runtime.GPU_XLA_FLAGS``: on a GPU they are part of the
cache's key, and without them the stage would build instead of loading).
"""
import argparse
import cProfile
import io
import json
import pstats
import sys
import time

t_start = time.perf_counter()
import os  # noqa: E402

from nuejax.runtime import GPU_XLA_FLAGS  # noqa: E402  (XLA reads XLA_FLAGS when its backends start)

os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), *GPU_XLA_FLAGS]).strip()
import nuejax  # noqa: E402

nuejax.enable_x64()
from nuejax.cache import enable_compilation_cache  # noqa: E402

enable_compilation_cache()
from nuejax.analyses.borexino import Phase3Choices, borexino_phase3_model  # noqa: E402
from nuejax.analyses import borexino_run  # noqa: E402,F401  (what the command imports)

t_import = time.perf_counter() - t_start


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import jax

    pr = cProfile.Profile()
    t0 = time.perf_counter()
    pr.enable()
    model, data, cal = borexino_phase3_model(Phase3Choices())
    jax.block_until_ready(jax.tree_util.tree_leaves(model))
    pr.disable()
    t_stage = time.perf_counter() - t0
    t0 = time.perf_counter()
    borexino_phase3_model(Phase3Choices())
    t_again = time.perf_counter() - t0
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).sort_stats("cumulative").print_stats(a.top)
    out = {"import_s": t_import, "stage_1_s": t_stage, "stage_1_again_s": t_again, "device": str(jax.devices()[0]),
           "jax": jax.__version__, "profile": buf.getvalue()}
    print(json.dumps({k: v for k, v in out.items() if k != "profile"}))
    print(out["profile"])
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
