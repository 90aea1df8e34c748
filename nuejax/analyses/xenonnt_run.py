"""``nuejax xenonnt``: the XENONnT SR0 electronic-recoil analysis on the open data (docs/xenonnt.md).

The model (:func:`~nuejax.analyses.xenonnt.xenonnt_sr0_model`): the released background B0 with
its Standard-Model solar-neutrino part replaced by the package's own prediction, so that μ_ν,
NSI and mediators act on it; free: the flux normalisations (B16 constraints), the resolution
a, b (10 % constraints), the background scale, and the new-physics parameter tested.

Results:

* μ_ν: the one-sided 90 % CL upper limit with q̃ (Cowan et al., EPJC 71 (2011) 1554, Eq. 16),
  asymptotically (profile Δχ² = 1.642) and from toys: the one-sided Neyman construction (p_{s+b}
  from toys at each tested μ_ν, "CLs+b"), CLs (Read, J. Phys. G 28 (2002) 2693) and
  Feldman–Cousins (two-sided ordering); the expected (median) limit and its ±1σ, ±2σ band from
  background-only toys. The headline ``mu_nu_upper_90`` is the upper end of the unified
  (Feldman–Cousins) 90 % interval from toys (without toys its asymptotic form, the two-sided
  profile Δχ² = 2.706): XENON's electronic-recoil analyses report unified intervals (XENON1T,
  arXiv:2006.09721); that arXiv:2207.11330 does so, and whether it power-constrains the limit
  (Baxter et al., EPJC 81 (2021) 907, arXiv:2105.00599), is not read in the paper
  (``mu_nu_convention`` says so). The one-sided Neyman limit with q̃ (CLs+b), its power-constrained
  form (not below the −1σ expected limit) and CLs are reported beside it.
* ε^L_ee, ε^R_ee: 90 % CL intervals (profile Δχ² = 2.706, every region), each with the other free.
* Mediators: the one-sided 90 % CL (q̃, asymptotic) upper limit on the coupling g at masses from
  0.01 to 100 MeV, for a flavour-universal vector (g_ν = g_e = g), a B−L vector (charges −1 of ν
  and e: the same product g_ν g_e = g² at tree level, so the same curve; they differ only in
  matter effects and kinetic mixing, which are not modelled) and a scalar (g_ν = g_e = g).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import jax
import numpy as np

from .._internal.placement import host_device
from ..inference import cls_upper_limit, fit, profile_scan
from ..model.fast import fast_model
from .mediators import MEDIATOR_MASSES, mediator_curves, plot_mediator_curves
from ._clock import StageClock, with_stages_beside
from .reuse import CommandStages, stage_arguments
from .xenonnt import xenonnt_sr0_model

__all__ = ["MU_GRID", "run_xenonnt"]

#: μ_ν profile grid [1e-11 μ_B] and the tested values of the constructions
MU_GRID = np.linspace(0.0, 1.5, 16)
MU_TEST = np.linspace(0.1, 1.4, 14)
EPS_L_GRID = np.linspace(-2.0, 1.0, 13)
EPS_R_GRID = np.linspace(-2.0, 2.0, 17)
SCAN_ITER = 40
#: Cores to spare (beyond the main thread's) for the toy, NSI and mediator stages to run beside the
#: μ_ν fit and profile (one each), as in ``nuejax borexino``; on 2 cores every stage runs in turn.
BESIDE_MIN_SPARE = 3


def _regions(scan, cl=0.9):
    iv = scan.interval(cl)
    return {"interval": [iv.lower, iv.upper], "regions": [list(r) for r in iv.regions], "convention": iv.convention}


def run_xenonnt(out, *, n_toys: int = 100, unbinned: bool = False, plots: bool = True, progress=None, seed: int = 0,
                masses=MEDIATOR_MASSES, fc: bool = True, reuse: bool = True) -> dict:
    """Run the analysis (module docstring), write ``summary.json`` and figures into ``out`` and
    return the summary. ``n_toys``: toys per tested μ_ν value of the constructions (0: asymptotic
    only); ``unbinned``: the extended unbinned likelihood of the 433 events instead of 1-keV bins;
    ``reuse``: take each stage's results from an earlier run with the same inputs where the cache
    holds them (:mod:`~nuejax.analyses.reuse`; False: compute every stage again)."""
    say = StageClock(progress)
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    say(f"[1/5] model: XENONnT SR0, B0 with the package's SM solar neutrinos ({'unbinned' if unbinned else 'binned'})")
    model, data = xenonnt_sr0_model(unbinned=unbinned)
    # μ_ν and ε enter the signals as a polynomial (the oscillation parameters fixed): the fast path
    # folds its basis once; every fit, scan and toy below then costs a small contraction instead of
    # the recoil spectra on the (T, E_ν) grid (benchmarks/accuracy/xenonnt_fast_vs_general.py)
    model = fast_model(model)
    key = jax.random.PRNGKey(seed)

    # The toy constructions, the NSI and the mediator stages need only the model and the data:
    # where the machine has cores to spare they run beside the μ_ν fit and profile (their programs
    # trace, lower and compile side by side) and say their lines in order afterwards. Only this
    # thread sets warning filters around them (``warnings.catch_warnings`` is not thread-safe: a
    # stage's own block, as around fit's MINUIT set-up, may then leave or lift a filter early, but
    # only inside this block, which is left only once every stage has ended, also where one raised,
    # and then restores the caller's filters).
    m_mu = model.release("mu_nu")
    masses = np.asarray(masses, dtype=float)
    # each stage's results are reused where an earlier run with the same inputs stored them
    # (nuejax.analyses.reuse): its key holds the model it fits (or what builds it), the data and
    # its own options and grids
    common = stage_arguments(data=data, unbinned=unbinned)
    mu_args = stage_arguments(model=m_mu, grid=MU_GRID, tested=MU_TEST, n_iter=SCAN_ITER, **common)

    staged = CommandStages("xenonnt", reuse)
    stages = {"toys": staged.wrap("toys", {**mu_args, "n_toys": n_toys, "fc": fc, "seed": seed},
                                  lambda say, in_turn: _mu_nu_toys(m_mu, data, say, n_toys, fc, key)),
              "eps": staged.wrap("eps", stage_arguments(model=model, grids=(EPS_L_GRID, EPS_R_GRID), n_iter=SCAN_ITER,
                                                        **common),
                                 lambda say, in_turn: _nsi(model, data, say)),
              # the mediator stage builds its models: where they are built (placement) joins its key
              "med": staged.wrap("med", {**common, "masses": masses, "build_on_host": host_device() is not None},
                                 lambda say, in_turn: _mediators(unbinned, data, masses, say))}
    mu_stage = staged.wrap("mu", mu_args, lambda say, in_turn: _mu_nu(m_mu, data, say))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mu, out = with_stages_beside(say, lambda: mu_stage(say), stages, min_spare=BESIDE_MIN_SPARE)
    fit_mu, mu_scan, asym, q_limit = mu
    toys, fc_res = out["toys"]
    fit_eps, sL, sR, iL, iR = out["eps"]
    mediators = out["med"]

    # the headline: the upper end of the unified (Feldman-Cousins) 90% interval from toys, or its
    # asymptotic form (two-sided profile Δχ² = 2.706 on the bounded profile) without toys
    band_src = toys if toys is not None else asym
    if fc_res is not None:
        headline, method = fc_res.interval[1], "Feldman-Cousins from toys"
    else:
        headline, method = mu_scan.interval(0.9).upper, "asymptotic: two-sided profile delta chi2 = 2.706"
    convention = (f"upper end of the 90% CL unified (Feldman-Cousins) interval, nuisances profiled ({method}); "
                  "XENON's electronic-recoil analyses report unified intervals (XENON1T, arXiv:2006.09721); that "
                  "arXiv:2207.11330 does so, and whether it power-constrains the limit, was not read in the paper")
    raw = band_src.limit_sb
    minus1 = band_src.expected_sb.get("-1")
    pcl = None if raw is None else (max(raw, minus1) if minus1 is not None else raw)

    summary = {
        "mu_nu_upper_90": None if headline is None else headline * 1e-11,
        "mu_nu_convention": convention,
        "mu_nu_expected_90": None if band_src.expected_sb.get("0") is None else band_src.expected_sb["0"] * 1e-11,
        "mu_nu_expected_band_90": {k: (None if v is None else v * 1e-11) for k, v in band_src.expected_sb.items()},
        "mu_nu_expected_convention": ("median (and +-1, 2 sigma) of the one-sided Neyman (CLs+b, q~) limits of "
                                      "background-only " + ("toys" if toys is not None else "Asimov outcomes")
                                      + "; a value at the grid's first point means at or below it"),
        "mu_nu_upper_90_neyman_qtilde": None if raw is None else raw * 1e-11,
        "mu_nu_upper_90_neyman_qtilde_power_constrained": None if pcl is None else pcl * 1e-11,
        "mu_nu_upper_90_qtilde_asymptotic": None if q_limit is None else q_limit * 1e-11,
        "mu_nu_upper_90_cls": None if band_src.limit is None else band_src.limit * 1e-11,
        "mu_nu_expected_90_cls": {k: (None if v is None else v * 1e-11) for k, v in band_src.expected.items()},
        "mu_nu_upper_90_cls_asymptotic": None if asym.limit is None else asym.limit * 1e-11,
        "mu_nu_interval_90_feldman_cousins": (None if fc_res is None else
                                              [None if v is None else v * 1e-11 for v in fc_res.interval]),
        "mu_nu_unit": "mu_B",
        "mu_nu_best": float(fit_mu.values["mu_nu"]) * 1e-11,
        "n_toys": int(n_toys),
        "eps_ee_L_interval_90": iL["interval"], "eps_ee_L_regions_90": iL["regions"],
        "eps_ee_R_interval_90": iR["interval"], "eps_ee_R_regions_90": iR["regions"],
        "eps_interval_convention": iL["convention"],
        "eps_best": {"eps_ee_L": float(fit_eps.values["eps_ee_L"]), "eps_ee_R": float(fit_eps.values["eps_ee_R"])},
        "mediator_limits": mediators,
        "mediator_limit_convention": "90% CL one-sided upper limit on g, q~ asymptotic (profile delta chi2 = 1.642)",
        "fit_valid": bool(fit_mu.valid),
        "fit": {n: float(fit_mu.values[n]) for n in m_mu.parameters.free_names},
        "likelihood": "unbinned" if unbinned else "binned (29 bins of 1 keV)",
        "n_events": int(np.asarray(data)[:, 1].sum()) if unbinned else int(np.sum(data)),
        "device": str(jax.devices()[0]),
        "jax_version": jax.__version__,
        # the stages whose results an earlier run computed (nuejax.analyses.reuse)
        "reused_stages": sorted(staged.reused),
    }
    for name, obj in (("mu_nu_fit", fit_mu), ("mu_nu_scan", mu_scan), ("mu_nu_cls_asymptotic", asym),
                      ("eps_ee_L_scan", sL), ("eps_ee_R_scan", sR)):
        obj.save(outdir / f"{name}.json")
    if toys is not None:
        toys.save(outdir / "mu_nu_cls_toys.json")
    if plots:
        _plots(outdir, m_mu, data, fit_mu, mu_scan, sL, sR, mediators, unbinned)
    summary["seconds"] = say.elapsed()
    summary["phase_start_seconds"] = say.starts
    summary["progress_seconds"] = say.timed_lines()
    (outdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _mu_nu(m_mu, data, say):
    """Stage 2: μ_ν's fit, profile and asymptotic CLs (``m_mu``: the model with μ_ν released)."""
    say("[2/5] mu_nu: fit, profile, asymptotic q~ and CLs")
    fit_mu = fit(m_mu, data)
    mu_scan = profile_scan(m_mu, data, "mu_nu", MU_GRID, n_iter=SCAN_ITER)
    asym = cls_upper_limit(m_mu, data, "mu_nu", MU_TEST)
    q_limit = mu_scan.upper_limit(0.9)
    say(f"      best mu_nu = {float(fit_mu.values['mu_nu']):.3g}; q~ asymptotic limit {q_limit} x 1e-11 mu_B; "
        f"CLs {asym.limit}, CLs+b {asym.limit_sb}, expected CLs+b {asym.expected_sb.get('0')}")
    return fit_mu, mu_scan, asym, q_limit


def _mu_nu_toys(m_mu, data, say, n_toys, fc, key):
    """Stage 3: μ_ν's toy constructions (CLs+b and CLs, and Feldman-Cousins from the same toys
    where ``fc``; none where ``n_toys`` is 0). Needs nothing from stage 2: the construction fits
    the data itself."""
    if n_toys <= 0:
        say("[3/5] (no toys)")
        return None, None
    say(f"[3/5] mu_nu from toys: Neyman construction with q~ (CLs+b) and CLs, {n_toys} toys per value")
    # the Feldman-Cousins interval from the same toys: both statistics come from the same two fits
    # of a toy, so it adds only the background-only toys fitted at 0 (cls_upper_limit)
    toys = cls_upper_limit(m_mu, data, "mu_nu", MU_TEST, n_toys=n_toys, key=key, feldman_cousins=fc)
    fc_res = toys.feldman_cousins
    say(f"      CLs+b {toys.limit_sb}, CLs {toys.limit}, expected CLs+b {toys.expected_sb}"
        + ("" if fc_res is None else f"; Feldman-Cousins {fc_res.interval}"))
    return toys, fc_res


def _nsi(model, data, say):
    """Stage 4: ε^L_ee and ε^R_ee, each profiled with the other free, and their 90 % CL regions."""
    say("[4/5] NSI: eps_ee_L and eps_ee_R (the other free), 90% CL")
    m_eps = model.release("eps_ee_L", "eps_ee_R")
    fit_eps = fit(m_eps, data)
    sL = profile_scan(m_eps, data, "eps_ee_L", EPS_L_GRID, global_fit=fit_eps, n_iter=SCAN_ITER)
    sR = profile_scan(m_eps, data, "eps_ee_R", EPS_R_GRID, global_fit=fit_eps, n_iter=SCAN_ITER)
    iL, iR = _regions(sL), _regions(sR)
    say(f"      eps_ee_L regions {iL['regions']}, eps_ee_R regions {iR['regions']}")
    return fit_eps, sL, sR, iL, iR


def _mediators(unbinned, data, masses, say):
    """Stage 5: the mediators' coupling limits (:func:`~nuejax.analyses.mediators.mediator_curves`)."""
    say(f"[5/5] mediators: coupling limits at {len(masses)} masses, 0.01-100 MeV")
    m_med, _ = xenonnt_sr0_model(unbinned=unbinned, mediators=("zprime", "phi"), fast_mediators=True)
    return mediator_curves(m_med, data, masses, say=say)


def _plots(outdir, model, data, fit_mu, mu_scan, sL, sR, mediators, unbinned):
    from ..plotting import save_scan_figures, plot_spectrum, require_matplotlib

    plt = require_matplotlib()
    edges = np.asarray(model.obs_edges)
    counts = np.histogram(np.asarray(data)[:, 0], bins=edges, weights=np.asarray(data)[:, 1])[0] if unbinned else data
    comps = model.components(fit_mu.params)
    plot_spectrum(edges, comps, counts, title="XENONnT SR0: best fit", path=outdir / "spectrum.png",
                  xlabel="reconstructed energy [keV]", ylabel="events per bin")
    save_scan_figures(outdir, {"mu_nu": mu_scan, "eps_ee_L": sL, "eps_ee_R": sR})
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    plot_mediator_curves(ax, mediators)
    ax.set_title("XENONnT SR0 open data")
    ax.legend()
    fig.tight_layout()
    fig.savefig(outdir / "mediator_limits.png", dpi=120)
    plt.close(fig)
