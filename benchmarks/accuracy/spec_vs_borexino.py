"""The shipped Borexino specification files (nuejax/analyses/specs/borexino_phase3_*.toml) against
`nuejax borexino --json`: every number both give, with the largest relative difference.

  nuejax borexino --json --no-plots --out DIR > borexino.json
  python benchmarks/accuracy/spec_vs_borexino.py borexino.json OUT.json

Runs `nuejax run` on the three shipped specs (CNO, mu_nu, NSI) in this process and compares: the
CNO fit's values, its 68 % CNO interval and the profile at the published points; the mu_nu upper
limit and best fit (SSM-constrained); the eps_ee_L and eps_ee_R 90 % regions and best fits.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import nuejax  # noqa: E402


def _rel(a, b) -> float:
    if a is None or b is None:
        return 0.0 if a is None and b is None else float("inf")
    return abs(a - b) / max(abs(b), 1e-12)


def main(ref_path: str, out_path: str) -> None:
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
    diffs = {k: _rel(a, b) for k, (a, b) in pairs.items()}
    worst = max(diffs, key=diffs.get)
    out = {"n_compared": len(pairs), "max_rel_diff": diffs[worst], "worst": worst,
           "pairs": {k: {"spec": a, "command": b, "rel": diffs[k]} for k, (a, b) in pairs.items()},
           "spec_seconds": time.perf_counter() - t0, "command_seconds": ref.get("seconds")}
    Path(out_path).write_text(json.dumps(out, indent=1))
    print(f"{len(pairs)} numbers; largest relative difference {diffs[worst]:.2e} ({worst}); "
          f"specs {out['spec_seconds']:.0f} s, command {out['command_seconds']:.0f} s")


if __name__ == "__main__":
    main(*sys.argv[1:3])
