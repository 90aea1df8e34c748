"""`nuejax xenonnt`'s μ_ν toy stage alone, in one process, twice (the second run warm): the CLs
construction and the Feldman–Cousins one with toys of its own (``apart``, as the command ran them
before 6bf9f98), or the Feldman–Cousins interval from the CLs run's toys (``together``,
``cls_upper_limit(..., feldman_cousins=True)``).

    python benchmarks/results/cpu2_2026-12-01_twentyninth/xenonnt_toy_stage.py apart|together [N_TOYS]
"""
import sys
import time
import warnings

import jax
import numpy as np

import nuejax
import nuejax.cache

nuejax.enable_x64()
nuejax.cache.enable_compilation_cache()

from nuejax.analyses.xenonnt import xenonnt_sr0_model  # noqa: E402
from nuejax.analyses.xenonnt_run import MU_TEST  # noqa: E402
from nuejax.inference import cls_upper_limit, feldman_cousins  # noqa: E402
from nuejax.model.fast import fast_model  # noqa: E402

warnings.simplefilter("ignore", RuntimeWarning)
how = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
model, data = xenonnt_sr0_model()
m = fast_model(model).release("mu_nu")
key = jax.random.PRNGKey(0)
for rep in range(2):
    t = time.perf_counter()
    if how == "apart":
        c = cls_upper_limit(m, data, "mu_nu", MU_TEST, n_toys=n, key=key)
        t_cls = time.perf_counter() - t
        f = feldman_cousins(m, data, "mu_nu", np.concatenate([[0.0], MU_TEST]), n, key=jax.random.fold_in(key, 1))
        print(rep, f"CLs {t_cls:.2f} s, Feldman-Cousins {time.perf_counter() - t - t_cls:.2f} s", c.limit_sb, c.limit,
              f.interval, flush=True)
    else:
        c = cls_upper_limit(m, data, "mu_nu", MU_TEST, n_toys=n, key=key, feldman_cousins=True)
        print(rep, f"CLs and Feldman-Cousins {time.perf_counter() - t:.2f} s", c.limit_sb, c.limit,
              c.feldman_cousins.interval, flush=True)
