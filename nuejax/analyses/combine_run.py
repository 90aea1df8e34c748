"""``nuejax combine``: Borexino Phase-III and XENONnT SR0 under one set of new-physics parameters
(docs/combination.md).

The two analyses' models (:func:`~nuejax.analyses.borexino.borexino_phase3_model` with every solar
rate constrained to the SSM, as ``nuejax borexino``'s μ_ν and NSI fits;
:func:`~nuejax.analyses.xenonnt.xenonnt_sr0_model`, 1-keV bins) are combined with
:func:`~nuejax.model.combine.combine`, μ_ν, ε^L_ee and ε^R_ee shared, every nuisance per experiment
(the solar fluxes are not shared: Borexino fits rates in cpd/100 t, XENONnT flux normalisations).
Each result is given for each experiment alone and for the combination, with the same grids and
conventions: the one-sided 90 % CL upper limit on μ_ν (q̃, profile Δχ² = 1.642; Cowan et al.,
EPJC 71 (2011) 1554) and the upper end of the two-sided 90 % interval (Δχ² = 2.706), the expected
(median) one-sided limit of the combination (asymptotic, from its background-only Asimov data set),
and the 90 % CL region of (ε^L_ee, ε^R_ee) (2 degrees of freedom, Δχ² = 4.605).
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import jax
import numpy as np

from ..inference import cls_upper_limit, newton_fit, profile_scan, profile_scan_2d
from ..model.combine import combine
from .borexino import borexino_phase3_model, ssm_constrained
from .xenonnt import xenonnt_sr0_model

__all__ = ["EPS_GRID", "MU_GRID", "run_combine"]

#: μ_ν grid [1e-11 μ_B]: fine where XENONnT's limit lies, to 8 for Borexino's
MU_GRID = np.concatenate([np.linspace(0.0, 1.5, 16), [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]])
MU_TEST = np.linspace(0.1, 1.4, 14)
#: (ε^L_ee, ε^R_ee) grid of the 2-D regions
EPS_GRID = (np.linspace(-1.8, 0.6, 13), np.linspace(-1.2, 0.8, 11))
SCAN_ITER = 40


def _release(model, *names):
    return model.with_parameters(model.parameters.release(*names))


def run_combine(out, *, eps: bool = True, plots: bool = True, progress=None) -> dict:
    """Run the combination (module docstring); write ``summary.json`` and figures into ``out``."""
    say = progress or (lambda msg: None)
    t0 = time.perf_counter()
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    say("[1/4] models: Borexino Phase III (SSM-constrained rates), XENONnT SR0 (B0 with the package's SM)")
    bx, bdata, _ = borexino_phase3_model(progress=lambda m: say("      " + m))
    bx = ssm_constrained(bx)
    xe, xdata = xenonnt_sr0_model()
    shared = ("mu_nu", "eps_ee_L", "eps_ee_R")
    both = combine(bx, xe, labels=("borexino", "xenonnt"), shared=shared)
    data = {"borexino": np.asarray(bdata.counts), "xenonnt": np.asarray(xdata)}
    data["combined"] = both.join(data["borexino"], data["xenonnt"])
    models = {"borexino": bx, "xenonnt": xe, "combined": both}

    say("[2/4] mu_nu: profiles of each experiment and of the combination")
    per, scans = {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name, m in models.items():
            mm = _release(m, "mu_nu")
            r = newton_fit(mm, data[name], one_sided=False, starts=1)
            s = profile_scan(mm, data[name], "mu_nu", MU_GRID, global_fit=r, n_iter=SCAN_ITER, starts=1)
            ul, two = s.upper_limit(0.9), s.interval(0.9).upper
            scans[name] = s
            per[name] = {"mu_nu_upper_90": None if ul is None else ul * 1e-11,
                         "mu_nu_upper_90_two_sided": None if two is None else two * 1e-11,
                         "mu_nu_best": float(r.params["mu_nu"]) * 1e-11, "fit_valid": bool(r.valid)}
            say(f"      {name}: mu_nu < {per[name]['mu_nu_upper_90']} mu_B (one-sided q~), "
                f"{per[name]['mu_nu_upper_90_two_sided']} (two-sided)")
        # asymptotic: no toys, so no auxiliary measurement is redrawn (Borexino's 210Bi bound has none)
        asym = cls_upper_limit(_release(both, "mu_nu"), data["combined"], "mu_nu", MU_TEST, resample_aux=False)
    expected = asym.expected_sb.get("0")

    regions = {}
    if eps:
        say("[3/4] (eps_ee_L, eps_ee_R): 90% CL regions (2 dof)")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for name, m in models.items():
                mm = _release(m, "eps_ee_L", "eps_ee_R")
                r = newton_fit(mm, data[name], one_sided=False)
                s2 = profile_scan_2d(mm, data[name], ("eps_ee_L", "eps_ee_R"), *EPS_GRID, global_fit=r,
                                     n_iter=SCAN_ITER, chunk=27)
                regions[name] = s2
                inside = np.asarray(s2.delta_chi2) < 4.605
                per[name]["eps_region_90_points"] = int(inside.sum())
                per[name]["eps_best"] = {"eps_ee_L": float(r.params["eps_ee_L"]),
                                         "eps_ee_R": float(r.params["eps_ee_R"])}
                say(f"      {name}: {int(inside.sum())} of {inside.size} grid points inside")
    else:
        say("[3/4] (eps regions skipped)")

    say("[4/4] summary and figures")
    summary = {
        "mu_nu_upper_90": per["combined"]["mu_nu_upper_90"],
        "mu_nu_convention": ("one-sided 90% CL upper limit with q~ (Cowan et al. 2011, Eq. 16), profile delta chi2 = "
                             "1.642, nuisances of both experiments profiled; the same for each experiment alone"),
        "mu_nu_expected_90": None if expected is None else expected * 1e-11,
        "mu_nu_expected_convention": "median one-sided Neyman (CLs+b, q~) limit of the combination, asymptotic",
        "mediator_limits": None,
        "mediator_limits_note": "not combined yet: the Borexino Phase-III model has no mediator parameters",
        "per_experiment": {k: v for k, v in per.items() if k != "combined"},
        "combined": per["combined"],
        "shared": list(shared),
        "eps_grid": [g.tolist() for g in EPS_GRID],
        "device": str(jax.devices()[0]),
        "jax_version": jax.__version__,
    }
    for name, s in scans.items():
        s.save(outdir / f"mu_nu_scan_{name}.json")
    for name, s2 in regions.items():
        s2.save(outdir / f"eps_scan_{name}.json")
    if plots:
        _plots(outdir, scans, regions)
    summary["seconds"] = time.perf_counter() - t0
    (outdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _plots(outdir, scans, regions):
    from ..plotting import require_matplotlib

    plt = require_matplotlib()
    style = {"borexino": ("C0", "--"), "xenonnt": ("C1", ":"), "combined": ("k", "-")}
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for name, s in scans.items():
        c, ls = style[name]
        ax.plot(np.asarray(s.values), np.asarray(s.delta_chi2), ls, color=c, marker="o", ms=2, label=name)
    ax.axhline(1.642, color="0.5", lw=0.8)
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_ylim(0, 10)
    ax.set_xlabel(r"$\mu_\nu$ [$10^{-11}\,\mu_B$]")
    ax.set_ylabel(r"$-2\Delta\ln L$ (profile)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(outdir / "mu_nu_profiles.png", dpi=120)
    plt.close(fig)
    if regions:
        fig, ax = plt.subplots(figsize=(5.8, 4.8))
        for name, s2 in regions.items():
            c, ls = style[name]
            x, y = np.asarray(s2.values_x), np.asarray(s2.values_y)
            ax.contour(x, y, np.asarray(s2.delta_chi2).T, levels=[4.605], colors=[c], linestyles=[ls])
            ax.plot([], [], ls, color=c, label=name)
        ax.set_xlabel(r"$\varepsilon^L_{ee}$")
        ax.set_ylabel(r"$\varepsilon^R_{ee}$")
        ax.set_title("90% CL regions (2 dof)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(outdir / "eps_regions.png", dpi=120)
        plt.close(fig)
