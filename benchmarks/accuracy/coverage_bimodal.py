"""Feldman–Cousins coverage where −2 ln L is bimodal, with every toy fitted from the multi-start
design (issue 26), and how many toys hold a second minimum.

    python benchmarks/accuracy/coverage_bimodal.py [--toys 400] [--inner 400[,0]] [--starts 16]
                                                  [--no-one] [--cases mu_nu,eps_etau] [--json FILE]
                                                  [--eps-ee V] [--mu-eps-ee V] [--seed K] [--dump DIR]

Cases (truth, the interval's parameter, the profiled ones):

* ``mu_nu``: the demo's model (default Borexino-like model, n_T = 200, fast path, ε^L_ee and μ_ν
  free with the nuisances) at μ_ν = 1 × 10⁻¹¹ μ_B, ε^L_ee = 0.05: small μ_ν is also fitted by the
  other ε^L_ee branch (g_L + ε^L_ee ≈ −g_L), a second minimum of the profile (docs/demo).
* ``eps_etau``: the general-NSI model of tests/test_global_minima.py (ε^L_ee and Re ε^L_eτ free,
  9 nuisances) at Re ε^L_eτ = 0.3, ε^L_ee = 0 (``--eps-ee`` sets other values of ε^L_ee, e.g. the
  other branch, −2 g_L = −1.477): mirror minima in Re ε^L_eτ and a second ε^L_ee branch.

For each: ``coverage(model, truth, name, toys, inner_toys=inner, starts=S)`` (the profile
construction: each toy's critical value from ``inner`` toys at the truth with the nuisances fitted
to that toy, conditioned on the branch; ``pooled``: the same toys with every valid inner toy
counted) for S = 1 and ``--starts``; and ``batch_fit`` of ``toys`` toys at the truth with the
design, counting toys where a second distinct minimum was found (``second_minimum_gap`` finite)
and where it lies within 2.706. Prints one JSON object per result; ``--dump DIR`` writes every
:class:`~nuejax.inference.CoverageResult` (per toy: statistic, critical value, conditional
nuisances) to ``DIR/<case>_<label>.json``, and the summary splits the coverage by the ε^L_ee
branch of each toy's conditional fit.
"""
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common, workload
import common  # noqa: E402,F401  (puts the repository root on sys.path too)

import nuejax  # noqa: E402

nuejax.enable_x64()

import jax  # noqa: E402
import numpy as np  # noqa: E402
from nuejax.inference.construction import ACCEPT_TOL  # noqa: E402


def models(cases, eps_ee=(0.0,), mu_eps_ee=(0.05,)):
    from nuejax.model import borexino_like_model, fast_model

    out = {}
    if "mu_nu" in cases:
        base = borexino_like_model(n_T=200)
        m = fast_model(base.with_parameters(base.parameters.release("eps_ee_L", "mu_nu")))
        for v in mu_eps_ee:
            out["mu_nu" if v == 0.05 else f"mu_nu_ee{v:g}"] = (m, dict(mu_nu=1.0, eps_ee_L=v), "mu_nu")
    if "eps_etau" in cases:
        base = borexino_like_model(n_T=60, window=(150, 900), signals=("pp", "pep", "7Be_862", "7Be_384", "13N"),
                                   backgrounds=("210Bi", "85Kr", "210Po", "11C", "ext_208Tl"), nsi=("eps_etau_L_re",))
        m = fast_model(base.with_parameters(base.parameters.release("eps_ee_L", "eps_etau_L_re")))
        for v in eps_ee:
            out["eps_etau" if v == 0.0 else f"eps_etau_ee{v:g}"] = (m, dict(eps_etau_L_re=0.3, eps_ee_L=v), "eps_etau_L_re")
    return out


def by_branch(c, m, t_crit=None):
    """Coverage split by the ε^L_ee branch of each toy's conditional fit (nearer to the true value
    or to its image under ε^L_ee → −2 g_L − ε^L_ee), with each part's median critical value
    (``t_crit``: other critical values than the result's, e.g. its pooled ones)."""
    t_crit = c.t_crit if t_crit is None else t_crit
    if "eps_ee_L" not in c.nuisances or c.t is None:
        return {}
    e = c.nuisance_hat[:, c.nuisances.index("eps_ee_L")]
    true = c.truth.get("eps_ee_L", float(m.parameters.values()["eps_ee_L"]))
    point = {"eps_ee_L": true, "eps_etau_L_re": 0.0, "mu_nu": 0.0}
    image = next(r["eps_ee_L"] for r in (f(point) for f in m.symmetries()) if "eps_ee_L" in r)
    valid = np.isfinite(c.t)
    out = {}
    for label, sel in (("same_branch", np.abs(e - true) <= np.abs(e - image)), ("other_branch", np.abs(e - true) > np.abs(e - image))):
        s = sel & valid
        cov = c.t[s] <= t_crit[s] + ACCEPT_TOL
        out[label] = {"n": int(s.sum()), "covered": int(cov.sum()),
                      "t_crit_median": float(np.median(t_crit[s])) if s.any() else None}
    return out


def main():
    ap = common.parser(__doc__)
    ap.add_argument("--toys", type=int, default=400)
    ap.add_argument("--inner", default="400", help="inner toys per coverage toy; a comma list runs each "
                    "(0: the exact construction, one critical value at the true nuisances)")
    ap.add_argument("--no-one", action="store_true", help="skip the single-start runs")
    ap.add_argument("--starts", type=int, default=16)
    ap.add_argument("--cases", default="mu_nu,eps_etau")
    ap.add_argument("--json", default=None)
    ap.add_argument("--eps-ee", default="0", help="true ε^L_ee of the eps_etau case (a comma list runs each)")
    ap.add_argument("--mu-eps-ee", default="0.05", help="true ε^L_ee of the mu_nu case (a comma list runs each; "
                    "-1.527 = -2 g_L - 0.05 is the other branch)")
    ap.add_argument("--seed", type=int, default=3, help="key of the coverage toys (3: the recorded runs)")
    ap.add_argument("--dump", default=None, help="folder for the per-toy CoverageResult JSON files")
    a = ap.parse_args()

    from nuejax.inference import batch_fit, coverage

    results = {"device": jax.devices()[0].device_kind if hasattr(jax.devices()[0], "device_kind") else "cpu",
               "jax": jax.__version__, "date": time.strftime("%Y-%m-%d"), "toys": a.toys, "inner": a.inner}
    inners = [int(v) for v in str(a.inner).split(",")]
    for case, (m, truth, name) in models(a.cases.split(","), [float(v) for v in a.eps_ee.split(",")],
                                         [float(v) for v in a.mu_eps_ee.split(",")]).items():
        p = m.parameters.values(truth)
        keys = jax.random.split(jax.random.PRNGKey(7), a.toys)
        counts, aux = jax.vmap(lambda k: m.draw_toy(k, p))(keys)
        t = time.perf_counter()
        b = batch_fit(m, np.asarray(counts), aux=aux, starts=a.starts)
        gap = np.asarray(b.second_minimum_gap)
        row = {"case": case, "truth": truth, "batch_fit_s": time.perf_counter() - t,
               "converged": int(np.sum(b.converged)), "second_minimum": int(np.sum(np.isfinite(gap))),
               "second_within_2.706": int(np.sum(gap < 2.706))}
        for inner in inners:
            for s in ((a.starts,) if a.no_one else (1, a.starts)):
                t = time.perf_counter()
                c = coverage(m, truth, name, a.toys, key=a.seed, inner_toys=inner, starts=s)
                label = f"starts_{s}" if len(inners) == 1 else f"starts_{s}_inner_{inner}"
                row[label] = {"fraction": c.fraction, "error": c.error, "n_valid": c.n_valid,
                              "n_covered": c.n_covered, "t_crit_median": float(np.median(c.t_crit)),
                              "seconds": time.perf_counter() - t, **by_branch(c, m)}
                if c.t_crit_pooled is not None:  # the same toys, every valid inner toy counted
                    valid = np.isfinite(c.t)
                    n_cov = int(np.sum(c.t[valid] <= c.t_crit_pooled[valid] + ACCEPT_TOL))
                    f = n_cov / max(int(valid.sum()), 1)
                    row[label]["pooled"] = {"fraction": f, "error": float(np.sqrt(f * (1 - f) / max(int(valid.sum()), 1))),
                                            "n_covered": n_cov, **by_branch(c, m, c.t_crit_pooled)}
                if a.dump:
                    Path(a.dump).mkdir(parents=True, exist_ok=True)
                    Path(a.dump, f"{case}_{label}.json").write_text(json.dumps(c.to_dict()))
                print(json.dumps({label: row[label]}), flush=True)
        print(json.dumps(row), flush=True)
        results[case] = row
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
