"""The paper workload's multi-start design (fast path, 23 free parameters, 8 starts) solved from
every start in one launch of up to 400 iterations, at two EDM tolerances: each start's
iterations, status and -2 ln L above 6483.2. Run from the repository root; the solver is the
checkout's, or another's with ROOT=that checkout (its benchmarks/ and package come first).

    [ROOT=...] NUEJAX_CACHE_DIR=... python benchmarks/results/cpu2_2026-12-01_twentyseventh/design_iterations.py
"""
import os
import sys
import warnings

sys.path.insert(0, os.environ.get("ROOT", ".") + "/benchmarks")
import common  # noqa: E402, F401  (puts the repository root on sys.path too)
import jax  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)
import nuejax.cache  # noqa: E402

nuejax.cache.enable_compilation_cache()
import workload  # noqa: E402

from nuejax.inference import fitting  # noqa: E402
from nuejax.inference.problem import FitProblem  # noqa: E402
from nuejax.inference.starts import start_design  # noqa: E402
from nuejax.model import fast_model  # noqa: E402

warnings.simplefilter("ignore")
model = workload.build(**workload.PAPER_DIMS)
data = model.asimov(model.parameters.values(workload.INJECTED))
m = fast_model(model.with_parameters(model.parameters.fix("sin2_theta12", "dm2_21")))
s = FitProblem.create(m, data, init={k: v for k, v in workload.FIT_START.items() if k in m.parameters})
x0s = start_design(s, fitting.DEFAULT_STARTS)
np.set_printoptions(linewidth=220, precision=4)
for tol in [1e-8, 2e-6]:
    r = fitting.solve_rows(s, x0s, max_iter=400, edm_tol=tol)
    print(tol, "iters", np.asarray(r.n_iter), "st", np.asarray(r.status), "f", np.asarray(r.fun) - 6483.2)
