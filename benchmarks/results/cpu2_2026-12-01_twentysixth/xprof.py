import time, sys, dataclasses
import nuejax; nuejax.enable_x64()
import nuejax.cache; nuejax.cache.enable_compilation_cache()
import jax, jax.numpy as jnp, numpy as np
from nuejax.analyses.xenonnt import xenonnt_sr0_model
from nuejax.model.fast import fast_model
from nuejax.inference.problem import FitProblem
from nuejax.inference.fitting import value_grad_hessian, gauss_newton_terms, batch_fit

N = int(sys.argv[1]) if len(sys.argv) > 1 else 256
model, data = xenonnt_sr0_model()
model = fast_model(model).release("mu_nu")
print("stages", [type(st).__name__ for st in getattr(model, "stages", ())])
truth = model.parameters.values(mu_nu=0.5)
keys = jax.random.split(jax.random.PRNGKey(1), N)
counts, aux = jax.vmap(lambda k: model.draw_toy(k, truth))(keys)
s = FitProblem.create(model, counts, aux=aux, batch=True)
print("names", s.names, len(s.names))
x = jnp.asarray(np.asarray(s.batch_starts(N, None)))

def timeit(f, *a, n=5):
    r = f(*a); jax.block_until_ready(r)
    t = time.perf_counter()
    for _ in range(n): r = f(*a); jax.block_until_ready(r)
    return (time.perf_counter() - t) / n

def batched(fn):
    def one(xi, d, a):
        return fn(xi, (dataclasses.replace(s, data=d, aux_flat=a), ()))
    return jax.jit(jax.vmap(one))
for name, fn in [("value", lambda xi, args: args[0].objective(xi)),
                 ("vgh", value_grad_hessian), ("gauss_newton", lambda xi, a: gauss_newton_terms(xi, a)[:3])]:
    t = timeit(batched(fn), x, s.data, s.aux_flat)
    print(f"{name}: {t*1e3:.2f} ms per {N} rows = {t/N*1e6:.1f} us/row", flush=True)
# expected alone and the transform alone
exp = jax.jit(jax.vmap(lambda xi: model.expected(s.params(xi, ()))))
print(f"expected: {timeit(exp, x)/N*1e6:.1f} us/row")
tr = [st for st in model.stages if type(st).__name__ == "ResponseTransform"][0]
p = s.params(x[0], ())
xin = jnp.ones(tr.in_edges.shape[0] - 1)
f = jax.jit(jax.vmap(lambda a: tr(dict(p, res_a=a), xin)))
aa = jnp.linspace(0.3, 0.4, N)
print(f"transform: {timeit(f, aa)/N*1e6:.1f} us/row")
g = jax.jit(jax.vmap(jax.jacfwd(lambda a: tr(dict(p, res_a=a), xin))))
print(f"transform jvp: {timeit(g, aa)/N*1e6:.1f} us/row")
t = time.perf_counter(); r = batch_fit(model, counts, aux=aux, starts=1); t1 = time.perf_counter() - t
t = time.perf_counter(); r = batch_fit(model, counts, aux=aux, starts=1); t2 = time.perf_counter() - t
print(f"batch_fit starts=1: first {t1:.2f} s, again {t2:.2f} s = {t2/N*1e3:.2f} ms/fit; iters", getattr(r, "n_iter", None))
print(r)
