"""Coverage of the combined (Borexino Phase-III + XENONnT SR0) Feldman–Cousins μ_ν interval at
μ_ν = 0: the fraction of toys drawn from the combination at μ_ν = 0 (every nuisance at its
default) whose 90 % CL interval contains 0 (:func:`nuejax.inference.coverage`), with the critical
value at μ_ν = 0 from an independent set of toys. The auxiliary measurements are not redrawn
(Borexino's ²¹⁰Bi bound is a half-Gaussian without an auxiliary measurement to redraw), as in
``nuejax combine``'s asymptotic construction.

    python benchmarks/accuracy/combined_mu_nu_coverage.py [n_toys] [out.json] [chunk] [seed] [mu_true ...]

docs/combination.md records the output (device, JAX version, date in the JSON).
"""
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common
import common  # noqa: E402,F401  (puts the repository root on sys.path too)

import jax  # noqa: E402

import nuejax  # noqa: E402


def main():
    nuejax.enable_x64()
    from nuejax.analyses.borexino import borexino_phase3_model, ssm_constrained
    from nuejax.analyses.xenonnt import xenonnt_sr0_model
    from nuejax.inference import coverage
    from nuejax.model.combine import combine

    n_toys = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    path = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    chunk = int(sys.argv[3]) if len(sys.argv) > 3 else None
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    truths = [float(v) for v in sys.argv[5:]] or [0.0]
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    bx, _, _ = borexino_phase3_model()
    xe, _ = xenonnt_sr0_model()
    both = combine(ssm_constrained(bx), xe, labels=("borexino", "xenonnt"), shared=("mu_nu", "eps_ee_L", "eps_ee_R"))
    both = both.with_parameters(both.parameters.release("mu_nu"))
    out = {"n_toys": n_toys, "device": str(jax.devices()[0]), "jax": jax.__version__, "date": time.strftime("%Y-%m-%d"),
           "seed": seed, "build_s": time.perf_counter() - t0, "cl": 0.9, "resample_aux": False, "results": []}
    for mu in truths:
        t = time.perf_counter()
        c = coverage(both, {"mu_nu": mu}, "mu_nu", n_toys, key=seed, cl=0.9, resample_aux=False, chunk=chunk)
        row = {"mu_nu_true": mu, "coverage": c.fraction, "error": c.error, "n_valid": c.n_valid,
               "n_covered": c.n_covered, "critical_value": float(c.t_crit[0]), "seconds": time.perf_counter() - t}
        out["results"].append(row)
        print(json.dumps(row), flush=True)
        if path:
            path.write_text(json.dumps(out, indent=1, default=float))
    print(json.dumps(out, default=float))


if __name__ == "__main__":
    main()
