import nuejax; nuejax.enable_x64()
import nuejax.cache; nuejax.cache.enable_compilation_cache()
import jax, numpy as np
from nuejax.analyses.xenonnt import xenonnt_sr0_model
from nuejax.model.fast import fast_model
from nuejax.inference.problem import FitProblem
from nuejax.inference.fitting import value_grad_hessian, gauss_newton_terms, curvature_term
from nuejax.inference.newton import minimize_bounded
model, data = xenonnt_sr0_model()
model = fast_model(model).release("mu_nu")
truth = model.parameters.values(mu_nu=0.5)
keys = jax.random.split(jax.random.PRNGKey(1), 256)
counts, aux = jax.vmap(lambda k: model.draw_toy(k, truth))(keys)
row = 1
p = FitProblem.create(model, counts[row], aux=jax.tree_util.tree_map(lambda v: v[row], aux))
lo, hi = p.bounds
fun = lambda x, args: args[0].objective(x, args[1])
@jax.jit
def run(k, p):
    return minimize_bounded(fun, p.start(), (p, ()), lo, hi, vgh=value_grad_hessian, max_iter=k, hessian_split=(gauss_newton_terms, curvature_term))
for k in range(0, 22):
    r = run(k, p)
    print(k, int(r.n_iter), int(r.status), bool(r.converged), float(r.fun), float(r.edm), float(r.min_eig) if hasattr(r,'min_eig') else None, np.round(np.asarray(r.x)[[0,6,7]], 6), flush=True)
