"""How long the Python work before XLA compiles each of `nuejax combine`'s solver programs takes
(under the GIL), one after the other: the μ_ν, ε and mediator stages' problems of the three
models; for each, `fitting.row_solver`'s jitted function traced and lowered (`.lower`, no XLA
compilation) for a launch of the size its fits use here, then (with ``--all``) the rows' cost
analysis (`fitting.cheap_rows`: the value, gradient and Hessian of one row lowered for the CPU
device; pass an empty ``NUEJAX_CACHE_DIR``, or it is read from the cache) and the program's export
(`jax.export`, a trace and lowering of its own). Run from the repository root:

    python benchmarks/results/cpu2_2026-12-01_thirtieth/trace_times.py [--all]
"""
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/: common
import common  # noqa: E402,F401  (puts the repository root on sys.path too)

import nuejax  # noqa: E402

nuejax.enable_x64()
import nuejax.cache  # noqa: E402

nuejax.cache.enable_compilation_cache()
import numpy as np  # noqa: E402

from nuejax.analyses import combine_run as cr  # noqa: E402
from nuejax.analyses._clock import StageClock  # noqa: E402
from nuejax.analyses.mediators import MEDIATOR_MODELS, _profiled_and_held, mediator_model  # noqa: E402
from nuejax.inference import fitting  # noqa: E402
from nuejax.inference.problem import FitProblem, Pins  # noqa: E402
from nuejax.model.physics_params import MEDIATOR_PARAMETERS  # noqa: E402

warnings.simplefilter("ignore")
say = StageClock(lambda *a: None)
t0 = time.perf_counter()
models, data, cal = cr._models(say)
med = cr._mediator_stage_models(cr._mediator_models(cal, say, True))
print(f"models {time.perf_counter() - t0:.1f} s", flush=True)


def problems():
    for name, m in models.items():
        yield f"mu_nu {name}", FitProblem.create(m.release("mu_nu"), data[name])
        yield f"eps {name}", FitProblem.create(m.release(*cr.EPS_NAMES), data[name])
    for name, m in med.items():
        mm = mediator_model(m, None, cr.MASSES, cr.MEDIATOR_GRID["ratios"])
        mediators = tuple(dict.fromkeys(MEDIATOR_MODELS.values()))
        profile, held = _profiled_and_held(mm, mediators)
        scanned = tuple(MEDIATOR_PARAMETERS[md][0] for md in mediators)
        yield f"mediators {name}", FitProblem.create(mm, data[name], names=profile, fixed_names=(*scanned, *held))


import jax  # noqa: E402

every = "--all" in sys.argv
jitted = fitting.row_solver().__wrapped__
total = {"lower": 0.0, "cost": 0.0, "export": 0.0}
for label, problem in problems():
    wide = problem.full()
    d = len(wide.names)
    fixed = Pins(np.zeros((1, d), dtype=bool), np.zeros((1, d)))
    start = wide.host_params()
    x0 = np.repeat(np.array([[start[n] for n in wide.names]], dtype=float)[:, None], 2, axis=1)
    ops = fitting._launch_operands(wide, fixed, x0, np.zeros(256, dtype=int), 40, fitting.EDM_TOL)
    t = time.perf_counter()
    lowered = jitted.lower(*ops)
    dt = {"lower": time.perf_counter() - t}
    size = len(lowered.as_text()) / 1e6
    if every:
        t = time.perf_counter()
        fitting.cheap_rows(wide, jax.tree_util.tree_map(lambda a: a[0], fixed), x0[0, 0])
        dt["cost"] = time.perf_counter() - t
        t = time.perf_counter()
        jax.export.export(jitted)(*ops)
        dt["export"] = time.perf_counter() - t
    for k, v in dt.items():
        total[k] += v
    print(f"{label}: {d} parameters, {size:.1f} MB of StableHLO text; "
          + ", ".join(f"{k} {v:.2f} s" for k, v in dt.items()), flush=True)
print("all nine: " + ", ".join(f"{k} {v:.1f} s" for k, v in total.items() if v))
