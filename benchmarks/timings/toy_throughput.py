"""Toy-fit throughput of the Neyman constructions, and belt wall times, on every visible device.

    python benchmarks/timings/toy_throughput.py [--n-T 300] [--rows N] [--belt1 50x1000] [--belt2 20x20x500]
                                        [--devices K] [--starts S] [--no-belts] [--belt-repeat R]
                                        [--profile DIR] [--no-throughput] [--compilation-cache DIR]
                                        [--passes default|one] [--json FILE]

Model: the default Borexino-like model's fast path with mu_nu released (the μ_ν construction of
``nuejax limits``: 14 fitted parameters). One *row* is one toy drawn on the device and fitted
twice (globally and with μ_ν fixed), so toy fits/s = 2 × rows/s. Timed after a warm-up launch of
the same shapes (compilation reported separately), inputs sharded over the first ``--devices``
devices (default: all). Belts: ``feldman_cousins`` end to end (fits to the data, toys, critical
values) on an N-point μ_ν grid with M toys per point (1-D) and an Nx × Ny (ε^L_ee, ε^R_ee) grid (2-D).
``--starts S``: every fit from the multi-start design of S starts (nuejax.inference.starts; the
library's default is DEFAULT_STARTS, 1 is the single start at the generating point); a toy fit is
still one fit of one toy, however many starts it ran. ``--belt-repeat R`` runs each belt R times
(the first compiles, the later ones are warm; each time is reported); ``--profile DIR`` writes a
cProfile summary of each belt's last run (host-side time by function) to DIR.
``--passes one`` times the throughput launches in one uncapped pass (``toys.CPU_PASSES``, which
an accelerator runs for a construction of at most ``toys.ONE_PASS_ROWS`` toys) instead of the
capped first pass of a large run. ``--no-throughput`` skips the throughput launches (the belts then compile their own programs);
``--compilation-cache DIR`` switches on JAX's persistent compilation cache in DIR
(:func:`nuejax.cache.enable_compilation_cache`, as the commands do): a second process with the
same DIR loads the programs instead of compiling them.
"""
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402  (puts the repository root on sys.path too)

import nuejax  # noqa: E402

nuejax.enable_x64()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402


def throughput(a, pr, m, devs, rows, cpu) -> dict:
    """Toy fits per second: ``--repeat`` timed series of launches of the compiled shape."""
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from nuejax.inference.construction import observed_fits
    from nuejax.inference.fitting import launch_size
    from nuejax.inference.toys import CPU_PASSES, draw_parts, passes, toy_fits, toy_starts

    # the passes of a run of any size (the accelerators' capped first pass), or one uncapped pass
    scheme = CPU_PASSES if a.passes == "one" else passes()
    st = observed_fits(pr, np.array([[0.0], [2.0]]), max_iter=100, one_sided=False)
    parts = draw_parts(pr.full, st["gen_x"])
    design_g, design_c, design_idx = toy_starts(pr.full, st["gen_x"], len(pr.poi), a.starts)
    n_starts = 1 if design_g is None else int(design_g.shape[1])
    key = jax.random.PRNGKey(0)
    mesh = Mesh(np.asarray(devs), ("rows",))
    shard = NamedSharding(mesh, PartitionSpec("rows"))
    per = launch_size(1 << 30, None) * len(devs) // n_starts if cpu else rows // n_starts
    per = max(len(devs), per - per % len(devs))
    per = min(per, rows)

    def launch(offset):
        g = np.arange(per) % 2
        gen = jax.device_put(jnp.asarray(st["gen_x"][g]), shard)
        test = jax.device_put(jnp.asarray(st["points"][g]), shard)
        idx = jax.device_put(jnp.arange(offset, offset + per, dtype=jnp.uint32), shard)
        kw = {} if design_g is None else dict(designs=(design_g, design_c),
                                              design_index=jax.device_put(jnp.asarray(design_idx[g]), shard))
        out = toy_fits(pr.full, key, gen, test, idx, k=len(pr.poi), parts=parts, resample=pr.resample, scheme=scheme,
                       **kw)
        return jax.block_until_ready(out)

    t = time.perf_counter()
    launch(0)
    compile_s = time.perf_counter() - t
    times = []
    n_launch = -(-rows // per)
    rows = n_launch * per  # every launch has the compiled shape
    for r in range(a.repeat):
        t = time.perf_counter()
        for k in range(n_launch):
            out = launch(10_000_000 * (r + 1) + k * per)
        times.append(time.perf_counter() - t)
    best = min(times)
    conv = float(np.mean(np.asarray(out["conv_global"]) & np.asarray(out["conv_cond"])))
    res = {"starts": n_starts, "passes": [list(p) for p in scheme], "compile_s": compile_s, "rows": rows,
           "rows_per_launch": per, "seconds": best, "toys_per_s": rows / best, "toy_fits_per_s": 2 * rows / best, "converged_fraction": conv}
    print(json.dumps(res, indent=1), flush=True)
    return res


def main():
    ap = common.parser(__doc__)
    ap.add_argument("--n-T", type=int, default=300)
    ap.add_argument("--rows", type=int, default=None, help="rows per timed launch (default: 2048 CPU, 65536 GPU)")
    ap.add_argument("--belt1", default=None, help="1-D belt NxM (default: 20x200 CPU, 50x10000 GPU)")
    ap.add_argument("--belt2", default=None, help="2-D belt NxNyxM (default: 5x5x100 CPU, 20x20x1000 GPU)")
    ap.add_argument("--devices", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--starts", type=int, default=1)
    ap.add_argument("--no-belts", action="store_true")
    ap.add_argument("--passes", choices=("default", "one"), default="default",
                    help="throughput launches in the passes of a large run (default) or in one uncapped pass")
    ap.add_argument("--belt-repeat", type=int, default=1, help="runs of each belt (the first compiles)")
    ap.add_argument("--profile", default=None, help="folder for a cProfile summary of each belt's last run")
    ap.add_argument("--no-throughput", action="store_true", help="skip the throughput launches")
    ap.add_argument("--compilation-cache", default=None, help="JAX's persistent compilation cache in this folder")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    if a.compilation_cache:
        from nuejax.cache import enable_compilation_cache

        enable_compilation_cache(a.compilation_cache)

    from nuejax.inference import feldman_cousins
    from nuejax.inference.construction import construction
    from nuejax.inference.fitting import launch_size
    from nuejax.model import borexino_like_model, fast_model

    cpu = jax.default_backend() == "cpu"
    devs = jax.devices()[: a.devices] if a.devices else jax.devices()
    rows = a.rows or (2048 if cpu else 65536)
    rows -= rows % len(devs)
    t0 = time.perf_counter()
    base = fast_model(borexino_like_model(n_T=a.n_T))
    m = base.with_parameters(base.parameters.release("mu_nu"))
    build = time.perf_counter() - t0
    data = np.asarray(m.expected(m.defaults()))
    pr = construction(m, data, "mu_nu", None, None, starts=a.starts)
    names = pr.full.names  # the parameters of interest, then the nuisances
    per = max(len(devs), (launch_size(1 << 30, None) * len(devs) if cpu else rows) // max(1, a.starts))
    res = {"device": str(devs[0].device_kind if hasattr(devs[0], "device_kind") else devs[0].platform),
           "platform": devs[0].platform, "n_devices": len(devs), "jax": jax.__version__, "n_fitted": len(names),
           "n_obs": m.n_obs, "build_s": build, "date": time.strftime("%Y-%m-%d")}
    if not a.no_throughput:
        res.update(throughput(a, pr, m, devs, rows, cpu))
        per = res["rows_per_launch"]
    if a.no_belts:
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f, indent=1)
        return

    def parse(text, default):
        return [int(v) for v in (text or default).split("x")]

    def repeated(label, run):
        """``run()`` --belt-repeat times: the last result and every run's seconds (the last profiled)."""
        times = []
        for r in range(a.belt_repeat):
            prof = None
            if a.profile and r == a.belt_repeat - 1:
                import cProfile

                prof = cProfile.Profile()
                prof.enable()
            t = time.perf_counter()
            out = run()
            times.append(time.perf_counter() - t)
            if prof is not None:
                import io
                import pstats

                prof.disable()
                text = io.StringIO()
                pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(45)
                Path(a.profile).mkdir(parents=True, exist_ok=True)
                Path(a.profile, f"{label}_{len(devs)}dev.txt").write_text(text.getvalue())
        return out, times

    g1, n1 = parse(a.belt1, "20x200" if cpu else "50x10000")
    fc, times = repeated("belt1", lambda: feldman_cousins(m, data, "mu_nu", np.linspace(0.0, 4.0, g1), n1, key=1,
                                                          starts=a.starts, chunk=None if cpu else max(per, 1)))
    res["belt1"] = {"grid": g1, "toys": n1, "fits": 2 * g1 * n1, "seconds": times[0], "seconds_each_run": times,
                    "interval": list(fc.interval), "valid_fraction": float(np.sum(fc.n_valid) / (g1 * n1))}
    print(json.dumps(res["belt1"]), flush=True)
    gx, gy, n2 = parse(a.belt2, "5x5x100" if cpu else "20x20x1000")
    m2 = base.with_parameters(base.parameters.release("eps_ee_L", "eps_ee_R"))
    fc2, times = repeated("belt2", lambda: feldman_cousins(
        m2, data, ("eps_ee_L", "eps_ee_R"), (np.linspace(-0.1, 0.1, gx), np.linspace(-0.3, 0.3, gy)), n2, key=2,
        starts=a.starts, chunk=None if cpu else max(per, 1)))
    res["belt2"] = {"grid": [gx, gy], "toys": n2, "fits": 2 * gx * gy * n2, "seconds": times[0], "seconds_each_run": times,
                    "accepted": int(np.sum(fc2.accepted)), "valid_fraction": float(np.sum(fc2.n_valid) / (gx * gy * n2))}
    print(json.dumps(res["belt2"]), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
