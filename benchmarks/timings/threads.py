"""CPU thread scaling of the paper workload: run.py pinned to 1, 2, ... cores with ``taskset``.

  python benchmarks/timings/threads.py                 # every core count up to the machine's
  python benchmarks/timings/threads.py --threads 1 2   # chosen counts

Each count runs ``run.py --no-fit`` in its own process, pinned with ``taskset -c 0-(t-1)`` and with
``XLA_FLAGS="--xla_cpu_multi_thread_eigen=<t>1> intra_op_parallelism_threads=<t>"`` (the flags are
recorded in the JSON), and writes ``cpu_threads<t>_float64.json`` into ``--out-dir`` (default
``benchmarks/results``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402
from common import BENCH, RESULTS  # noqa: E402


def xla_flags(threads: int) -> str:
    multi = "true" if threads > 1 else "false"
    return f"--xla_cpu_multi_thread_eigen={multi} intra_op_parallelism_threads={threads}"


def main(argv=None):
    n_cpu = len(os.sched_getaffinity(0))
    ap = common.parser(__doc__)
    ap.add_argument("--threads", type=int, nargs="*", default=list(range(1, n_cpu + 1)))
    ap.add_argument("--max-batch", type=int, default=10_000)
    ap.add_argument("--out-dir", type=Path, default=RESULTS, help="where the JSON files go (default benchmarks/results)")
    args = ap.parse_args(argv)
    if shutil.which("taskset") is None:
        sys.exit("taskset not found (util-linux): cannot pin threads")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for t in args.threads:
        if not 1 <= t <= n_cpu:
            sys.exit(f"--threads {t}: this machine has {n_cpu} usable cores")
        out = args.out_dir / f"cpu_threads{t}_float64.json"
        env = dict(os.environ, XLA_FLAGS=xla_flags(t), JAX_PLATFORMS="cpu")
        cmd = ["taskset", "-c", f"0-{t - 1}", sys.executable, str(BENCH / "run.py"), "--no-fit",
               "--max-batch", str(args.max_batch), "--out", str(out)]
        print(" ".join(cmd), f"(XLA_FLAGS={env['XLA_FLAGS']})", flush=True)
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        print(f"  -> {out}", flush=True)


if __name__ == "__main__":
    main()
