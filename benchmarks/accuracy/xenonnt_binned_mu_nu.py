"""A first μ_ν limit from the XENONnT SR0 open data with nuejax's xenon pipeline: binned Poisson
likelihood on the paper's 1-keV bins (1–30 keV), B0 with its SM solar-neutrino part replaced by
nuejax's prediction (nuejax.analyses.xenonnt), free: μ_ν, the flux normalisations (B16
constraints), the resolution a, b (10 % constraints, an assumption), the background scale.

    python benchmarks/accuracy/xenonnt_binned_mu_nu.py

Prints the fit, the profile of μ_ν and its one-sided 90 % CL upper limit (q̃, Δχ² = 1.642; the
package's convention, not XENONnT's Neyman construction). docs/xenonnt.md records the output.
"""
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common
import common  # noqa: E402,F401  (puts the repository root on sys.path too)

import numpy as np  # noqa: E402

import nuejax  # noqa: E402


def main():
    nuejax.enable_x64()
    from nuejax.analyses import xenonnt_sr0_model
    from nuejax.inference import fit, profile_scan

    t0 = time.perf_counter()
    m, n = xenonnt_sr0_model()
    m = m.with_parameters(m.parameters.release("mu_nu"))
    print(f"built in {time.perf_counter() - t0:.1f} s; {int(n.sum())} events in {n.size} bins", flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fit(m, n)
        print(f"fit: valid {r.valid}, -2 ln L {r.fval:.3f}, minima {len(r.minima)}; " +
              ", ".join(f"{k} = {float(r.values[k]):.4g}" for k in m.parameters.free_names), flush=True)
        s = profile_scan(m, n, "mu_nu", np.linspace(0.0, 2.0, 41))
    for v, dchi in zip(s.values, s.delta_chi2):
        print(f"  mu_nu = {v:.2f}: delta chi2 = {dchi:.3f}")
    ul = s.upper_limit(0.9)
    print(f"mu_nu < {ul:.3f} x 1e-11 mu_B = {ul * 1e-11:.3g} mu_B (90 % CL, {s.upper_limit_convention})")
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
