"""``nuejax combine``'s asymptotic CLs of μ_ν for the combination (the last part of its μ_ν stage),
on its data scaled by 1 + k × 10⁻¹³, k = 0 .. N-1: per k the time, the expected CLs+b at μ_ν = 0
and, per solver launch, (largest iterations, converged rows, rows). The scaling stands in for
another machine's rounding, which sends a row of a launch along another path.

    [EXACT=1] NUEJAX_CACHE_DIR=... python benchmarks/results/cpu2_2026-12-01_twentyseventh/perturbed_cls.py N

``EXACT=1``: the accelerators' route (exact Hessian from the first iteration; see exact_route.py).
"""
import os
import sys
import time
import warnings

import nuejax

nuejax.enable_x64()
import nuejax.cache  # noqa: E402

nuejax.cache.enable_compilation_cache()
import jax  # noqa: E402
import numpy as np  # noqa: E402

from nuejax.analyses import combine_run  # noqa: E402
from nuejax.inference import cls_upper_limit, fitting  # noqa: E402

warnings.simplefilter("ignore")
print("nuejax from", nuejax.__file__, flush=True)
if os.environ.get("EXACT"):
    fitting.approximate_route = lambda *args: None
    print("exact route", flush=True)
launches = []
solver = fitting.row_solver


def counting(*args, **kw):
    f = solver(*args, **kw)

    def call(*operands):
        r = jax.block_until_ready(f(*operands))
        it = np.asarray(r.n_iter)
        launches.append((int(it.max()), int(np.sum(np.asarray(r.converged))), it.size))
        return r
    return call


fitting.row_solver = counting
models, data, _ = combine_run._models(lambda *a: None)
m = models["combined"].release("mu_nu")
for k in range(int(sys.argv[1])):
    launches.clear()
    d = np.asarray(data["combined"], dtype=float) * (1.0 + 1e-13 * k)
    t = time.perf_counter()
    r = cls_upper_limit(m, d, "mu_nu", combine_run.MU_TEST, resample_aux=False)
    print(k, round(time.perf_counter() - t, 2), r.expected_sb.get("0"), launches, flush=True)
