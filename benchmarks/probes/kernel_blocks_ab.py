"""The fold by kernel blocks (:mod:`nuejax.detector.kernel_blocks`) against one dense product.

  python benchmarks/probes/kernel_blocks_ab.py [--rows 128 256 512 2000] [--n-calls 30] [--out FILE]

Paper workload (``workload.PAPER_DIMS``, or ``--dims``; float64, 25 free parameters), on the CPU: the median of
``--n-calls`` calls after a warm-up of -2 ln L (``NLLCost``'s value and value + gradient calls,
what MIGRAD asks for) and of the fold alone (value, value + gradient of a Poisson-like loss), for
the dense stacked kernels (``dense``) and for blocks of each ``--rows``; with the fraction of
kernel entries the blocks store and the -2 ln L difference to the dense route. The cases
alternate over ``--rounds`` rounds, so that a drift of the (shared) machine shows.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402  (puts the repository root on sys.path too)


def main(argv=None):
    ap = common.parser(__doc__)
    ap.add_argument("--rows", type=int, nargs="+", default=[128, 256, 512, 2000])
    ap.add_argument("--n-calls", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--dims", type=int, nargs=3, metavar=("N_T", "N_OBS", "N_E"), default=None,
                    help="workload dimensions (default: the paper's 2000 1000 1000)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np
    import workload
    from common import call_stats as _stats

    from nuejax.detector.kernel_blocks import KernelBlocks
    from nuejax.inference.cost import NLLCost
    from nuejax.model import KernelFold

    dims = workload.PAPER_DIMS if a.dims is None else dict(zip(("n_T", "n_obs", "n_E"), a.dims))
    model = workload.build(**dims)
    truth = model.parameters.values(eps_ee_L=0.05, mu_nu=3.0)
    data = model.asimov(truth)
    fold = model.stage(KernelFold)
    K = fold.kernels  # (n_sig, n_T, n_obs): the workload's signals share one recoil binning
    kernels = list(K)
    variants = {"dense": None}
    for r in a.rows:
        variants[f"rows{r}"] = KernelBlocks.from_kernels(kernels, rows=r)
    f = jnp.asarray(np.random.default_rng(0).random(K.shape[:2]))
    d = jnp.asarray(data)

    def fold_loss(blocks, f):
        mu = (f.reshape(-1) @ K.reshape(-1, model.n_obs) if blocks is None else blocks.fold(list(f))) + 1.0
        return jnp.sum(mu - d * jnp.log(mu))

    fold_v = jax.jit(fold_loss)
    fold_vg = jax.jit(jax.value_and_grad(fold_loss, argnums=1))
    x0 = None
    out = {"device": str(jax.devices()[0]), "jax": jax.__version__, "date": time.strftime("%Y-%m-%d"),
           "n_entries": int(K.size), "dims": dims, "cases": {}}
    for rnd in range(a.rounds):
        for name, blocks in variants.items():
            m = model.replace_stage(fold, dataclasses.replace(fold, kernel_blocks=blocks))
            c = NLLCost(m, data)
            x0 = np.array([float(c.base[n]) for n in c.names]) * 1.001
            xj = jnp.asarray(x0)
            val = lambda x: c._value(x, c.problem)  # noqa: E731
            row = {"entries_frac": 1.0 if blocks is None else blocks.size / K.size,
                   "n_blocks": 0 if blocks is None else len(blocks.layout),
                   "nll": float(val(xj)),
                   "nll_value_ms": _stats(val, xj, n=a.n_calls)["median_ms"],
                   "nll_value_and_grad_ms": _stats(c.device_value_and_grad, xj, n=a.n_calls)["median_ms"],
                   "fold_value_ms": _stats(fold_v, blocks, f, n=a.n_calls)["median_ms"],
                   "fold_value_and_grad_ms": _stats(fold_vg, blocks, f, n=a.n_calls)["median_ms"]}
            out["cases"][f"{name}_round{rnd}"] = row
            print(name, rnd, {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
    ref = out["cases"]["dense_round0"]["nll"]
    for row in out["cases"].values():
        row["nll_minus_dense"] = row["nll"] - ref
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
