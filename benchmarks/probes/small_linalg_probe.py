"""How long the batched small linear algebra of the Newton solver takes on this device: eigh and
Cholesky of n symmetric positive-definite d × d matrices (float64), as XLA's library calls, and a
batched matrix product of the same shapes for scale.

    python benchmarks/probes/small_linalg_probe.py [--n 131072] [--d 14] [--json FILE]
"""
import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)


def timed(f, *a, repeat=5):
    jax.block_until_ready(f(*a))
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        jax.block_until_ready(f(*a))
        ts.append(time.perf_counter() - t)
    return min(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=131072)
    ap.add_argument("--d", type=int, default=14)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    A = jax.random.normal(jax.random.PRNGKey(0), (a.n, a.d, a.d))
    A = A @ jnp.swapaxes(A, -1, -2) + a.d * jnp.eye(a.d)
    out = {"device": jax.devices()[0].device_kind, "jax": jax.__version__, "n": a.n, "d": a.d}
    out["eigh_s"] = timed(jax.jit(jnp.linalg.eigh), A)
    out["cholesky_s"] = timed(jax.jit(jnp.linalg.cholesky), A)
    out["matmul_s"] = timed(jax.jit(lambda x: x @ x), A)
    print(json.dumps(out, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
