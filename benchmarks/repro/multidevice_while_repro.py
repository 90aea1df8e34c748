"""Stand-alone check of a batched while loop sharded over several XLA:CPU devices: the pattern of
nuejax's toy fits (``vmap`` of a ``lax.while_loop`` whose rows stop after different numbers of
iterations, the row axis split over the devices).

``jit`` of the vmapped loop with a sharded row axis (``NamedSharding``, GSPMD): the batched loop's
condition (any row still running) becomes a reduction over *all* rows, so every iteration ends in
a cross-device all-reduce and every device runs until the slowest row of any device is done.
``shard_map``: each device runs its own loop on its own rows, no collective inside.

    XLA_FLAGS=--xla_force_host_platform_device_count=4 timeout 120 \\
        python benchmarks/repro/multidevice_while_repro.py gspmd|shard_map [rows] [d]

Prints the time of three calls (docs/inference.md records what was seen).
"""
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

jax.config.update("jax_enable_x64", True)
mode = sys.argv[1] if len(sys.argv) > 1 else "gspmd"
n = int(sys.argv[2]) if len(sys.argv) > 2 else 256
d = int(sys.argv[3]) if len(sys.argv) > 3 else 14
A = jax.random.normal(jax.random.PRNGKey(0), (n, d, d))
A = A @ jnp.swapaxes(A, -1, -2) + d * jnp.eye(d)
iters = jax.random.randint(jax.random.PRNGKey(1), (n,), 3, 40)


def solve(a, m):
    def body(c):
        x, i = c
        w, V = jnp.linalg.eigh(x)
        L = jnp.linalg.cholesky(x + 1e-3 * jnp.eye(d))
        return x + 1e-3 * (V / (jnp.abs(w) + 1.0)) @ V.T + 1e-6 * (L @ L.T), i + 1

    return jax.lax.while_loop(lambda c: c[1] < m, body, (a, 0))[0]


mesh = Mesh(np.asarray(jax.devices()), ("rows",))
rows = NamedSharding(mesh, PartitionSpec("rows"))
if mode == "gspmd":
    f = jax.jit(jax.vmap(solve))
else:
    f = jax.jit(jax.shard_map(jax.vmap(solve), mesh=mesh, in_specs=PartitionSpec("rows"),
                              out_specs=PartitionSpec("rows")))
A, iters = jax.device_put(A, rows), jax.device_put(iters, rows)
print(f"{mode}: {n} rows of d = {d} on {len(jax.devices())} devices", flush=True)
for k in range(3):
    t = time.perf_counter()
    r = f(A, iters).block_until_ready()
    print(k, f"{time.perf_counter() - t:.2f} s", float(r.sum()), flush=True)
