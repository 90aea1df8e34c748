"""The steps of ``nuejax xenonnt`` on the fast path (nuejax.model.fast.fast_model: the signals as a
polynomial in μ_ν and ε, folded once) against the general evaluation they used before: the μ_ν
fit and profile (the grid of the command), the asymptotic CLs limit, the (ε^L_ee, ε^R_ee) fit and
both profiles. Prints one JSON object: each path's seconds and the largest differences.

    JAX_ENABLE_X64=1 python benchmarks/accuracy/xenonnt_fast_vs_general.py [--quick]

``--quick``: every third grid point of the profiles.
"""
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root

import numpy as np  # noqa: E402

import nuejax  # noqa: E402


def steps(model, data, quick):
    from nuejax.analyses.xenonnt_run import EPS_L_GRID, EPS_R_GRID, MU_GRID, MU_TEST, SCAN_ITER
    from nuejax.inference import cls_upper_limit, fit, profile_scan

    take = (lambda g: g[::3]) if quick else (lambda g: g)  # noqa: E731
    out, t = {}, time.perf_counter()
    m_mu = model.with_parameters(model.parameters.release("mu_nu"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        f = fit(m_mu, data)
        out["mu_fit"] = [f.fval, f.values["mu_nu"]]
        out["mu_profile"] = np.asarray(profile_scan(m_mu, data, "mu_nu", take(MU_GRID), n_iter=SCAN_ITER).delta_chi2)
        a = cls_upper_limit(m_mu, data, "mu_nu", MU_TEST)
        out["cls"] = [a.limit, a.limit_sb, a.expected_sb.get("0")]
        m_eps = model.with_parameters(model.parameters.release("eps_ee_L", "eps_ee_R"))
        fe = fit(m_eps, data)
        out["eps_fit"] = [fe.fval, fe.values["eps_ee_L"], fe.values["eps_ee_R"]]
        out["eps_L"] = np.asarray(profile_scan(m_eps, data, "eps_ee_L", take(EPS_L_GRID), global_fit=fe,
                                               n_iter=SCAN_ITER).delta_chi2)
        out["eps_R"] = np.asarray(profile_scan(m_eps, data, "eps_ee_R", take(EPS_R_GRID), global_fit=fe,
                                               n_iter=SCAN_ITER).delta_chi2)
    return out, time.perf_counter() - t


def main():
    nuejax.enable_x64()
    from nuejax.analyses.xenonnt import xenonnt_sr0_model
    from nuejax.model import fast_model

    quick = "--quick" in sys.argv
    t = time.perf_counter()
    model, data = xenonnt_sr0_model()
    t_model = time.perf_counter() - t
    t = time.perf_counter()
    fast = fast_model(model)
    t_fast_build = time.perf_counter() - t
    res_f, s_f = steps(fast, data, quick)
    res_g, s_g = steps(model, data, quick)
    diff = {}
    for k in res_g:
        a, b = np.asarray(res_g[k], dtype=float), np.asarray(res_f[k], dtype=float)
        diff[k] = float(np.nanmax(np.abs(a - b)))
    print(json.dumps({"model_s": t_model, "fast_build_s": t_fast_build, "general_s": s_g, "fast_s": s_f,
                      "max_abs_diff": diff, "general": {k: np.asarray(v, dtype=float).tolist() for k, v in res_g.items()},
                      "quick": quick}, indent=1))


if __name__ == "__main__":
    main()
