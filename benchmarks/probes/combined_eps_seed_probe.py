"""Could the combination's (eps_ee_L, eps_ee_R) region of ``nuejax combine`` start each point from
the two experiments' own end points there? At fixed ε the combined −2 ln L is Borexino's plus
XENONnT's, coupled through mu_nu alone, so their profiled end points (with mu_nu from either) are a
start at or next to the combined minimum. The probe runs the three regions as the command does
(``profile_points``: the global fit's branch starts, then the envelope passes), then fits the
combination once from those seeds (``solve_rows``, two candidates a point, the lower one taken),
and compares: time, −2 ln L per point (seeded minus the command's), convergence.

    NUEJAX_CACHE_DIR=... python benchmarks/probes/combined_eps_seed_probe.py [--json FILE]

Prints one JSON object. Run it on a warm cache folder (a `nuejax combine` run's) to time fits, not
compilation.
"""
import argparse
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common
import common  # noqa: E402, F401  (puts the repository root on sys.path)

import numpy as np  # noqa: E402

import nuejax  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    nuejax.enable_x64()
    from nuejax.cache import enable_compilation_cache

    enable_compilation_cache()
    from nuejax.analyses.combine_run import EPS_GRID, EPS_NAMES, SCAN_ITER, _models
    from nuejax.inference.fitting import newton_fit, solve_rows
    from nuejax.inference.problem import FitProblem, Pins
    from nuejax.inference.scan import grid_neighbours, profile_points, scan_problem

    warnings.simplefilter("ignore", RuntimeWarning)
    models, data, _ = _models(lambda *args, **kw: None)
    vx, vy = (np.asarray(g, dtype=float) for g in EPS_GRID)
    grid = np.stack(np.meshgrid(vx, vy, indexing="ij"), -1).reshape(-1, 2)
    n = len(grid)
    out = {"points": n}
    found = {}
    for name in ("borexino", "xenonnt", "combined"):
        mm = models[name].release(*EPS_NAMES)
        t0 = time.perf_counter()
        r = newton_fit(mm, data[name], one_sided=False)
        t1 = time.perf_counter()
        s = FitProblem.create(mm, data[name], fixed_names=EPS_NAMES)
        res, passes, refitted = profile_points(s, grid, r, grid_neighbours((len(vx), len(vy))), n_iter=SCAN_ITER)
        t2 = time.perf_counter()
        found[name] = (s, res)
        out[name] = {"global_fit_s": t1 - t0, "region_s": t2 - t1, "passes": int(passes),
                     "refitted": int(np.sum(refitted)), "converged": int(np.sum(res.converged)),
                     "minima_of_global_fit": len(r.minima or [])}
    # the seeds: each experiment's end point at the point, mu_nu from one or the other
    both = models["combined"]
    s_c, base = found["combined"]
    ends = {}
    for label in ("borexino", "xenonnt"):
        s_e, res_e = found[label]
        ends[label] = [dict(zip(s_e.names, x)) for x in np.asarray(res_e.x)]
    seeds = np.zeros((n, 2, len(s_c.names)))
    for i in range(n):
        comb = {}
        for k, label in enumerate(("borexino", "xenonnt")):
            for own, c in both.maps[k]:
                if own in ends[label][i] and own != "mu_nu":
                    comb[c] = ends[label][i][own]
        for j, label in enumerate(("borexino", "xenonnt")):
            seeds[i, j] = [ends[label][i]["mu_nu"] if v == "mu_nu" else comb[v] for v in s_c.names]
    wide = scan_problem(s_c)
    i_fit = np.array([wide.names.index(v) for v in s_c.names])
    i_pin = np.array([wide.names.index(v) for v in s_c.fixed_names])
    mask, pinned = s_c.held_pins(n)
    mask[:, i_pin] = True
    pinned[:, i_pin] = grid
    x0 = np.broadcast_to(pinned[:, None, :], (n, 2, len(wide.names))).copy()
    x0[:, :, i_fit] = seeds
    t0 = time.perf_counter()
    seeded = solve_rows(wide, x0, Pins(mask, pinned), max_iter=SCAN_ITER)
    t1 = time.perf_counter()
    d = np.asarray(seeded.fun) - np.asarray(base.fun)
    conv_s, conv_b = np.asarray(seeded.converged, bool), np.asarray(base.converged, bool)
    both_conv = conv_s & conv_b
    f_min = float(np.min(np.where(conv_b, base.fun, np.inf)))
    out["seeded"] = {"fit_s": t1 - t0, "converged": int(np.sum(conv_s)), "iterations": int(np.sum(seeded.n_iter)),
                     "max_above_command": float(np.max(np.where(both_conv, d, -np.inf))),
                     "max_below_command": float(-np.min(np.where(both_conv, d, np.inf))),
                     "points_above_by_1e-6": int(np.sum(both_conv & (d > 1e-6))),
                     "inside_90_command": int(np.sum(np.asarray(base.fun) - f_min < 4.605)),
                     "inside_90_seeded": int(np.sum(np.asarray(seeded.fun) - f_min < 4.605))}
    print(json.dumps(out, indent=1), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
