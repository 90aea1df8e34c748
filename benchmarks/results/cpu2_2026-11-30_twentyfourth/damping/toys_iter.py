"""XENONnT mu_nu CLs construction with toys (as nuejax xenonnt's stage 3, fewer toys): warm time,
the limits, and the toys' test statistics saved for comparison between solver variants."""
import sys, time, warnings
import numpy as np
import nuejax; nuejax.enable_x64()
import nuejax.cache; nuejax.cache.enable_compilation_cache()
import jax
from nuejax.analyses.xenonnt import xenonnt_sr0_model
from nuejax.analyses.xenonnt_run import MU_TEST
from nuejax.inference import cls_upper_limit
from nuejax.model.fast import fast_model
warnings.simplefilter("ignore")
model, data = xenonnt_sr0_model()
m = fast_model(model).release("mu_nu")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 30
for rep in range(2):
    t0 = time.perf_counter()
    r = cls_upper_limit(m, data, "mu_nu", MU_TEST, n_toys=n, key=jax.random.PRNGKey(0))
    print(rep, "seconds %.2f" % (time.perf_counter() - t0), "limit", r.limit, "limit_sb", r.limit_sb, r.expected_sb, flush=True)
d = {k: np.asarray(v) for k, v in vars(r).items() if isinstance(v, (np.ndarray,)) or hasattr(v, "shape")}
np.savez(sys.argv[1], **d)
print("saved", sorted(d))
