"""Stand-alone reproducer of the XLA:CPU hang behind nuejax's CPU launch size (docs/inference.md).

A vmapped while loop whose body computes a batched eigh and, independently, a batched Cholesky
factorisation of the same small matrices. On the 2-core CPU of this workplace (JAX 0.10.2,
2026-11-23) it never returns (every XLA worker idle) at 220, 250, 300, 400 and 1000 rows of
d = 14 and at 60, 80 and 128 rows of d = 25; 128 and 200 rows of d = 14 and 40 rows of d = 25
finish (0.2 s); eigh alone or Cholesky alone, or the Cholesky made to depend on the eigh's
output, finish at 1000 rows. Run with a time limit:

    timeout 60 python benchmarks/repro/xla_cpu_hang_repro.py 400 14    # rows, matrix size
"""
import sys, time, jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
n, d = int(sys.argv[1]), int(sys.argv[2])
key = jax.random.PRNGKey(0)
A = jax.random.normal(key, (n, d, d)); A = A @ jnp.swapaxes(A, -1, -2) + d * jnp.eye(d)
iters = jax.random.randint(jax.random.PRNGKey(1), (n,), 3, 40)
def solve(a, m):
    def body(c):
        x, i = c
        w, V = jnp.linalg.eigh(x)
        step = (V / (jnp.abs(w) + 1.0)) @ V.T
        L = jnp.linalg.cholesky(x + 1e-3 * jnp.eye(d))
        return x + 1e-3 * step + 1e-6 * (L @ L.T), i + 1
    return jax.lax.while_loop(lambda c: c[1] < m, body, (a, 0))[0]
f = jax.jit(jax.vmap(solve))
for k in range(3):
    t = time.perf_counter(); r = f(A, iters).block_until_ready(); print(k, f"{time.perf_counter()-t:.2f}s", float(r.sum()), flush=True)
