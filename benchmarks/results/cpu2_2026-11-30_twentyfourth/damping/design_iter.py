"""Iterations of the multi-start design on the paper workload's fast path (23 free): per launch,
each start's Newton iterations, status and -2 ln L; the whole solve_continued timed warm."""
import sys, time, warnings
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # benchmarks/: workload
import numpy as np
import nuejax; nuejax.enable_x64()
import nuejax.cache; nuejax.cache.enable_compilation_cache()
import workload
from nuejax.inference import fitting
from nuejax.inference.problem import FitProblem
from nuejax.inference.starts import start_design
from nuejax.model import fast_model
warnings.simplefilter("ignore")
model = workload.build(**workload.PAPER_DIMS)
data = model.asimov(model.parameters.values(workload.INJECTED))
fast = fast_model(model.with_parameters(model.parameters.fix("sin2_theta12", "dm2_21")))
start = {k: v for k, v in workload.FIT_START.items() if k in fast.parameters}
s = FitProblem.create(fast, data, init=start)
x0s = start_design(s, fitting.DEFAULT_STARTS)
launches = []
orig = fitting.solve_rows
def wrapped(problem, x0, fixed=None, **kw):
    r = orig(problem, x0, fixed, **kw)
    launches.append((np.asarray(r.n_iter).tolist(), np.asarray(r.status).tolist(), np.round(np.asarray(r.fun), 6).tolist()))
    return r
fitting.solve_rows = wrapped
for rep in range(3):
    launches.clear()
    t0 = time.perf_counter()
    res = fitting.solve_continued(s, x0s)
    t = time.perf_counter() - t0
    print(rep, "seconds %.2f" % t)
for l in launches:
    print("  iters", l[0]); print("  status", l[1]); print("  fun", l[2])
print("final fun", np.round(np.asarray(res.fun), 6).tolist(), "converged", np.asarray(res.converged).tolist())
print("best", float(np.min(np.where(res.converged, res.fun, np.inf))))
