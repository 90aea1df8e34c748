import sys, time
import nuejax; nuejax.enable_x64()
import nuejax.cache; nuejax.cache.enable_compilation_cache()
import jax, numpy as np
from nuejax.analyses.xenonnt import xenonnt_sr0_model
from nuejax.model.fast import fast_model
from nuejax.inference.fitting import batch_fit
model, data = xenonnt_sr0_model()
model = fast_model(model).release("mu_nu")
out = {}
for mu0, tag in [(0.5, "s"), (0.0, "b")]:
    truth = model.parameters.values(mu_nu=mu0)
    keys = jax.random.split(jax.random.PRNGKey(1), 256)
    counts, aux = jax.vmap(lambda k: model.draw_toy(k, truth))(keys)
    for init, itag in [(None, "default"), ({"mu_nu": mu0}, "truth")]:
        batch_fit(model, counts, aux=aux, starts=1, init=init)
        t = time.perf_counter(); r = batch_fit(model, counts, aux=aux, starts=1, init=init); t = time.perf_counter() - t
        print(tag, itag, f"{t:.2f} s", "conv", np.mean(r.converged), "mean iters", np.mean(r.n_iter), flush=True)
        out[tag + itag + "_f"] = np.asarray(r.fval); out[tag + itag + "_mu"] = np.asarray(r.values["mu_nu"]); out[tag+itag+"_it"] = np.asarray(r.n_iter)
    r = batch_fit(model, counts, aux=aux)  # default multi-start design
    out[tag + "design_f"] = np.asarray(r.fval)
np.savez(sys.argv[1], **out)
