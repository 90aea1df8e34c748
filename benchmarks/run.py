"""Benchmark harness: time the "paper" workload (the benchmark of Sun, Ding, Sun and Zhou) on CPU or GPU.

  python benchmarks/run.py --quick --json        # reduced dimensions, < 1 min on 2 CPU cores
  python benchmarks/run.py --json --out r.json   # the paper workload (float64)
  python benchmarks/run.py --dtype float32 ...   # float32 (run in its own process)

Times are medians (with 16th-84th percentile spread) over >= 50 calls after warm-up; compile
time is reported apart. "value" is one -2 ln L call of the general path (recoil spectra with
P_ee recomputed from the oscillation parameters, reweighting/fold through the 9 kernels,
Poisson likelihood); "fast" is the fast path (oscillations fixed: 17 folded basis templates per
spectrum). "value_and_grad" differentiates ``model.nll(params, data)`` with respect to the parameter
dict (29 scalar arrays in, 29 out); "value_and_grad_vector" is the call the minimisers make
(``NLLCost``: the free parameters as one vector, the fixed ones packed in one array), which on a
GPU saves the host cost of the many small arrays. "floors" are measured in the same process: the
fold alone (``f @ K`` over the stacked kernels, value and value + gradient) and a trivial jitted
call. Agreement numbers (-2 ln L and gradient at fixed random points) are written so that
runs on different devices can be compared.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import call_stats as _stats  # noqa: E402  (puts the repository root on sys.path too)
from common import compile_time as _compile_time  # noqa: E402


def floors(model, n_calls: int) -> dict:
    """The floors a call is measured against, in the same process: the fold alone (``f @ K`` over
    the stacked kernels, (n_sig * n_T, n_obs), with a Poisson-like loss, value and value + gradient
    with respect to f: it reads the kernels once, twice with the gradient) and a trivial jitted
    call (host dispatch)."""
    import jax
    import jax.numpy as jnp

    from nuejax.model import KernelFold

    K = model.stage(KernelFold).kernels.reshape(-1, model.n_obs)
    f = jnp.ones(K.shape[0], dtype=K.dtype) * 1e-3
    n = jnp.ones(model.n_obs, dtype=K.dtype)

    def loss(f, K, n):
        mu = f @ K + 1.0
        return 2.0 * jnp.sum(mu - n * jnp.log(mu))

    x = jnp.ones((), dtype=K.dtype)
    return {"fold_shape": list(K.shape),
            "fold_value": _stats(jax.jit(loss), f, K, n, n=n_calls),
            "fold_value_and_grad": _stats(jax.jit(jax.value_and_grad(loss)), f, K, n, n=n_calls),
            "dispatch": _stats(jax.jit(lambda x: x + 1.0), x, n=max(n_calls, 200))}


def entry_ops(fn, *args) -> dict:
    """How many instructions (fusions, library calls, copies...) the compiled program's entry
    computation runs: on a GPU each is a kernel launch."""
    text = fn.lower(*args).compile().as_text()
    entry = text[text.index("ENTRY"):]
    entry = entry[:entry.index("\n}")]
    lines = [ln.strip() for ln in entry.splitlines()[1:] if "=" in ln]
    kinds = {}
    for ln in lines:
        m = re.search(r"\s([a-z][\w\-.]*)\(", " " + ln.split("=", 1)[1])
        op = m.group(1) if m else "?"
        kinds[op] = kinds.get(op, 0) + 1
    return {"total": len(lines), "by_op": dict(sorted(kinds.items(), key=lambda kv: -kv[1])[:12])}


def run(quick: bool, dtype_name: str, batch_sizes, n_calls: int, scan_points: int, do_fit: bool) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    if dtype_name == "float64":
        jax.config.update("jax_enable_x64", True)
    dtype = jnp.float64 if dtype_name == "float64" else jnp.float32
    import workload

    from nuejax.inference import fit, profile_scan
    from nuejax.model import fast_model

    out = {"dtype": dtype_name, "quick": quick}
    t0 = time.perf_counter()
    d = workload.QUICK_DIMS if quick else workload.PAPER_DIMS
    model = workload.build(dtype=dtype, **d)
    # the fast path bakes the oscillation parameters in: at their values, fixed
    fast = fast_model(model.with_parameters(model.parameters.fix("sin2_theta12", "dm2_21")))
    out["build_s"] = time.perf_counter() - t0
    out["dims"] = workload.dims(model)
    dev = jax.devices()[0]
    out["device"] = f"{dev.platform}:{getattr(dev, 'device_kind', '')}"
    out["jax_version"] = jax.__version__
    out["date"] = time.strftime("%Y-%m-%d")
    out["cpu_count_affinity"] = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    out["xla_flags"] = os.environ.get("XLA_FLAGS", "")

    truth = model.parameters.values(workload.INJECTED)
    data = model.asimov(truth)
    ftruth = {k: v for k, v in truth.items() if k in fast.parameters}

    # The models are arguments, not closures: their tensors stay device buffers (as in NLLCost)
    # instead of being compiled into the program as constants.
    nll = lambda m, p: m.nll(p, data)  # noqa: E731
    value = jax.jit(nll)
    vgrad = jax.jit(jax.value_and_grad(nll, argnums=1))
    out["compile_s"] = {"value": _compile_time(value, model, truth),
                        "value_and_grad": _compile_time(vgrad, model, truth),
                        "fast_value": _compile_time(value, fast, ftruth),
                        "fast_value_and_grad": _compile_time(vgrad, fast, ftruth)}
    out["value"] = _stats(value, model, truth, n=n_calls)
    out["floors"] = floors(model, n_calls)
    out["entry_ops_value_and_grad"] = entry_ops(vgrad, model, truth)
    out["value_and_grad"] = _stats(vgrad, model, truth, n=n_calls)
    # what the minimisers call: free parameters as one vector, fixed ones packed (NLLCost)
    from nuejax.inference.cost import NLLCost

    with warnings.catch_warnings():  # Asimov data are not integer counts, by design
        warnings.simplefilter("ignore")
        cost = NLLCost(model, data, fixed=truth)
    xv = jnp.asarray([float(truth[n]) for n in cost.names], dtype=dtype)
    out["compile_s"]["value_and_grad_vector"] = _compile_time(cost.device_value_and_grad, xv)
    out["value_and_grad_vector"] = _stats(cost.device_value_and_grad, xv, n=n_calls)
    out["fast_value"] = _stats(value, fast, ftruth, n=max(n_calls, 200))
    out["fast_value_and_grad"] = _stats(vgrad, fast, ftruth, n=max(n_calls, 200))

    # batched fast-path evaluations: one launch per batch
    rng = np.random.default_rng(0)
    batched = {}
    bfn = jax.jit(jax.vmap(nll, in_axes=(None, 0)))
    for B in batch_sizes:
        batch = {k: jnp.broadcast_to(v, (B,)) for k, v in ftruth.items()}
        batch["eps_ee_L"] = jnp.asarray(rng.normal(0.05, 0.02, B), dtype=dtype)
        batch["mu_nu"] = jnp.asarray(np.abs(rng.normal(3.0, 0.5, B)), dtype=dtype)
        c = _compile_time(bfn, fast, batch)
        st = _stats(bfn, fast, batch, n=max(5, n_calls // 5))
        batched[str(B)] = {"evals_per_s": B / (st["median_ms"] * 1e-3), "compile_s": c, **st}
    out["batched_fast"] = batched
    out["evals_per_s_batched"] = max(v["evals_per_s"] for v in batched.values())

    # agreement points: -2 ln L and gradient at fixed random parameter points (general path)
    pts = []
    for i in range(4):
        r = np.random.default_rng(100 + i)
        p = model.parameters.values(eps_ee_L=r.normal(0, 0.1), eps_ee_R=r.normal(0, 0.1), eps_tautau_L=r.normal(0, 0.1),
                                    eps_tautau_R=r.normal(0, 0.1), mu_nu=abs(r.normal(2, 1)),
                                    sin2_theta12=0.308 + r.normal(0, 0.01), dm2_21=7.49 + r.normal(0, 0.2))
        v, g = vgrad(model, p)
        pts.append({"nll": float(v), "grad": {k: float(x) for k, x in g.items() if k in model.parameters.free_names}})
    out["agreement_points"] = pts

    if do_fit:
        start = dict(workload.FIT_START)
        fit(model, data, start)  # compile
        t0 = time.perf_counter()
        r = fit(model, data, start)
        out["migrad_general_25"] = {"s": time.perf_counter() - t0, "nfcn": r.nfcn, "ngrad": r.ngrad, "valid": r.valid,
                                    "n_free": len(r.names), "eps_ee_L": r.values["eps_ee_L"], "mu_nu": r.values["mu_nu"]}
        fstart = {k: v for k, v in start.items() if k in fast.parameters}
        fit(fast, data, fstart)
        t0 = time.perf_counter()
        rf = fit(fast, data, fstart)
        out["migrad_fast_23"] = {"s": time.perf_counter() - t0, "nfcn": rf.nfcn, "ngrad": rf.ngrad, "valid": rf.valid,
                                 "n_free": len(rf.names)}
        grid = np.linspace(-0.05, 0.15, scan_points)
        profile_scan(fast, data, "eps_ee_L", grid, global_fit=rf)  # compile
        s = profile_scan(fast, data, "eps_ee_L", grid, global_fit=rf)
        out["scan_fast"] = {"points": scan_points, "s": s.seconds, "n_profiled": len(s.profiled),
                            "all_converged": bool(s.converged.all())}
    # headline keys of the issue
    out["ms_per_call_value"] = out["value"]["median_ms"]
    out["ms_per_call_value_and_grad"] = out["value_and_grad"]["median_ms"]
    out["ms_per_call_fast"] = out["fast_value"]["median_ms"]
    out["ms_per_call_value_and_grad_vector"] = out["value_and_grad_vector"]["median_ms"]
    fl = out["floors"]["fold_value_and_grad"]["median_ms"]
    out["ratio_value_and_grad_to_fold_floor"] = out["value_and_grad"]["median_ms"] / fl
    out["ratio_value_and_grad_vector_to_fold_floor"] = out["value_and_grad_vector"]["median_ms"] / fl
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="reduced dimensions (n_T=n_obs=n_E=200), < 1 min")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    ap.add_argument("--out", help="also write the JSON here")
    ap.add_argument("--no-fit", action="store_true", help="skip the MIGRAD fits and the scan")
    ap.add_argument("--fit", action="store_true", help="with --quick: also run the fits and the scan")
    ap.add_argument("--max-batch", type=int, default=100_000, help="largest batch size of the batched runs")
    args = ap.parse_args(argv)
    if args.quick:
        res = run(True, args.dtype, (1, 100, 10_000), n_calls=50, scan_points=50, do_fit=args.fit)
    else:
        sizes = tuple(b for b in (1, 10, 100, 1000, 10_000, 100_000) if b <= args.max_batch)
        res = run(False, args.dtype, sizes, n_calls=50, scan_points=200,
                  do_fit=not args.no_fit)
    text = json.dumps(res, indent=None if args.json else 2)
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=2))
    print(text)


if __name__ == "__main__":
    main()
