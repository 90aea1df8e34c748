"""The shipped Borexino specification files (nuejax/analyses/specs/borexino_phase3_*.toml) against
`nuejax borexino --json`: every number both give, with the largest relative difference.

  nuejax borexino --json --no-plots --out DIR > borexino.json
  python benchmarks/accuracy/spec_vs_borexino.py borexino.json OUT.json [DIR]

Runs `nuejax run` on the three shipped specs (CNO, mu_nu, NSI) in this process and compares: the
CNO fit's values, its 68 % CNO interval and the profile at the published points; the goodness of
fit (deviance, dof, p-values from chi2 and from the toys); the mu_nu upper limit and best fit
(SSM-constrained); the eps_ee_L and eps_ee_R 90 % regions and best fits; with the command's
output folder DIR, also the 2-D region's Delta chi2 at every converged grid point
(DIR/eps_2d_scan.json; differences relative to max(Delta chi2, 1)).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np  # noqa: E402

import nuejax  # noqa: E402


def _rel(a, b, floor: float = 1e-12) -> float:
    if a is None or b is None:
        return 0.0 if a is None and b is None else float("inf")
    return abs(a - b) / max(abs(b), floor)


def main(ref_path: str, out_path: str, ref_dir: str | None = None) -> None:
    nuejax.enable_x64()
    from nuejax.analyses.spec import run_spec

    ref = json.loads(Path(ref_path).read_text().strip().splitlines()[-1])
    t0 = time.perf_counter()
    cno = run_spec("borexino_phase3_cno")["questions"]
    mu = run_spec("borexino_phase3_mu_nu")["questions"]
    nsi = run_spec("borexino_phase3_nsi")["questions"]
    pairs = {f"fit.{k}": (cno["fit"]["values"][k], v) for k, v in ref["fit"].items()}
    pairs["cno_interval_68.lower"] = (cno["cno_profile"]["interval"][0], ref["cno_interval_68"][0])
    pairs["cno_interval_68.upper"] = (cno["cno_profile"]["interval"][1], ref["cno_interval_68"][1])
    prof = dict(zip(cno["cno_profile"]["values"], cno["cno_profile"]["delta_chi2"]))
    for k, v in ref["cno_profile"].items():
        pairs[f"cno_profile.{k}"] = (prof[float(k)], v)
    ul = mu["mu_nu_limit"]["upper"]
    pairs["mu_nu_upper_90"] = (None if ul is None else ul * 1e-11, ref["mu_nu_upper_90"])
    pairs["mu_nu_best"] = (mu["mu_nu_limit"]["best"], ref["mu_nu_best"])
    for name in ("eps_ee_L", "eps_ee_R"):
        got = nsi[f"{name}_profile"]["regions"]
        want = ref[f"{name}_regions_90"]
        pairs[f"{name}_regions_90.count"] = (float(len(got)), float(len(want)))
        for i, (g, w) in enumerate(zip(got, want)):
            for j in range(2):
                pairs[f"{name}_regions_90[{i}][{j}]"] = (g[j], w[j])
        pairs[f"eps_best.{name}"] = (nsi["fit"]["values"][name], ref["eps_best"][name])
    gof = cno["gof"]
    for k, r in (("deviance", "deviance"), ("ndof", "ndf"), ("p_chi2", "p_chi2"), ("p_toys", "p_toys"),
                 ("n_toys_converged", "n_toys_converged")):
        pairs[f"gof.{k}"] = (gof[k], ref[r])
    floor = {}
    if ref_dir is not None:
        from nuejax.inference import load_result

        s2 = load_result(Path(ref_dir) / "eps_2d_scan.json")
        reg = nsi["eps_2d_region"]
        d_ref = np.where(np.asarray(s2.converged), np.asarray(s2.delta_chi2), np.nan)
        pairs["eps_2d.converged"] = (float(reg["converged"]), float(np.sum(np.asarray(s2.converged))))
        for i, row in enumerate(reg["delta_chi2"]):
            for j, v in enumerate(row):
                if v is not None and np.isfinite(d_ref[i, j]):
                    key = f"eps_2d.delta_chi2[{i}][{j}]"
                    pairs[key] = (v, float(d_ref[i, j]))
                    floor[key] = 1.0
    diffs = {k: _rel(a, b, floor.get(k, 1e-12)) for k, (a, b) in pairs.items()}
    worst = max(diffs, key=diffs.get)
    out = {"n_compared": len(pairs), "max_rel_diff": diffs[worst], "worst": worst,
           "pairs": {k: {"spec": a, "command": b, "rel": diffs[k]} for k, (a, b) in pairs.items()},
           "spec_seconds": time.perf_counter() - t0, "command_seconds": ref.get("seconds")}
    Path(out_path).write_text(json.dumps(out, indent=1))
    print(f"{len(pairs)} numbers; largest relative difference {diffs[worst]:.2e} ({worst}); "
          f"specs {out['spec_seconds']:.0f} s, command {out['command_seconds']:.0f} s")


if __name__ == "__main__":
    main(*sys.argv[1:4])
