import time, logging, threading, warnings
import nuejax; nuejax.enable_x64()
import nuejax.cache; nuejax.cache.enable_compilation_cache()
import jax
warnings.simplefilter("ignore")
compiled=[]
class H(logging.Handler):
    def emit(self, r):
        m=r.getMessage()
        if "Finished XLA compilation of jit(call)" in m: compiled.append((round(time.perf_counter()-T0,1), threading.current_thread().name, m.split(" in ")[-1]))
jax.config.update("jax_log_compiles", True); logging.getLogger("jax").addHandler(H())
import nuejax._internal.ahead as ah
ah.spare_cores = lambda: 8
from nuejax.analyses import combine_run as cr
from nuejax.analyses._clock import StageClock
T0=time.perf_counter()
say = StageClock(lambda *a: None)
models, data, cal = cr._models(say)
early = (ah.beside(cr._mediator_models, cal, say.branch(), True), None)  # builds in a thread, in turn inside
print("models", time.perf_counter()-T0, flush=True)
fut = cr._warm_ups(models, data, True, cr.MASSES, early)
print("warm-ups started", len(fut), flush=True)
for f in fut: f.result()
print("warm-ups done", time.perf_counter()-T0, compiled, flush=True)
n = len(compiled)
_, per = cr._eps_regions(models, data, True, say, False)
print("eps", time.perf_counter()-T0, {k: v["eps_region_90_points"] for k, v in per.items()}, flush=True)
curves = cr._mediator_curves(data, cr.MASSES, cal, say, False, early=(early[0], say.branch()))
print("med", time.perf_counter()-T0, {k: v["universal_vector"]["couplings"] for k, v in curves.items()}, flush=True)
print("compiles after the warm-ups:", compiled[n:])
