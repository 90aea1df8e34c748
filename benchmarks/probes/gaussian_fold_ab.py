"""Formulations of the floating fold sum_n w_n P_j(mu_n, sigma_n^2), timed on one device.

  python benchmarks/probes/gaussian_fold_ab.py --out FILE [--n-T 200 2000]

Cases, each as value, value + gradient (in the three response-like parameters and the 9 x 4 n_T
weights) and Hessian (the three parameters) of a Poisson-like loss:

* ``pairwise``: ``w @ gaussian_bin_probabilities(...)``, the bin probabilities of every
  (Gaussian, bin) pair, four erfc each (lower/upper tail difference on both branches);
* ``dot``: signed tails summed with a matrix-vector product, one erfc per (Gaussian, edge),
  analytic JVP whose tangent is three matrix-vector products (the first version of
  :func:`nuejax.detector.response.gaussian_fold`);
* ``mixed``: the value as in ``dot``, the tangent one fused sum: what ``gaussian_fold`` does now;
* ``sum``: value and tangent both fused sums;
* ``package``: ``gaussian_fold`` itself (the same as ``mixed``).

The Gaussians stand in for the floating model's quadrature nodes: 9 spectra x n_T recoil bins x 4
nodes on [0, T_end] of the default model's signals, N_p = 510 T (1 - 0.1 T/(1 + T)), variance
N_p + 5 + (0.01 N_p)^2, 861 unit N_p bins from 90 to 950. float64; median of 30 calls after one.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload, run
import common  # noqa: E402  (puts the repository root on sys.path too)
from common import median_ms  # noqa: E402

T_END = (0.26, 0.23, 0.66, 1.2, 16.0, 18.0, 1.0, 1.5, 1.5)


def variants():
    import jax
    import jax.numpy as jnp

    from nuejax.detector import response as R

    sq2, isp = math.sqrt(2.0), 1.0 / math.sqrt(math.pi)

    def make(kind):
        @jax.custom_jvp
        def tails(w, mu, s, e):
            t = R.signed_tails(mu, s, e)[1]
            return jnp.sum(w[:, None] * t, axis=0) if kind == "sum" else w @ t

        @tails.defjvp
        def tails_jvp(primals, tangents):
            w, mu, s, e = primals
            dw, dmu, ds, _ = tangents
            z, t = R.signed_tails(mu, s, e)
            dens = isp * jnp.exp(-z * z)
            a, b = w * dmu / (sq2 * s), w * ds / s
            out = jnp.sum(w[:, None] * t, axis=0) if kind == "sum" else w @ t
            if kind == "dot":
                return out, dw @ t - a @ dens - b @ (z * dens)
            return out, jnp.sum(dw[:, None] * t - dens * (a[:, None] + b[:, None] * z), axis=0)

        def fold(w, mu, var, edges):
            s = jnp.sqrt(jnp.maximum(var, 1e-12))
            S = tails(w, mu, s, edges)
            inside = jax.ops.segment_sum(w, jnp.searchsorted(edges, mu, side="right"), num_segments=edges.shape[0] + 1)
            return inside[1:-1] + (S[1:] - S[:-1])

        return fold

    return {"pairwise": lambda w, mu, var, e: w @ R.gaussian_bin_probabilities(mu, var, e),
            "dot": make("dot"), "mixed": make("mixed"), "package": R.gaussian_fold, "sum": make("sum")}


def main(argv=None):
    ap = common.parser(__doc__)
    ap.add_argument("--n-T", type=int, nargs="+", default=[200, 2000])
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    def timed(fn, *args, n=30):
        return median_ms(fn, *args, n=n)

    dev = jax.devices()[0]
    out = {"device": f"{dev.platform}: {getattr(dev, 'device_kind', '')}", "jax": jax.__version__,
           "date": time.strftime("%Y-%m-%d"), "cases": {}}
    folds = variants()
    for n_T in a.n_T:
        rng = np.random.default_rng(0)
        nodes = jnp.asarray(np.concatenate([np.sort(rng.uniform(0, te, 4 * n_T)) for te in T_END]))
        w0 = jnp.asarray(rng.uniform(0.1, 1, nodes.size))
        edges = jnp.asarray(np.arange(90, 952) - 0.5)
        data = jnp.asarray(rng.poisson(50, 861).astype(float))
        p = jnp.array([510.0, 5.0, 0.01])
        for kind, fold in folds.items():
            def loss(p, w, fold=fold):
                mu = p[0] * nodes * (1 - 0.1 * nodes / (1 + nodes))
                m = fold(w, mu, mu + p[1] + (p[2] * mu) ** 2, edges) + 1.0
                return jnp.sum(m - data * jnp.log(m))

            r = {"value_ms": timed(jax.jit(loss), p, w0),
                 "value_and_grad_ms": timed(jax.jit(jax.value_and_grad(loss, argnums=(0, 1))), p, w0),
                 "hessian_ms": timed(jax.jit(jax.hessian(loss)), p, w0, n=10)}
            out["cases"][f"nT{n_T}_{kind}"] = r
            print(n_T, kind, {k: round(v, 4) for k, v in r.items()}, flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
