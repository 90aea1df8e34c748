"""``nuejax borexino``: the Phase-III open-data analysis end to end (docs/borexino.md).

One fit of the TFC-subtracted spectrum, then from the same model and data: the CNO profile
against the published one, goodness of fit, the 90 % CL upper limit on μ_ν and the 90 % CL
intervals and 2-D region of (ε^L_ee, ε^R_ee). Every scan profiles all other free parameters
(rates, energy scale, offset, resolution, ²¹⁰Po peak) with the batched bound-constrained solver.
The CNO fit leaves ⁷Be and CNO free (as Borexino's); the μ_ν and NSI fits constrain every solar
rate to the SSM (B16-GS98), without which a change of the cross section's size is absorbed by
the free rates (as in Borexino's NSI analysis, arXiv:1905.03512).
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np

from ..inference import (DEFAULT_STARTS, goodness_of_fit, newton_fit, one_sided_threshold, profile_scan, profile_scan_2d,
                         refine_scan)
from ..io.borexino import packaged_borexino_cno_profile
from ._clock import StageClock, with_stages_beside
from .reuse import CommandStages, stage_arguments
from .borexino import PUBLISHED_CNO, Phase3Choices, borexino_phase3_model, sm_rates, ssm_constrained

__all__ = ["CNO_POINTS", "run_borexino"]

#: the CNO rates [cpd/100 t] at which the issue compares -2 Delta ln L with the published profile
CNO_POINTS = (4.0, 5.0, 8.6, 10.0)
CNO_GRID = np.unique(np.concatenate([np.arange(0.0, 16.01, 0.5), CNO_POINTS]))
MU_GRID = np.linspace(0.0, 12.0, 13)
#: profile points added inside the grid step where the μ_ν profile crosses the one-sided 90 % CL
#: threshold (refine_scan): the limit is read off steps of 0.1, not of the grid's 1.0
MU_REFINE = 9
EPS_L_GRID = np.linspace(-1.8, 0.6, 25)
EPS_R_GRID = np.linspace(-1.2, 0.8, 21)
#: the 2-D grid resolves the two narrow epsilon^L branches (around 0 and around -2 g_L = -1.46)
EPS_2D = (np.concatenate([np.linspace(-1.75, -1.2, 6), np.linspace(-0.3, 0.35, 6)]), np.linspace(-1.2, 0.8, 7))
#: Cores to spare (beyond the main thread's) for the magnetic-moment and NSI stages to run beside
#: the fit, CNO profile and goodness of fit: one each, and one for the main work's compiling.
#: On 2 cores they run in turn: the spare core is also XLA's second compute thread there.
BESIDE_MIN_SPARE = 3
#: Newton iterations per profile point of the physics scans: converged points need far fewer, and a
#: batched launch lasts as long as its slowest point (a point not converged is reported and left out)
SCAN_ITER = 40


def _interval(scan, cl=0.9):
    """The region that contains the best fit, every region below the threshold (two when the
    sign-flip degeneracy g + ε -> -g of the coupling also fits), the index of the first among
    them, and the profile's branches (its local minima)."""
    iv = scan.interval(cl)
    regions = [list(r) for r in iv.regions]
    return {"interval": [iv.lower, iv.upper], "regions": regions, "convention": iv.convention,
            "best_region": regions.index([iv.lower, iv.upper]) if [iv.lower, iv.upper] in regions else None,
            "branches": scan.branches()}


def run_borexino(out, *, choices: Phase3Choices = Phase3Choices(), n_toys: int = 50, plots: bool = True,
                 progress=None, seed: int = 0, starts=DEFAULT_STARTS, reuse: bool = True) -> dict:
    """Run the analysis, write ``summary.json`` (and figures) into ``out`` and return the summary.
    ``starts``: the multi-start design of every fit and scan (:mod:`nuejax.inference.starts`; 1:
    the single start, a third less time, blind to the second ε^L_ee branch); ``reuse``: take each
    stage's results from an earlier run with the same inputs where the cache holds them
    (:mod:`~nuejax.analyses.reuse`; False: compute every stage again)."""
    say = StageClock(progress)
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    say("[1/6] calibration and model")
    model, data, cal = borexino_phase3_model(choices, progress=lambda m: say("      " + m))
    say("      " + cal.summary().replace("\n", "\n      "))
    counts = np.asarray(data.counts)

    # The magnetic-moment and NSI stages need only the model and the data: where the machine has
    # cores to spare they run beside the fit, CNO profile and goodness of fit (their programs
    # trace, lower and compile side by side), and say their lines in order afterwards.
    sm_rates_used = sm_rates()
    m_ssm = ssm_constrained(model, sm_rates_used)
    # each stage's results are reused where an earlier run with the same inputs stored them
    # (nuejax.analyses.reuse): its key holds the model it fits, the data and its own options and grids
    common = stage_arguments(counts=counts, starts=starts)
    staged = CommandStages("borexino", reuse)
    stages = {"mu": staged.wrap("mu", stage_arguments(model=m_ssm, grid=MU_GRID, refine=MU_REFINE, n_iter=SCAN_ITER,
                                                      **common),
                                lambda say, in_turn: _magnetic_moment(m_ssm, counts, say, starts)),
              "eps": staged.wrap("eps", stage_arguments(model=m_ssm, grids=(EPS_L_GRID, EPS_R_GRID, *EPS_2D),
                                                        n_iter=SCAN_ITER, **common),
                                 lambda say, in_turn: _nsi(m_ssm, counts, say, starts))}
    main = staged.wrap("fit", stage_arguments(model=model, grid=CNO_GRID, n_toys=n_toys, seed=seed, **common),
                       lambda say, in_turn: _fit_profile_gof(model, counts, say, starts, n_toys, seed))
    (result, cno, gof), out = with_stages_beside(say, lambda: main(say), stages, min_spare=BESIDE_MIN_SPARE)
    cno_profile, published, published_at, cno_iv = _cno_comparison(cno)
    fit_mu, mu_scan, mu_ul, mu_held = out["mu"]
    fit_eps, sL, sR, s2, iL, iR = out["eps"]

    summary = {
        "cno_best": float(result.params["rate_CNO"]),
        "cno_error": result.errors.get("rate_CNO"),
        "cno_interval_68": [cno_iv.lower, cno_iv.upper],
        "cno_profile": cno_profile,
        "cno_profile_published": published_at,
        "cno_published": {"value": PUBLISHED_CNO[0], "plus": PUBLISHED_CNO[1], "minus": PUBLISHED_CNO[2]},
        "deviance": gof.deviance,
        "ndf": gof.ndof,
        "p_chi2": gof.p_chi2,
        "p_toys": gof.p_toys,
        "n_toys": gof.n_toys,
        "n_toys_converged": gof.n_toys_converged,
        "mu_nu_upper_90": None if mu_ul is None else mu_ul * 1e-11,
        "mu_nu_upper_90_unit": "mu_B",
        "mu_nu_upper_90_convention": mu_scan.upper_limit_convention,
        # the nuisances held at a bound in the profile fits around the limit ({name: "lower"|"upper"})
        "mu_nu_upper_90_at_bound": mu_held,
        "eps_ee_L_interval_90": iL["interval"],
        "eps_ee_R_interval_90": iR["interval"],
        "eps_ee_L_regions_90": iL["regions"],
        "eps_ee_R_regions_90": iR["regions"],
        "eps_ee_L_best_region_90": iL["best_region"],
        "eps_ee_R_best_region_90": iR["best_region"],
        "eps_ee_L_branches": iL["branches"],
        "eps_ee_R_branches": iR["branches"],
        "eps_best": {"eps_ee_L": float(fit_eps.params["eps_ee_L"]), "eps_ee_R": float(fit_eps.params["eps_ee_R"])},
        "mu_nu_best": float(fit_mu.params["mu_nu"]),
        "ssm_rates": sm_rates_used,
        "eps_interval_convention": iL["convention"],
        "fit_valid": result.valid,
        "fit": {n: float(result.params[n]) for n in result.names},
        "errors": {n: result.errors.get(n) for n in result.names},
        "at_bound": result.at_bound,
        "calibration": {"response": dict(cal.response._asdict()), "norms": cal.norms, "chi2": cal.chi2,
                        "n_bins": cal.n_bins, "converged": cal.converged},
        "choices": {k: getattr(choices, k) for k in choices.__dataclass_fields__},
        "scans_converged": {"cno": int(cno.converged.sum()), "mu_nu": int(mu_scan.converged.sum()),
                            "eps_ee_L": int(sL.converged.sum()), "eps_ee_R": int(sR.converged.sum()),
                            "eps_2d": int(np.asarray(s2.converged).sum())},
        "n_bins": data.n_bins,
        "device": str(jax.devices()[0]),
        "jax_version": jax.__version__,
        # the stages whose results an earlier run computed (nuejax.analyses.reuse)
        "reused_stages": sorted(staged.reused),
    }
    if plots:
        _plots(outdir, model, data, result, cno, published, mu_scan, sL, sR, s2)
    for name, obj in (("fit", result), ("cno_scan", cno), ("mu_nu_scan", mu_scan), ("eps_ee_L_scan", sL),
                      ("eps_ee_R_scan", sR), ("eps_2d_scan", s2)):
        obj.save(outdir / f"{name}.json")
    summary["seconds"] = say.elapsed()
    summary["phase_start_seconds"] = say.starts
    summary["progress_seconds"] = say.timed_lines()
    (outdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _fit_profile_gof(model, counts, say, starts, n_toys, seed):
    """Stages 2-4: the fit, the CNO profile (with the published one at CNO_POINTS) and the goodness of fit."""
    say("[2/6] fit (bounded Newton; converged = KKT conditions)")
    result = newton_fit(model, counts, one_sided=False, starts=starts)
    say("      " + str(result).replace("\n", "\n      "))

    say("[3/6] CNO profile (every other free parameter profiled)")
    cno = profile_scan(model, counts, "rate_CNO", CNO_GRID, global_fit=result, starts=starts)
    cno_profile, _, published_at, _ = _cno_comparison(cno)
    say("      -2 Delta ln L at CNO = " + ", ".join(f"{k}: {cno_profile[k]:.2f} (published {published_at[k]:.2f})"
                                               for k in cno_profile))

    say(f"[4/6] goodness of fit ({n_toys} toys)")
    gof = goodness_of_fit(model, counts, result, n_toys=n_toys, key=jax.random.PRNGKey(seed))
    say(f"      deviance/ndf = {gof.deviance:.1f}/{gof.ndof}, p(chi2) = {gof.p_chi2:.3f}, "
        f"p(toys) = {gof.p_toys if gof.p_toys is not None else float('nan'):.3f}")
    return result, cno, gof


def _cno_comparison(cno):
    """The CNO profile at :data:`CNO_POINTS`, Borexino's published one (and its values there) and
    the 68 % CL interval: ``(profile, published, published_at, interval)``."""
    published = packaged_borexino_cno_profile()
    d = dict(zip(np.round(cno.values, 6), cno.delta_chi2))
    cno_profile = {f"{v:g}": float(d[round(v, 6)]) for v in CNO_POINTS}
    published_at = {f"{v:g}": float(published.at(v)) for v in CNO_POINTS}
    return cno_profile, published, published_at, cno.interval(0.6827)


def _magnetic_moment(m_ssm, counts, say, starts):
    """Stage 5: μ_ν with the solar rates constrained to the SSM, its profile and one-sided limit."""
    say("[5/6] magnetic moment (solar rates constrained to the SSM): one-sided 90% CL upper limit")
    m_mu = m_ssm.release("mu_nu")
    fit_mu = newton_fit(m_mu, counts, one_sided=False, starts=starts)
    mu_scan = profile_scan(m_mu, counts, "mu_nu", MU_GRID, global_fit=fit_mu, n_iter=SCAN_ITER, starts=starts)
    mu_scan = refine_scan(m_mu, counts, mu_scan, (one_sided_threshold(0.9),), points=MU_REFINE, global_fit=fit_mu,
                          n_iter=SCAN_ITER, starts=starts)
    mu_ul = mu_scan.upper_limit(0.9)
    mu_held = mu_scan.at_bound_near(mu_ul, m_mu.parameters)  # a limit set where a rate sits at zero depends on it
    say(f"      mu_nu best {float(fit_mu.params['mu_nu']):.3g}, 90% CL upper limit "
        f"{'none in range' if mu_ul is None else f'{mu_ul:.3g}'} x 1e-11 mu_B ({mu_scan.upper_limit_convention})"
        + "".join(f"; at the limit {n} sits on its {side} bound" for n, side in mu_held.items()))
    return fit_mu, mu_scan, mu_ul, mu_held


def _nsi(m_ssm, counts, say, starts):
    """Stage 6: ε^L_ee and ε^R_ee, each profiled with the other free, and their 2-D region."""
    say("[6/6] NSI: eps_ee_L and eps_ee_R, each with the other free, and the 2-D region")
    m_eps = m_ssm.release("eps_ee_L", "eps_ee_R")
    fit_eps = newton_fit(m_eps, counts, one_sided=False, starts=starts)
    sL = profile_scan(m_eps, counts, "eps_ee_L", EPS_L_GRID, global_fit=fit_eps, n_iter=SCAN_ITER,
                      starts=starts)
    sR = profile_scan(m_eps, counts, "eps_ee_R", EPS_R_GRID, global_fit=fit_eps, n_iter=SCAN_ITER,
                      starts=starts)
    s2 = profile_scan_2d(m_eps, counts, ("eps_ee_L", "eps_ee_R"), *EPS_2D, global_fit=fit_eps, n_iter=SCAN_ITER,
                         starts=starts)
    iL, iR = _interval(sL), _interval(sR)
    say(f"      eps_ee_L 90% CL regions {iL['regions']}, eps_ee_R 90% CL regions {iR['regions']}")
    return fit_eps, sL, sR, s2, iL, iR


def _plots(outdir, model, data, result, cno, published, mu_scan, sL, sR, s2):
    from ..plotting import save_scan_figures, plot_scan_2d, plot_spectrum, require_matplotlib

    plt = require_matplotlib()
    comps = model.components(result.params)
    plot_spectrum(data.edges, comps, data.counts, title="Borexino Phase III, TFC-subtracted: best fit",
                  path=outdir / "spectrum.png", xlabel="energy [keV]", ylabel="events per bin")
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    ax.plot(published.x, published.delta_chi2, color="0.4", label="Borexino (published, with systematics)")
    ax.plot(cno.values, cno.delta_chi2, "o-", ms=3, label="nuejax, open data (spectrum only)")
    ax.set_xlim(0, 16)
    ax.set_ylim(0, 12)
    ax.set_xlabel("CNO rate [cpd/100 t]")
    ax.set_ylabel(r"$-2\Delta\ln L$")
    ax.legend()
    fig.tight_layout()
    fig.savefig(outdir / "cno_profile.png", dpi=120)
    plt.close(fig)
    save_scan_figures(outdir, {"mu_nu": mu_scan, "eps_ee_L": sL, "eps_ee_R": sR})
    fig, ax = plt.subplots(figsize=(5.6, 4.8))
    plot_scan_2d(s2, ax)
    fig.tight_layout()
    fig.savefig(outdir / "eps_ee_L_R.png", dpi=120)
    plt.close(fig)
