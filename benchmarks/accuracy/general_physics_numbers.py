"""The numbers of docs/physics.md section 6 (general NSI, propagation, mediators, day-night).

Run: python benchmarks/accuracy/general_physics_numbers.py [--json out.json]   (about a minute on 2 CPU cores)
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    import nuejax

    nuejax.enable_x64()
    import jax.numpy as jnp

    from nuejax.physics import OscillationParams, build_source, day_night_asymmetry, earth_exposure
    from nuejax.physics.oscillation import (density_from_weights, density_matrix, mass_state_weights_three_flavour,
                                            production_profile)

    ref = json.loads((Path(__file__).resolve().parents[2] / "tests" / "reference_propagation.json").read_text())
    osc = OscillationParams()
    cm = lambda x: np.array(x["real"]) + 1j * np.array(x["imag"])  # noqa: E731
    out = {"solar": {}, "day_night": {}}
    for key, case in ref["solar"].items():
        prof = production_profile(case["component"])
        eps = jnp.asarray(cm(ref["epsV"][case["epsV"]]))
        e = jnp.array([case["E_MeV"]])
        rho = np.asarray(density_matrix(e, osc, prof, eps))[0]
        rho3 = np.asarray(density_from_weights(mass_state_weights_three_flavour(e, osc, prof, eps), osc))[0]
        sm = ref["solar"][key.rsplit("|", 1)[0] + "|eps0"]
        rho_sm = np.asarray(density_matrix(e, osc, prof))[0]
        out["solar"][key] = dict(P_ee=float(rho[0, 0].real), P_ee_reference=case["P_ee"],
                                 shift=float((rho - rho_sm)[0, 0].real), shift_reference=case["P_ee"] - sm["P_ee"],
                                 max_rho_difference=float(np.abs(rho - cm(case["rho"])).max()),
                                 max_rho_difference_three_flavour=float(np.abs(rho3 - cm(case["rho"])).max()))
    bx, sk = earth_exposure("borexino"), earth_exposure("super-kamiokande")
    be7, b8 = build_source("7Be_862"), build_source("8B")
    sk1 = OscillationParams(sin2_theta12=0.55 / 1.55, sin2_theta13=0.0, dm2_21=6.3e-5)
    out["day_night"] = {
        "night_fraction_borexino": float(bx.night_fraction),
        "borexino_7Be_A_dn": float(day_night_asymmetry(be7, bx, osc, threshold=0.45, t_upper=0.66)),
        "sk1_configuration_D_minus_N_over_mean": -float(day_night_asymmetry(b8, sk, sk1, threshold=4.49,
                                                                            t_upper=19.49)),
        "sk_nufit6_T_gt_4MeV_D_minus_N_over_mean": -float(day_night_asymmetry(b8, sk, osc, threshold=4.0)),
        "sk_dm2_4.8e-5_T_gt_4MeV_D_minus_N_over_mean": -float(day_night_asymmetry(
            b8, sk, osc._replace(dm2_21=4.8e-5), threshold=4.0)),
    }
    json.dump(out, sys.stdout, indent=1)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
