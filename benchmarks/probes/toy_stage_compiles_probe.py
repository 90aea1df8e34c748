"""The toy stage of ``nuejax xenonnt`` (CLs with Feldman-Cousins of mu_nu, as
nuejax.analyses.xenonnt_run): every compile with its time since the start, and every launch of the
toy kernels with its starts' shape (the Asimov fits of the start designs, then the toys).

    NUEJAX_CACHE_DIR=$(mktemp -d) python benchmarks/probes/toy_stage_compiles_probe.py [N_TOYS] [--plain]

On a GPU it calls ``nuejax.gpu_settings()`` first, as the commands do; ``--plain`` leaves XLA's
flags as they are (its autotuner on, unless ``XLA_FLAGS`` says otherwise).
"""
import logging, sys, time, warnings
T0 = time.perf_counter()
logging.basicConfig(format="%(relativeCreated)8.0f ms %(message)s", level=logging.WARNING, stream=sys.stdout)
import jax, numpy as np
jax.config.update("jax_log_compiles", True)
import nuejax
PLAIN = "--plain" in sys.argv
ARGS = [a for a in sys.argv[1:] if a != "--plain"]
print("gpu_settings:", "not called" if PLAIN else nuejax.gpu_settings(), flush=True)
nuejax.enable_x64()
from nuejax.cache import enable_compilation_cache
enable_compilation_cache()
from nuejax.analyses.xenonnt import xenonnt_sr0_model
from nuejax.analyses.xenonnt_run import MU_TEST
from nuejax.inference import cls_upper_limit
from nuejax.model.fast import fast_model
from nuejax.inference import toys as T
warnings.simplefilter("ignore", RuntimeWarning)
say = lambda *a: print(f"{1000*(time.perf_counter()-T0):8.0f} ms SPY", *a, flush=True)
model, data = xenonnt_sr0_model()
m = fast_model(model).release("mu_nu")
orig = T._in_passes
def spy(kernels, problem, rows, x0, key, scheme):
    def wrap(i, k):
        def call(*a):
            say(f"kernel pass {i} x0 {np.shape(a[2])}")
            return k(*a)
        return call
    say("in_passes x0", np.shape(x0), "scheme", scheme)
    out = orig([wrap(i, k) for i, k in enumerate(kernels)], problem, rows, x0, key, scheme)
    return out
T._in_passes = spy
say("START CLS", jax.devices()[0].device_kind, jax.__version__)
r = cls_upper_limit(m, data, "mu_nu", MU_TEST, n_toys=int(ARGS[0]) if ARGS else 100, key=jax.random.PRNGKey(0), feldman_cousins=True)
say("END CLS", r.limit_sb)
