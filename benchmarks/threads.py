"""CPU thread scaling of the paper workload: run.py pinned to 1, 2, ... cores with ``taskset``.

  python benchmarks/threads.py                 # every core count up to the machine's
  python benchmarks/threads.py --threads 1 2   # chosen counts

Each count runs ``run.py --no-fit`` in its own process, pinned with ``taskset -c 0-(t-1)`` and with
``XLA_FLAGS="--xla_cpu_multi_thread_eigen=<t>1> intra_op_parallelism_threads=<t>"`` (the flags are
recorded in the JSON), and writes ``benchmarks/results/cpu_threads<t>_float64.json``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def xla_flags(threads: int) -> str:
    multi = "true" if threads > 1 else "false"
    return f"--xla_cpu_multi_thread_eigen={multi} intra_op_parallelism_threads={threads}"


def main(argv=None):
    n_cpu = len(os.sched_getaffinity(0))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="*", default=list(range(1, n_cpu + 1)))
    ap.add_argument("--max-batch", type=int, default=10_000)
    args = ap.parse_args(argv)
    if shutil.which("taskset") is None:
        sys.exit("taskset not found (util-linux): cannot pin threads")
    for t in args.threads:
        if not 1 <= t <= n_cpu:
            sys.exit(f"--threads {t}: this machine has {n_cpu} usable cores")
        out = HERE / "results" / f"cpu_threads{t}_float64.json"
        env = dict(os.environ, XLA_FLAGS=xla_flags(t), JAX_PLATFORMS="cpu")
        cmd = ["taskset", "-c", f"0-{t - 1}", sys.executable, str(HERE / "run.py"), "--no-fit",
               "--max-batch", str(args.max_batch), "--out", str(out)]
        print(" ".join(cmd), f"(XLA_FLAGS={env['XLA_FLAGS']})", flush=True)
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        print(f"  -> {out}", flush=True)


if __name__ == "__main__":
    main()
