"""Run a benchmark script with the solver on the accelerators' route on a CPU: the exact Hessian
from the first iteration (``fitting.approximate_route`` off), as rows run side by side on a GPU;
on a CPU costly rows otherwise start with the Gauss-Newton matrix. Use a cache folder of its own
(``NUEJAX_CACHE_DIR``): the solver programs kept there are the route's.

    NUEJAX_CACHE_DIR=... python benchmarks/results/cpu2_2026-12-01_twentyseventh/exact_route.py SCRIPT [ARGS]
"""
import runpy
import sys

import nuejax.inference.fitting as fitting

fitting.approximate_route = lambda *args: None
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
