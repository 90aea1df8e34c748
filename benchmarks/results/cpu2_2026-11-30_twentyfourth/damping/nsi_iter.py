import time, warnings, numpy as np
import nuejax; nuejax.enable_x64()
import nuejax.cache; nuejax.cache.enable_compilation_cache()
from nuejax.analyses.borexino import borexino_phase3_model, Phase3Choices
from nuejax.analyses import borexino_run as R
from nuejax.analyses.borexino import ssm_constrained, sm_rates
from nuejax.inference import newton_fit, profile_scan
from nuejax.inference.scan import profile_scan_2d
from nuejax.inference import fitting as F
warnings.simplefilter("ignore")
model, data, cal = borexino_phase3_model(Phase3Choices())
counts = np.asarray(data.counts)
m_ssm = ssm_constrained(model, sm_rates())
m_eps = m_ssm.release("eps_ee_L", "eps_ee_R")
calls = []
orig = F.solve_rows
def wrapped(problem, x0, fixed=None, **kw):
    t = time.perf_counter(); r = orig(problem, x0, fixed, **kw)
    calls.append((np.shape(x0), round(time.perf_counter() - t, 2), np.bincount(np.asarray(r.n_iter).ravel()).tolist(), len(problem.names)))
    return r
F.solve_rows = wrapped
import nuejax.inference.scan as S, nuejax.inference.starts as ST
for mod in (S, ST):
    if hasattr(mod, "solve_rows"): mod.solve_rows = wrapped
for rep in range(1):
    calls.clear()
    t0 = time.perf_counter()
    fit_eps = newton_fit(m_eps, counts, one_sided=False, starts=R.DEFAULT_STARTS); t1 = time.perf_counter()
    sL = profile_scan(m_eps, counts, "eps_ee_L", R.EPS_L_GRID, global_fit=fit_eps, n_iter=R.SCAN_ITER, starts=R.DEFAULT_STARTS); t2 = time.perf_counter()
    sR = profile_scan(m_eps, counts, "eps_ee_R", R.EPS_R_GRID, global_fit=fit_eps, n_iter=R.SCAN_ITER, starts=R.DEFAULT_STARTS); t3 = time.perf_counter()
    s2 = profile_scan_2d(m_eps, counts, ("eps_ee_L", "eps_ee_R"), *R.EPS_2D, global_fit=fit_eps, n_iter=R.SCAN_ITER, starts=R.DEFAULT_STARTS); t4 = time.perf_counter()
    print(rep, "fit %.1f L %.1f R %.1f 2d %.1f" % (t1 - t0, t2 - t1, t3 - t2, t4 - t3), flush=True)
    for c in calls: print("   ", c)
import sys
np.savez(sys.argv[1], L=np.asarray(sL.delta_chi2) if hasattr(sL, "delta_chi2") else np.asarray(sL.nll),
         R=np.asarray(sR.delta_chi2) if hasattr(sR, "delta_chi2") else np.asarray(sR.nll),
         D=np.asarray(s2.delta_chi2) if hasattr(s2, "delta_chi2") else np.asarray(s2.nll), f=float(fit_eps.fval),
         x=np.asarray([float(fit_eps.params[n]) for n in ("eps_ee_L", "eps_ee_R")]))
print("saved", sL.interval(0.9) if hasattr(sL, "interval") else None)
