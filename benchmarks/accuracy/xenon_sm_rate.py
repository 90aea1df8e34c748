"""The Standard-Model solar-neutrino electron-recoil rate on xenon (stepping approximation,
nuejax.physics.atomic) against XENONnT SR0's background model B0 (nuejax/data/xenonnt_sr0/).

    python benchmarks/accuracy/xenon_sm_rate.py

Prints, at 1, 5, 10 and 30 keV: the rate in events/(t·yr·keV) (with radiative corrections, and
at tree level), the same times the SR0 efficiency, and B0 at the nearest 0.1-keV step; then the
expected detected events in 1–30 keV and 1–140 keV for 1.16 t·yr (efficiency held at 0.815 above
30 keV; no energy resolution). docs/xenonnt.md records the output.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common
import common  # noqa: E402,F401  (puts the repository root on sys.path too)

import numpy as np  # noqa: E402

import nuejax  # noqa: E402

from nuejax.io.xenonnt import packaged_xenonnt_sr0  # noqa: E402
from nuejax.physics.atomic import solar_recoil_rate  # noqa: E402


def main():
    nuejax.enable_x64()
    d = packaged_xenonnt_sr0()
    T = np.array([1.0, 5.0, 10.0, 30.0])
    rad, tree = (np.asarray(solar_recoil_rate(T * 1e-3, radiative=r)["total"]) for r in (True, False))
    free = np.asarray(solar_recoil_rate(T * 1e-3, stepping=False)["total"])
    eff = d.efficiency_at(T)
    b0 = d.b0_rate[np.argmin(np.abs(d.b0_energy[None, :] - T[:, None] - 0.05), axis=1)]
    print("T [keV] | SM (BKS) | SM tree | free electrons | SM x eff | B0 | (SM x eff)/B0")
    for i, t in enumerate(T):
        print(f"{t:g} | {rad[i]:.3f} | {tree[i]:.3f} | {free[i]:.3f} | {rad[i] * eff[i]:.3f} | {b0[i]:.3f} | "
              f"{rad[i] * eff[i] / b0[i]:.3f}")
    for lo, hi, step in ((1.0, 30.0, 0.01), (1.0, 140.0, 0.05)):
        t = np.arange(lo, hi, step) + step / 2
        for r in (True, False):
            n = np.sum(np.asarray(solar_recoil_rate(t * 1e-3, radiative=r)["total"]) * d.efficiency_at(t)) * step
            print(f"{lo:g}-{hi:g} keV, {'BKS' if r else 'tree'}: {n * d.exposure:.1f} detected events in {d.exposure} t yr")
    t = np.arange(1.0, 30.0, 0.01) + 0.005
    print(f"B0 in 1-30 keV: {np.sum(np.interp(t, d.b0_energy, d.b0_rate)) * 0.01 * d.exposure:.1f} events")


if __name__ == "__main__":
    main()
