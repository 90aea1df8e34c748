"""How long the batched small linear algebra of the Newton solver takes on this device: eigh and
Cholesky of n symmetric positive-definite d × d matrices (float64), as XLA's library calls, and a
batched matrix product of the same shapes for scale (``common.call_stats``: median and
16th/84th percentiles in ms).

    python benchmarks/probes/small_linalg_probe.py [--n 131072] [--d 14] [--json FILE]
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402  (puts the repository root on sys.path too)
from common import call_stats  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)


def main():
    ap = common.parser(__doc__)
    ap.add_argument("--n", type=int, default=131072)
    ap.add_argument("--d", type=int, default=14)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    A = jax.random.normal(jax.random.PRNGKey(0), (a.n, a.d, a.d))
    A = A @ jnp.swapaxes(A, -1, -2) + a.d * jnp.eye(a.d)
    out = {"device": jax.devices()[0].device_kind, "jax": jax.__version__, "n": a.n, "d": a.d}
    out["eigh"] = call_stats(jax.jit(jnp.linalg.eigh), A, n=5)
    out["cholesky"] = call_stats(jax.jit(jnp.linalg.cholesky), A, n=5)
    out["matmul"] = call_stats(jax.jit(lambda x: x @ x), A, n=5)
    print(json.dumps(out, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
