"""Accuracy of jax.random.poisson against the Poisson variance, and of nuejax's split draws.

    python benchmarks/accuracy/poisson_sampler.py [--draws 400000] [--json FILE]

For means from 20 to 3e6, the variance/mean ratio of N draws and its deviation from 1 in
standard errors (sqrt(2/N)). Recorded in docs/inference.md ("Poisson draws").
"""
import argparse
import json

import nuejax

nuejax.enable_x64()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from nuejax.model.likelihood import poisson_draw, poisson_parts  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=400_000)
    ap.add_argument("--json")
    a = ap.parse_args()
    key = jax.random.PRNGKey(1)
    rows = []
    print(f"{'mean':>12} {'jax var/mean':>13} {'z':>6} {'split var/mean':>15} {'z':>6} parts")
    for lam in np.geomspace(20, 3e6, 40):
        mu = jnp.full(a.draws, lam)
        plain = np.asarray(jax.random.poisson(key, mu), float)
        parts = poisson_parts(lam)
        split = np.asarray(poisson_draw(key, mu, parts=parts), float)
        se = np.sqrt(2.0 / a.draws)
        r1, r2 = plain.var() / lam, split.var() / lam
        rows.append({"mean": float(lam), "jax_ratio": r1, "jax_z": (r1 - 1) / se, "split_ratio": r2,
                     "split_z": (r2 - 1) / se, "parts": parts})
        print(f"{lam:12.1f} {r1:13.4f} {(r1 - 1) / se:6.1f} {r2:15.4f} {(r2 - 1) / se:6.1f} {parts}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"jax": jax.__version__, "device": jax.devices()[0].platform, "draws": a.draws, "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
