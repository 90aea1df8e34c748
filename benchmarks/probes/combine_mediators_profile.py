"""Where the time of ``nuejax combine``'s mediator stage goes once its programs are compiled.

    python benchmarks/probes/combine_mediators_profile.py [--out FILE] [--top N]

Builds the combination's models (stage 1 of ``nuejax.analyses.combine_run``), runs the mediator
stage (stage 4: each experiment's and the combination's curves at the command's masses) once to
compile, then again under cProfile: the wall time of each model's curves and the functions with the
most cumulative time, so that the stage's host-side work and its launches can be told apart. On
the package's cache folder, with JAX's persistent compilation cache as the command has it.
"""
import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common
import common  # noqa: E402, F401  (puts the repository root on sys.path too)

import nuejax  # noqa: E402

nuejax.enable_x64()
import nuejax.cache  # noqa: E402

nuejax.cache.enable_compilation_cache()

import jax  # noqa: E402

from nuejax.analyses import combine_run  # noqa: E402
from nuejax.analyses._clock import StageClock  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None)
    ap.add_argument("--top", type=int, default=40)
    a = ap.parse_args(argv)
    say = StageClock()  # the stage splits its models' work with say.branch()
    t0 = time.perf_counter()
    models, data, calibration = combine_run._models(say)
    out = {"device": str(jax.devices()[0]), "jax": jax.__version__, "models_s": time.perf_counter() - t0}
    t0 = time.perf_counter()
    combine_run._mediator_curves(data, combine_run.MASSES, calibration, say, False)
    out["first_s"] = time.perf_counter() - t0
    stamp = StageClock()
    prof = cProfile.Profile()
    t1 = time.perf_counter()
    prof.enable()
    combine_run._mediator_curves(data, combine_run.MASSES, calibration, stamp, False)
    prof.disable()
    out["warm_s"] = time.perf_counter() - t1
    out["lines"] = stamp.timed_lines()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(a.top)
    out["profile"] = buf.getvalue()
    print(json.dumps({k: v for k, v in out.items() if k != "profile"}, indent=1))
    print(out["profile"])
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
