"""What the mediator curves of ``nuejax xenonnt`` cost: one row's −2 ln L and its value, gradient
and Hessian on the XENONnT SR0 mediator model (fast mediators, both couplings released), then the
curves themselves (``nuejax.analyses.mediators.mediator_curves``) at a few masses, timed whole.

  python benchmarks/probes/mediator_curves_probe.py [--masses 5] [--out FILE.json]   # --masses 0: no curves

Prints one JSON record: the milliseconds per value and per value + gradient + Hessian (20 calls
after a warm-up), XLA's bytes and flops of one compiled value, the curves' seconds (compilation included
unless the package's compilation cache holds them) and every curve's limits on g, so that two
commits' records can be compared number by number (the probe imports the nuejax of the checkout
it lives in: run each commit's copy).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common
import common  # noqa: E402,F401  (puts the repository root on sys.path too)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import nuejax  # noqa: E402
import nuejax.cache  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--masses", type=int, default=5, help="masses of the curves, log-spaced over 0.01-100 MeV (0: none)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    nuejax.enable_x64()
    nuejax.cache.enable_compilation_cache()
    from nuejax.analyses import mediators as M
    from nuejax.analyses.xenonnt import xenonnt_sr0_model
    from nuejax.inference import fitting as F
    from nuejax.inference.problem import FitProblem, Pins

    model, data = xenonnt_sr0_model(mediators=("zprime", "phi"), fast_mediators=True)
    mm = M.mediator_model(model, "zprime")
    s = FitProblem.create(mm, data, fixed_names=("zprime_coupling", "zprime_mass"))
    names = tuple(v for v in s.value_names if v in set(s.names) | set(s.fixed_names))
    w = s.with_names(names)
    x = np.array(w.start())
    x[names.index("zprime_mass")], x[names.index("zprime_coupling")] = 1.0, 5.0
    pins = Pins(jnp.zeros(len(x), bool), jnp.zeros(len(x)))
    x = jnp.asarray(x)
    out = {"jax": jax.__version__, "device": jax.devices()[0].device_kind, "n_free": len(names)}
    for label, f, n in (("value", jax.jit(lambda v: w.objective(v, pins)), 50),
                        ("value_grad_hessian", jax.jit(lambda v: F.value_grad_hessian(v, (w, pins))), 20)):
        jax.block_until_ready(f(x))
        t = time.perf_counter()
        for _ in range(n):
            jax.block_until_ready(f(x))
        out[f"{label}_ms"] = (time.perf_counter() - t) / n * 1e3
    cost = jax.jit(lambda v: w.objective(v, pins)).lower(x).compile().cost_analysis()  # after fusion
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    out["value_bytes"], out["value_flops"] = float(cost["bytes accessed"]), float(cost["flops"])
    if a.masses > 0:
        masses = np.logspace(-2, 2, a.masses)
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        curves = M.mediator_curves(model, data, masses)
        out["curves_s"] = time.perf_counter() - t
        out["curves"] = {k: {"g": v["couplings"], "best_products": v["best_products"],
                             "scans_converged": v["scans_converged"]} for k, v in curves.items()}
    text = json.dumps(out)
    print(text)
    if a.out:
        Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
