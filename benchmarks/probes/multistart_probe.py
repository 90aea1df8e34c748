"""Where a fit's multi-start launch goes (the paper workload, float64): the design's Newton
solves, their iterations and continuation launches, against one batched value-gradient-Hessian
and one batched eigh of the same size.

  python benchmarks/probes/multistart_probe.py [--repeat 3] [--quick] [--out FILE]

For the general path (25 free parameters) and the fast path (23): ``multistart`` from
``run.py``'s start with the default design, timed whole and per launch; the iterations of every
start; one start alone; and the per-iteration pieces (``value_grad_hessian`` vmapped over the
starts and over 64 rows, ``jnp.linalg.eigh`` of that many d × d matrices). ``--row-launch-min``
sets ``fitting.ROW_LAUNCH_MIN`` (the fewest rows of an accelerator's launch) for the run.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload
import common  # noqa: E402  (puts the repository root on sys.path too)


def _best_time(fn, repeat):
    import jax

    jax.block_until_ready(fn())
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None):
    ap = common.parser(__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true", help="workload.QUICK_DIMS instead of the paper's")
    ap.add_argument("--row-launch-min", type=int, default=None,
                    help="fitting.ROW_LAUNCH_MIN for this run (the fewest rows of an accelerator's launch)")
    a = ap.parse_args(argv)
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    import workload

    from nuejax.inference import fitting
    from nuejax.inference.problem import FitProblem
    from nuejax.inference.starts import start_design
    from nuejax.model import fast_model

    warnings.simplefilter("ignore")
    if a.row_launch_min is not None:
        fitting.ROW_LAUNCH_MIN = a.row_launch_min
    model = workload.build(**(workload.QUICK_DIMS if a.quick else workload.PAPER_DIMS))
    data = model.asimov(model.parameters.values(workload.INJECTED))
    fast = fast_model(model.with_parameters(model.parameters.fix("sin2_theta12", "dm2_21")))
    dev = jax.devices()[0]
    out = {"device": f"{dev.platform}: {getattr(dev, 'device_kind', '')}", "jax": jax.__version__,
           "date": time.strftime("%Y-%m-%d"), "paths": {}}
    for label, m in (("general", model), ("fast", fast)):
        start = {k: v for k, v in workload.FIT_START.items() if k in m.parameters}
        s = FitProblem.create(m, data, init=start)
        x0s = start_design(s, fitting.DEFAULT_STARTS)
        t0 = time.perf_counter()
        fitting.multistart(s)
        first = time.perf_counter() - t0
        fixed = jnp.zeros(0, dtype=s.values.dtype)
        with common.timed_solver_launches() as timed:
            t0 = time.perf_counter()
            best, n, minima, _ = fitting.multistart(s)
            whole = time.perf_counter() - t0
        launches = [seconds for seconds, _ in timed]
        res = fitting.solve_rows(s, x0s)
        t_one = _best_time(lambda: fitting.solve_rows(s, x0s[:1]), a.repeat)
        r_one = jax.tree_util.tree_map(lambda v: v[0], fitting.solve_rows(s, x0s[:1]))
        vgh = jax.jit(jax.vmap(lambda x, s: fitting.value_grad_hessian(x, (s, fixed)), in_axes=(0, None)))
        t_vgh = _best_time(lambda: vgh(jnp.asarray(x0s), s), a.repeat)
        x64 = jnp.asarray(np.resize(x0s, (64, x0s.shape[-1])))  # the design's starts repeated to 64 rows
        t_vgh64 = _best_time(lambda: vgh(x64, s), a.repeat)
        d = x0s.shape[-1]
        H = jnp.asarray(np.tile(np.eye(d) + 0.1, (len(x0s), 1, 1)))
        eigh = jax.jit(jnp.linalg.eigh)
        t_eigh = _best_time(lambda: eigh(H), a.repeat)
        row = {"n_starts": int(n), "n_free": int(d), "first_s": first, "multistart_s": whole,
               "launches_s": launches, "iterations": np.asarray(res.n_iter).tolist(),
               "status": np.asarray(res.status).tolist(), "one_start_s": t_one, "one_start_iterations": int(r_one.n_iter),
               "vgh_batched_ms": t_vgh * 1e3, "vgh_64_rows_ms": t_vgh64 * 1e3,
               "row_launch_min": fitting.ROW_LAUNCH_MIN, "eigh_batched_ms": t_eigh * 1e3, "best_fun": float(best.fun),
               "minima": len(minima)}
        out["paths"][label] = row
        print(label, json.dumps(row), flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
