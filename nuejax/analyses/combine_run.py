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
the 90 % CL region of (ε^L_ee, ε^R_ee) (2 degrees of freedom, Δχ² = 4.605), and the mediator
exclusion curves of :mod:`~nuejax.analyses.mediators` (universal vector, B−L, scalar; the models
rebuilt with both mediators on their fast path, the mediators' couplings and masses and μ_ν shared).
"""

from __future__ import annotations

import json
import warnings
from concurrent.futures import wait
from pathlib import Path

import jax
import numpy as np

from ..inference import cls_upper_limit, newton_fit, profile_scan, profile_scan_2d
from ..inference.fitting import prepare_solver
from ..inference.problem import FitProblem
from ..model.combine import combine
from ..model.fast import fast_model
from ._clock import StageClock, each_beside, with_stages_beside
from .._internal.ahead import beside, warm_ups
from .._internal.placement import host_device
from .._internal.exported import settle_ahead
from .borexino import Phase3Choices, borexino_phase3_model, phase3_calibration, ssm_constrained
from .mediators import mediator_curves, plot_mediator_curves, prepare_mediator_curves
from .reuse import CommandStages, is_stored, stage_arguments
from .xenonnt import xenonnt_sr0_model

__all__ = ["BESIDE_MIN_SPARE", "BESIDE_ON_CPU", "EPS_GRID", "MASSES", "MEDIATOR_GRID", "MU_GRID", "SHARED", "run_combine"]

#: μ_ν grid [1e-11 μ_B]: fine where XENONnT's limit lies, to 8 for Borexino's
MU_GRID = np.concatenate([np.linspace(0.0, 1.5, 16), [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]])
MU_TEST = np.linspace(0.1, 1.4, 14)
#: (ε^L_ee, ε^R_ee) grid of the 2-D regions
EPS_NAMES = ("eps_ee_L", "eps_ee_R")
EPS_GRID = (np.linspace(-1.8, 0.6, 13), np.linspace(-1.2, 0.8, 11))
#: mediator masses [MeV] and the tested couplings per mass (coarser than ``nuejax xenonnt``'s: a
#: Borexino or combined profile point costs ten times a XENONnT one): 13 ratios over six decades
#: (Borexino's 0.1-1 MeV recoils put its light-mediator limits higher on the ratio scale of
#: nuejax.analyses.mediators than XENONnT's keV ones), then 9 points up to the crossing
MASSES = np.logspace(-2, 2, 5)
MEDIATOR_GRID = {"ratios": np.logspace(-2, 4, 13), "refine_points": 9}
SCAN_ITER = 40
#: the parameters the two experiments share
SHARED = ("mu_nu", "eps_ee_L", "eps_ee_R")
#: Cores to spare (beyond the main thread's) for the ε and mediator stages to run beside the μ_ν
#: stage (one each, and one for the main work's compiling), as in ``nuejax xenonnt``; the same
#: for each stage's models to run beside each other (``_each_model``)
BESIDE_MIN_SPARE = 3
#: Whether the stages may run beside each other on a CPU too (run_combine: off, so that a long CPU
#: run can drop each stage's programs before the next)
BESIDE_ON_CPU = False


def run_combine(out, *, eps: bool = True, masses=MASSES, plots: bool = True, progress=None,
                reuse: bool = True) -> dict:
    """Run the combination (module docstring); write ``summary.json`` and figures into ``out``.
    ``masses``: mediator masses [MeV] of the exclusion curves (empty: none); ``reuse``: take each
    stage's results from an earlier run with the same inputs where the cache holds them
    (:mod:`~nuejax.analyses.reuse`; False: compute every stage again)."""
    say = StageClock(progress)
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    masses = np.asarray(masses, dtype=float)
    # the mediator models need only the calibration: on an accelerator with cores to spare their
    # builds start as soon as it is done, beside the other models' builds (a first run's mediator
    # stage otherwise began by building them once stage 1 had ended)
    early = {}
    keys = {}  # each stage's key (nuejax.analyses.reuse); the mediator stage's from the calibration
    staged = CommandStages("combine", reuse)

    def start_mediator_models(calibration):
        # the mediator stage builds its models from the calibration, with the packaged data
        # (which the cache's fingerprint covers), on the host or the default device (placement)
        keys["med"] = stage_arguments(calibration=calibration, masses=masses, grid=MEDIATOR_GRID, n_iter=SCAN_ITER,
                                      build_on_host=host_device() is not None)
        if reuse and is_stored("combine", "med", keys["med"]):
            return
        if masses.size and _beside_allowed():
            branch = say.branch()
            f = beside(_mediator_models, calibration, branch, False, min_spare=BESIDE_MIN_SPARE)
            if f is not None:
                early["med"] = (f, branch)

    def builds_ended():
        if "med" in early:
            wait([early["med"][0]])

    warming = []

    def in_turn_after_builds(stage):
        # a stage run in turn drops the compiled programs first (jax.clear_caches): not while the
        # early builds or the warm-ups compile (they start under the conditions the stages run
        # beside under, so this only guards against the two parting)
        def run(say, in_turn):
            if in_turn:
                builds_ended()
                wait(warming)
            return stage(say, in_turn)

        return run

    # the builds and warm-ups end before this returns or raises, as every stage run beside does
    try:
        models, data, calibration = _models(say, on_calibration=start_mediator_models)
        keys["mu"] = stage_arguments(models=models, data=data, grid=MU_GRID, tested=MU_TEST, n_iter=SCAN_ITER)
        keys["eps"] = stage_arguments(models=models, data=data, grid=EPS_GRID, n_iter=SCAN_ITER, eps=eps)
        if _beside_allowed():  # no work ahead for a stage whose results are reused
            ahead = {k: not (reuse and is_stored("combine", k, keys[k])) for k in ("eps", "med")}
            warming += _warm_ups(models, data, eps and ahead["eps"], masses if ahead["med"] else masses[:0],
                                 early.get("med"))

        # The ε and mediator stages need only the models and the data: on an accelerator with cores
        # to spare they run beside the μ_ν stage (their programs trace, lower and compile side by
        # side) and say their lines in order afterwards; inside each stage the three models' fits
        # run beside each other too (_each_model: on one H200 the first run 101.0 -> 87.2 s, warm
        # 22.5 -> 20.2 s, benchmarks/NOTES.md). In turn, each stage first drops the programs of the
        # one before (jax.clear_caches), which keeps a long CPU run's JIT code memory bounded (LLVM
        # ran out of mappable memory after ~30 minutes of compiles); beside, nothing may be dropped
        # while another thread compiles, so a CPU runs them in turn. Warning filters as in
        # nuejax.analyses.xenonnt_run: only this thread sets them, in one block left only once every
        # stage has ended.
        stages = {"eps": in_turn_after_builds(staged.wrap("eps", keys["eps"], lambda say, in_turn: _eps_regions(
                      models, data, eps, say, in_turn))),
                  "med": in_turn_after_builds(staged.wrap("med", keys["med"], lambda say, in_turn: _mediator_curves(
                      data, masses, calibration, say, in_turn, early.get("med"))))}
        mu_stage = staged.wrap("mu", keys["mu"], lambda say, in_turn: _mu_nu(models, data, say))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            (per, scans, expected), done = with_stages_beside(say, lambda: mu_stage(say), stages,
                                                              min_spare=BESIDE_MIN_SPARE, allowed=_beside_allowed())
    finally:
        builds_ended()
        wait(warming)
    regions, eps_per = done["eps"]
    curves = done["med"]
    for name in per:
        per[name].update(eps_per.get(name, {}))
        if name in curves:
            per[name]["mediator_limits"] = curves[name]

    say("[5/5] summary and figures")
    summary = {
        "mu_nu_upper_90": per["combined"]["mu_nu_upper_90"],
        "mu_nu_convention": ("one-sided 90% CL upper limit with q~ (Cowan et al. 2011, Eq. 16), profile delta chi2 = "
                             "1.642, nuisances of both experiments profiled; the same for each experiment alone"),
        "mu_nu_expected_90": None if expected is None else expected * 1e-11,
        "mu_nu_expected_convention": "median one-sided Neyman (CLs+b, q~) limit of the combination, asymptotic",
        "mediator_limits": curves.get("combined"),
        "mediator_limit_convention": ("90% CL one-sided upper limit on g (g_nu g_e = g^2), q~ asymptotic (profile "
                                      "delta chi2 = 1.642); each experiment's curves under per_experiment"),
        "per_experiment": {k: v for k, v in per.items() if k != "combined"},
        "combined": per["combined"],
        "shared": list(SHARED),
        "eps_grid": [g.tolist() for g in EPS_GRID],
        "device": str(jax.devices()[0]),
        "jax_version": jax.__version__,
        "reused_stages": sorted(staged.reused),
    }
    for name, s in scans.items():
        s.save(outdir / f"mu_nu_scan_{name}.json")
    for name, s2 in regions.items():
        s2.save(outdir / f"eps_scan_{name}.json")
    if plots:
        _plots(outdir, scans, regions, curves)
    summary["seconds"] = say.elapsed()
    summary["phase_start_seconds"] = say.starts
    summary["progress_seconds"] = say.timed_lines()
    (outdir / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def _models(say, on_calibration=None):
    """Stage 1: the two experiments' models, their combination and the three data sets, and the
    Borexino calibration (which the mediator models reuse; ``on_calibration(calibration)`` is
    called as soon as it is done, before the models are built)."""
    say("[1/5] models: Borexino Phase III (SSM-constrained rates), XENONnT SR0 (B0 with the package's SM)")
    line = lambda m: say("      " + m)  # noqa: E731
    calibration = phase3_calibration(progress=line)
    if on_calibration is not None:
        on_calibration(calibration)
    bx, bdata, _ = borexino_phase3_model(calibration=calibration, progress=line)
    bx = ssm_constrained(bx)
    xe, xdata = xenonnt_sr0_model()
    xe = fast_model(xe)  # as nuejax xenonnt: μ_ν and ε on the fast path (Borexino's model is on it already)
    both = combine(bx, xe, labels=("borexino", "xenonnt"), shared=SHARED)
    data = {"borexino": np.asarray(bdata.counts), "xenonnt": np.asarray(xdata)}
    data["combined"] = both.join(data["borexino"], data["xenonnt"])
    return {"borexino": bx, "xenonnt": xe, "combined": both}, data, calibration


def _mu_nu(models, data, say):
    """Stage 2: μ_ν's profile for each experiment and the combination (:func:`_each_model`), and
    the combination's expected limit (asymptotic CLs+b)."""
    say("[2/5] mu_nu: profiles of each experiment and of the combination")

    def one(name, m, say):
        mm = m.release("mu_nu")
        r = newton_fit(mm, data[name], one_sided=False, starts=1)
        s = profile_scan(mm, data[name], "mu_nu", MU_GRID, global_fit=r, n_iter=SCAN_ITER, starts=1)
        ul, two = s.upper_limit(0.9), s.interval(0.9).upper
        entry = {"mu_nu_upper_90": None if ul is None else ul * 1e-11,
                 "mu_nu_upper_90_two_sided": None if two is None else two * 1e-11,
                 "mu_nu_best": float(r.params["mu_nu"]) * 1e-11, "fit_valid": bool(r.valid)}
        say(f"      {name}: mu_nu < {entry['mu_nu_upper_90']} mu_B (one-sided q~), "
            f"{entry['mu_nu_upper_90_two_sided']} (two-sided)")
        expected = None
        if name == "combined":  # its program is the fit's: in the same thread (compiled once)
            # asymptotic: no toys, so no auxiliary measurement is redrawn (Borexino's 210Bi bound has
            # none); one start, as the fit and profile above of the same problem (μ_ν the one
            # parameter of interest): the stage 9.0 -> 7.0 s on 2 cores, the expected limit the same
            # to 1e-8 (benchmarks/NOTES.md)
            asym = cls_upper_limit(mm, data[name], "mu_nu", MU_TEST, resample_aux=False, starts=1)
            expected = asym.expected_sb.get("0")
        return entry, s, expected

    done = _each_model(say, one, models, beside_ok=True)
    per = {k: v[0] for k, v in done.items()}
    scans = {k: v[1] for k, v in done.items()}
    return per, scans, done["combined"][2]


def _eps_regions(models, data, eps, say, in_turn):
    """Stage 3: the 90 % CL region of (ε^L_ee, ε^R_ee) for each experiment and the combination
    (none where not ``eps``); the region scans and each part's entries of the summary."""
    if not eps:
        say("[3/5] (eps regions skipped)")
        return {}, {}
    if in_turn:
        _drop_programs()
    say("[3/5] (eps_ee_L, eps_ee_R): 90% CL regions (2 dof)")

    def one(name, m, say, parts=None):
        mm = m.release(*EPS_NAMES)
        r = newton_fit(mm, data[name], one_sided=False)
        seeded = {}
        if parts is not None:
            # the experiments' end points seed each point, and the sum of their −2 ln L bounds it
            # from below (the experiments share ε, fixed at the point, and μ_ν alone): a point
            # whose fit from them reaches the bound needs no other start (inference.scan)
            names = FitProblem.create(mm, data[name], fixed_names=EPS_NAMES).names
            seeds = m.joined_values(names, {k: (p.profiled, np.reshape(p.profiled_values, (-1, len(p.profiled))))
                                            for k, p in parts.items()})
            seeded = dict(seeds=seeds.reshape(parts["borexino"].nll.shape + seeds.shape[1:]),
                          lower_bound=sum(np.asarray(p.nll) for p in parts.values()))
        s2 = profile_scan_2d(mm, data[name], EPS_NAMES, *EPS_GRID, global_fit=r, n_iter=SCAN_ITER, **seeded)
        inside = np.asarray(s2.delta_chi2) < 4.605
        say(f"      {name}: {int(inside.sum())} of {inside.size} grid points inside"
            + (f" ({s2.certified} settled from the experiments' end points)" if parts is not None else ""))
        return s2, {"eps_region_90_points": int(inside.sum()),
                    "eps_best": {"eps_ee_L": float(r.params["eps_ee_L"]), "eps_ee_R": float(r.params["eps_ee_R"])}}

    # the experiments first (beside each other where allowed), then the combination from their end points
    done = _each_model(say, one, {k: m for k, m in models.items() if k != "combined"}, beside_ok=not in_turn)
    if "combined" in models:
        done["combined"] = one("combined", models["combined"], say, parts={k: v[0] for k, v in done.items()})
    return {k: v[0] for k, v in done.items()}, {k: v[1] for k, v in done.items()}


def _mediator_models(calibration, say, in_turn) -> dict:
    """The two experiments' models with both mediators on their fast path; XENONnT's builds beside
    Borexino's (where the models' fits may run beside each other)."""
    builds = {"borexino": lambda: ssm_constrained(borexino_phase3_model(Phase3Choices(mediators=True),
                                                                        calibration=calibration)[0]),
              "xenonnt": lambda: xenonnt_sr0_model(mediators=("zprime", "phi"), fast_mediators=True)[0]}
    return _each_model(say, lambda name, build, say: build(), builds, beside_ok=not in_turn)


def _warm_ups(models, data, eps, masses, early) -> list:
    """Compile (or load) ahead the solver programs of the ε and mediator stages, several at once
    (:func:`~nuejax._internal.ahead.warm_ups`, where the stages run beside each other): those
    stages start on the threads the μ_ν stage's models leave free, and a first run's programs
    otherwise compiled only then (9-15 s each on one H200). Their futures."""
    calls = []
    if eps:  # each problem made in its warm-up's thread, as the warm-up's errors stay there
        calls += [(lambda m=m, d=data[name]: prepare_solver(FitProblem.create(m.release(*EPS_NAMES), d)), ())
                  for name, m in models.items()]
    if masses.size and early is not None:
        # one warm-up per model, side by side (in one thread the last of the three compiled only
        # after the stage had compiled it itself: 11-20 s each on one H200)
        def mediators(name):
            med = _mediator_stage_models(early[0].result())
            prepare_mediator_curves(med[name], data[name], masses, MEDIATOR_GRID["ratios"])
        calls += [(mediators, (name,)) for name in ("combined", "borexino", "xenonnt")]
    return warm_ups(calls, min_spare=BESIDE_MIN_SPARE)


def _mediator_stage_models(built) -> dict:
    """The mediator stage's three models from the two experiments' mediator models."""
    bx_med, xe_med = built["borexino"], built["xenonnt"]
    med_shared = ("mu_nu", "zprime_coupling", "zprime_mass", "phi_coupling", "phi_mass")
    return {"borexino": bx_med, "xenonnt": xe_med,
            "combined": combine(bx_med, xe_med, labels=("borexino", "xenonnt"), shared=med_shared)}


def _mediator_curves(data, masses, calibration, say, in_turn, early=None):
    """Stage 4: the mediator exclusion curves of each experiment and the combination (none where
    ``masses`` is empty), on the models rebuilt with both mediators on their fast path (``early``:
    their builds started in stage 1, a future and the branch its lines go to)."""
    if not masses.size:
        say("[4/5] (mediator curves skipped)")
        return {}
    say(f"[4/5] mediators: coupling limits at {masses.size} masses, each experiment and combined")
    if early is not None:
        built = early[0].result()
        say.replay(early[1])
    else:
        built = _mediator_models(calibration, say, in_turn)
    med = _mediator_stage_models(built)

    def one(name, m, say):
        say(f"      {name}:")
        return mediator_curves(m, data[name], masses, say=say, **MEDIATOR_GRID)

    return _each_model(say, one, med, beside_ok=not in_turn, clear_each=in_turn)


def _drop_programs() -> None:
    """Drop the compiled programs before a stage run in turn (run_combine), no program loading
    ahead meanwhile (:func:`~nuejax._internal.exported.settle_ahead`)."""
    settle_ahead()
    jax.clear_caches()


def _beside_allowed() -> bool:
    """Whether work may run beside other work here (run_combine: not on a CPU unless BESIDE_ON_CPU)."""
    return BESIDE_ON_CPU or jax.default_backend() != "cpu"


def _each_model(say, one, models: dict, *, beside_ok: bool, clear_each: bool = False) -> dict:
    """``{name: one(name, model, say)}`` for each model: beside each other where ``beside_ok`` and
    work may run beside other work here (:func:`~nuejax.analyses._clock.each_beside`: each model's
    programs compile, and its launches run, beside the others'; lines in the models' order), else
    in turn, each model's programs dropped before the next one's where ``clear_each`` (see
    run_combine)."""
    def run(name, m, say):
        if clear_each:
            _drop_programs()
        return one(name, m, say)

    # the combination's fits are each stage's longest (both data sets, every nuisance of both):
    # they start at once in the stage's own thread, the experiments' where threads are free
    return each_beside(say, run, models, min_spare=BESIDE_MIN_SPARE, allowed=beside_ok and _beside_allowed(),
                       first="combined" if "combined" in models else None)


def _plots(outdir, scans, regions, curves):
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
    if curves:
        fig, axes = plt.subplots(1, 2, figsize=(11.0, 4.6), sharey=True)
        for ax, names, title in ((axes[0], ("universal_vector",), "vector (universal; B-L the same)"),
                                 (axes[1], ("scalar",), "scalar")):
            for name, c in curves.items():
                plot_mediator_curves(ax, c, label=name, color=style[name][0], curve_names=names)
            ax.set_title(title)
            ax.legend()
        fig.tight_layout()
        fig.savefig(outdir / "mediator_limits.png", dpi=120)
        plt.close(fig)
