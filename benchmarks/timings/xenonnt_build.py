"""Build time of the XENONnT SR0 models of ``nuejax xenonnt`` (the SR0 model and its fast
mediator variant) in a fresh process, with the compilation cache on as the commands have it:

  NUEJAX_CACHE_DIR=DIR python benchmarks/timings/xenonnt_build.py first|entry|bypass

``first`` on an empty folder; then ``entry`` (the models loaded from their cache entries) and
``bypass`` (the entries skipped: the models assembled from their cached tensors, as before the
whole model was cached). Prints one JSON line.
"""
import sys, time, json
import jax
jax.config.update("jax_enable_x64", True)
from nuejax import cache
cache.enable_compilation_cache()
import nuejax.analyses.xenonnt as x
if sys.argv[1] == "bypass":
    x.cached = lambda kind, label, arguments, build: build()
t0 = time.perf_counter()
m, d = x.xenonnt_sr0_model()
jax.block_until_ready(jax.tree_util.tree_leaves(m))
t1 = time.perf_counter()
m2, _ = x.xenonnt_sr0_model(mediators=("zprime", "phi"), fast_mediators=True)
jax.block_until_ready(jax.tree_util.tree_leaves(m2))
t2 = time.perf_counter()
print(json.dumps({"mode": sys.argv[1], "sr0_s": t1 - t0, "sr0_mediators_s": t2 - t1}))
