import sys, time, warnings, cProfile, pstats
sys.path.insert(0, "benchmarks")
import common  # noqa: F401  (puts the repository root on sys.path)
import jax
jax.config.update("jax_enable_x64", True)
import nuejax.cache; nuejax.cache.enable_compilation_cache()
import workload
from nuejax.inference import fit
warnings.simplefilter("ignore")
model = workload.build(**workload.PAPER_DIMS)
data = model.asimov(model.parameters.values(workload.INJECTED))
start = dict(workload.FIT_START)
t=time.perf_counter(); r = fit(model, data, start); print("first", time.perf_counter()-t)
t=time.perf_counter(); r = fit(model, data, start); print("second", time.perf_counter()-t, r.minimizer, r.nfcn)
print({k: v for k, v in r.diagnostics.items() if not hasattr(v, "shape")})
pr = cProfile.Profile(); pr.enable(); r = fit(model, data, start); pr.disable()
pstats.Stats(pr).sort_stats("cumulative").print_stats(35)
