"""The B−L vector's exclusion curve from the Borexino Phase-III model alone, compared point by point
with the published Borexino curve of M. Bauer, P. Foldenauer and J. Jaeckel, "Hunting All the
Hidden Photons", JHEP 07 (2018) 094, arXiv:1803.05466 (Fig. 13, from Borexino's Phase-I ⁷Be
rate), as digitised in DarkCast (P. Ilten, Y. Soreq, M. Williams, W. Xue, arXiv:1801.04847;
limit file ``limits/Borexino_Bauer2018onh.lmt``: mass [GeV], g_{B−L}).

Ours: the Phase-III spectral fit of ``nuejax borexino`` with every solar rate constrained to the
SSM and both mediators on their fast path (``Phase3Choices(mediators=True)``), the one-sided 90 %
CL q̃ limit on g² = g_ν g_e (B−L charges −1 for ν and e), every other parameter profiled
(:func:`nuejax.analyses.mediators.mediator_limit`), at the masses of the digitised points.

    python benchmarks/accuracy/borexino_b_minus_l.py [out.json]

docs/combination.md records the output.
"""
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common
import common  # noqa: E402,F401  (puts the repository root on sys.path too)

import jax  # noqa: E402
import numpy as np  # noqa: E402

import nuejax  # noqa: E402

#: (mass [MeV], g_{B−L}) read from DarkCast's Borexino_Bauer2018onh.lmt (rows 2, 9, 26, 35, 44)
BFJ = ((0.2276, 1.745e-6), (0.9663, 2.707e-6), (10.21, 2.299e-5), (31.16, 7.142e-5), (95.85, 2.201e-4))


def main():
    nuejax.enable_x64()
    from nuejax.analyses.borexino import Phase3Choices, borexino_phase3_model, ssm_constrained
    from nuejax.analyses.mediators import mediator_limit, mediator_model

    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    model, data, _ = borexino_phase3_model(Phase3Choices(mediators=True))
    model = mediator_model(ssm_constrained(model), "zprime", [m for m, _ in BFJ])
    counts = np.asarray(data.counts)
    out = {"device": str(jax.devices()[0]), "jax": jax.__version__, "date": time.strftime("%Y-%m-%d"),
           "build_s": time.perf_counter() - t0, "rows": []}
    for mass, g_ref in BFJ:
        t = time.perf_counter()
        r = mediator_limit(model, counts, "zprime", mass)
        row = {"mass_mev": mass, "g_nuejax": r["g"], "g_bfj": g_ref, "ratio": None if r["g"] is None else r["g"] / g_ref,
               "scan_points_converged": r["converged"], "seconds": time.perf_counter() - t}
        out["rows"].append(row)
        print(json.dumps(row), flush=True)
    out["seconds"] = time.perf_counter() - t0
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(json.dumps(out, indent=1))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
