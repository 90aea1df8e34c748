"""Exclusion curves of light mediators: the 90 % CL upper limit on the coupling vs the mass, shared
by ``nuejax xenonnt`` and ``nuejax combine`` (docs/xenonnt.md, docs/combination.md).

The curves: a flavour-universal vector (g_ν = g_e = g), a B−L vector (charges −1 of ν and e: the
same product g_ν g_e = g² at tree level, so the same curve in ν–e scattering; they differ only in
matter effects and kinetic mixing, which are not modelled) and a scalar (g_ν = g_e = g). Each
limit is one-sided with q̃ (Cowan et al., EPJC 71 (2011) 1554, arXiv:1007.1727), asymptotic:
profile Δχ² = χ²₁ at 2 CL − 1 (1.642 at 90 %), every other free parameter profiled.
"""

from __future__ import annotations

import numpy as np

from ..inference.intervals import one_sided_threshold
from ..inference.scan import prepare_profile_scans, profile_scans, scans_global_fits
from ..model.physics_params import MEDIATOR_PARAMETERS
from ..physics.general_nsi import MEDIATOR_COUPLING_UNIT

__all__ = ["FIRST_WAVE_RATIO", "MEDIATOR_MASSES", "MEDIATOR_MODELS", "Q_REF", "RATIO_GRID", "SCAN_ITER",
           "WAVE_DECADES", "mediator_curves", "mediator_limit", "mediator_limits", "mediator_model", "mediators_limits",
           "plot_mediator_curves", "prepare_mediator_curves", "scan_waves"]

#: mediator masses [MeV]
MEDIATOR_MASSES = np.logspace(-2, 2, 9)
#: curve name -> mediator of the model (what g means: g_ν g_e = g²)
MEDIATOR_MODELS = {"universal_vector": "zprime", "b_minus_l": "zprime", "scalar": "phi"}
#: 2 m_e T at T of a few keV [MeV²]: the mass below which a mediator's propagator stops mattering
#: in a xenon detector (for Borexino's 0.1-1 MeV recoils the contact regime starts higher; the
#: grid below is wide enough for both)
Q_REF = 3e-3
#: tested coupling products y = g_ν g_e per mass, as y / (m² + Q_REF) in MEDIATOR_COUPLING_UNIT (1e-12)
RATIO_GRID = np.logspace(-2, 3, 21)
SCAN_ITER = 40
#: the coarse scans run in ascending waves and a case stops once it crosses its limit's threshold
#: (profile_scans' ``stop_above``): the first wave holds the points up to this ratio (with 0),
#: each later one as many points as WAVE_DECADES decades of the ratio grid hold (scan_waves)
FIRST_WAVE_RATIO = 10.0
WAVE_DECADES = 1.0


def scan_waves(ratios=RATIO_GRID) -> tuple:
    """The wave sizes (points per case) of the coarse scans on ``ratios`` (increasing, > 0): the
    first wave the point at 0 and the ratios up to :data:`FIRST_WAVE_RATIO`, each later one as many
    ratios as the grid has in :data:`WAVE_DECADES` decades above its first (one decade of a
    log-uniform grid; at least one)."""
    r = np.asarray(ratios, dtype=float)
    first = 1 + int(np.sum(r <= FIRST_WAVE_RATIO))
    per = int(np.sum((r > r[0]) & (np.log10(r / r[0]) <= WAVE_DECADES + 1e-9)))
    return first, max(per, 1)


def mediator_limit(model, data, mediator: str, mass_mev: float, *, cl: float = 0.9, ratios=RATIO_GRID,
                   refine: bool = True, refine_points: int | None = None) -> dict:
    """The one-sided ``cl`` upper limit (q̃, asymptotic: profile Δχ² = χ²₁ at 2 cl − 1) on the
    coupling product y = g_ν g_e of ``mediator`` (``'zprime'`` or ``'phi'``) at ``mass_mev``:
    :func:`mediator_limits` at one mass."""
    return mediator_limits(model, data, mediator, [mass_mev], cl=cl, ratios=ratios, refine=refine,
                           refine_points=refine_points)[0]


def mediator_limits(model, data, mediator: str, masses, *, cl: float = 0.9, ratios=RATIO_GRID,
                    refine: bool = True, refine_points: int | None = None) -> list:
    """The one-sided ``cl`` upper limits (q̃, asymptotic: profile Δχ² = χ²₁ at 2 cl − 1) on the
    coupling product y = g_ν g_e of ``mediator`` (``'zprime'`` or ``'phi'``) at each of
    ``masses`` [MeV], every other free parameter profiled but the other mediators' couplings
    (held at their values): :func:`mediators_limits` of one mediator."""
    return mediators_limits(model, data, (mediator,), masses, cl=cl, ratios=ratios, refine=refine,
                            refine_points=refine_points)[mediator]


def mediators_limits(model, data, mediators, masses, *, cl: float = 0.9, ratios=RATIO_GRID, refine: bool = True,
                     refine_points: int | None = None) -> dict:
    """``{mediator: limits}`` of :func:`mediator_limits` for each of ``mediators`` at each of
    ``masses`` [MeV], every other free parameter profiled. ``model`` has the mediators' couplings
    free (bounds from 0); a mediator's mass is held at each mass in turn (not profiled); the other
    mediators' couplings stay at their values (zero: :func:`mediator_model`), free or not, so that
    every mediator's curves run one compiled program. Every mediator's and every mass's scan
    points run in the same batched launches (:func:`~nuejax.inference.scan.profile_scans`: the
    masses and the other couplings pinned per row), a pass of launches per wave of the coarse
    grids and one for the refinements.

    The tested products are 0 and ``ratios`` × (m² + :data:`Q_REF`) (the contact scaling: limits
    on that ratio barely change with the mass), fitted in ascending waves (:func:`scan_waves`);
    a case stops once a converged point right of its best fit lies above the threshold
    (:func:`~nuejax.inference.scan.profile_scans`, ``stop_above``), so the points far above the
    limit are not fitted; then, with ``refine``, ``refine_points`` (default:
    as many) points from the larger of the best fit and the last point below the threshold to the
    first point above it, right of the best fit. The best fit need not be at 0: where the data
    prefer a coupling, its minimum can be narrower than the coarse grid's step, which then has no
    point below the threshold at all. Returns per mediator and mass ``{"product": y (absolute),
    "g": sqrt(y), "best_product": ŷ, "delta_chi2_at_zero": Δχ²(y = 0), ...}``; ``product`` and
    ``g`` are None where the profile does not cross right of the best fit inside the grid. The
    scans' warnings (points that did not converge, left out of a limit) reach the caller; each
    limit's ``converged`` counts its points that did, of ``points`` in the scan it was read from
    (the refined one, or the coarse one as far as it was fitted). The cases share their
    global fits (:func:`~nuejax.inference.scan.scans_global_fits`) between the two passes."""
    mediators = tuple(dict.fromkeys((mediators,) if isinstance(mediators, str) else mediators))
    masses = np.atleast_1d(np.asarray(masses, dtype=float))
    # a case per mediator and mass: its coupling scanned, every mediator's mass held at the mass
    # (no effect at zero coupling), the other couplings held at their values: one program
    cases = [(md, m) for md in mediators for m in masses]
    names = [MEDIATOR_PARAMETERS[md][0] for md, _ in cases]
    grids = [np.concatenate([[0.0], np.asarray(ratios, dtype=float) * (m ** 2 + Q_REF)]) for _, m in cases]
    profile, held = _profiled_and_held(model, mediators)
    case_masses = np.array([m for _, m in cases])

    def given(ms):
        return {m: ms for m in held}

    # no warning filter here: warnings.catch_warnings is not thread-safe and the curves of several
    # models run beside each other (nuejax combine); the commands filter RuntimeWarning around them
    level = one_sided_threshold(cl)
    fits = scans_global_fits(model, data, names, grids, given(case_masses), profile=profile)
    scans = profile_scans(model, data, names, grids, given(case_masses), profile=profile, n_iter=SCAN_ITER,
                          global_fits=fits, stop_above=level, waves=scan_waves(ratios))
    at_zero = [float(np.asarray(s.delta_chi2)[0]) for s in scans]
    passes = [1] * len(scans)
    fine, which = [], []
    for k, s in enumerate(scans):
        x, d = np.asarray(s.values), np.asarray(s.delta_chi2)
        ok = np.asarray(s.converged, dtype=bool) & np.isfinite(d)
        above = np.nonzero((x > s.best) & (d > level) & ok)[0]
        if refine and above.size:
            j = int(above[0])
            below = np.nonzero(ok[:j] & (d[:j] <= level))[0]  # the last converged point below the threshold
            lo = max(float(s.best), float(x[below[-1]])) if below.size else float(s.best)
            n = grids[k].size - 1 if refine_points is None else int(refine_points)
            fine.append(np.unique(np.concatenate([[0.0, float(s.best)], np.linspace(lo, x[j], n)])))
            which.append(k)
    if which:
        again = profile_scans(model, data, [names[k] for k in which], fine, given(case_masses[which]),
                              profile=profile, n_iter=SCAN_ITER, global_fits=[fits[k] for k in which])
        for k, s in zip(which, again):
            scans[k], passes[k] = s, 2
    out = {md: [] for md in mediators}
    for (md, _), s, z, p in zip(cases, scans, at_zero, passes):
        ul = s.upper_limit(cl)
        prod = None if ul is None else float(ul) * MEDIATOR_COUPLING_UNIT
        out[md].append({"product": prod, "g": None if prod is None else float(np.sqrt(prod)),
                        "best_product": float(s.best) * MEDIATOR_COUPLING_UNIT, "delta_chi2_at_zero": z,
                        "converged": int(np.asarray(s.converged).sum()), "points": int(np.size(s.values)), "passes": p})
    return out


def _profiled_and_held(model, mediators) -> tuple:
    """The parameters the scans of ``mediators``' couplings profile (the free ones but the
    couplings) and hold per case (the mediators' masses, and the other mediators' where their
    couplings are parameters too)."""
    ps = model.parameters
    couplings = {c for c, _ in MEDIATOR_PARAMETERS.values()}
    profile = tuple(n for n in ps.free_names if n not in couplings)
    held = dict.fromkeys([MEDIATOR_PARAMETERS[md][1] for md in mediators]
                         + [m for c, m in MEDIATOR_PARAMETERS.values() if m in ps.names and c in ps.names])
    return profile, held


def prepare_mediator_curves(model, data, masses=MEDIATOR_MASSES, ratios=RATIO_GRID) -> None:
    """Load or compile ahead the solver program that :func:`mediator_curves` of ``model`` and
    ``data`` runs (:func:`~nuejax.inference.fitting.prepare_solver`): a warm-up for a thread beside
    other work."""
    mm = mediator_model(model, None, masses, ratios)
    mediators = tuple(dict.fromkeys(MEDIATOR_MODELS.values()))
    profile, held = _profiled_and_held(mm, mediators)
    prepare_profile_scans(mm, data, [MEDIATOR_PARAMETERS[md][0] for md in mediators], held, profile=profile)


def mediator_model(model, mediator: str | None = None, masses=MEDIATOR_MASSES, ratios=RATIO_GRID):
    """``model`` (with mediator parameters) with ``mediator``'s coupling free from 0 at 0 and
    large enough for ``ratios`` at every mass of ``masses``; ``mediator`` None: every mediator's
    coupling in the model (so that the curves of both run one compiled program:
    :func:`mediator_limits` holds the others at zero)."""
    names = [MEDIATOR_PARAMETERS[mediator][0]] if mediator is not None else \
        [c for c, _ in MEDIATOR_PARAMETERS.values() if c in model.parameters.names]
    top = float(np.max(ratios)) * (float(np.max(masses)) ** 2 + Q_REF) * 1.01
    ps = model.parameters
    for c in names:
        ps = ps.release(c).update(c, lower=0.0, upper=top, value=0.0)
    return model.with_parameters(ps)


def mediator_curves(model, data, masses=MEDIATOR_MASSES, *, say=None, ratios=RATIO_GRID,
                    refine_points: int | None = None) -> dict:
    """The curves of :data:`MEDIATOR_MODELS` at ``masses`` [MeV] for ``model`` (with both
    mediators' parameters, fixed) and ``data``: per curve the masses, the limits on g (g_ν g_e = g²)
    and on the product, the best-fit product and Δχ² at zero coupling per mass, and how many scan
    points converged (``scans_converged``, of ``scans_points``). ``ratios``, ``refine_points``: of
    :func:`mediator_limit`."""
    mm = mediator_model(model, None, masses, ratios)
    # every mediator's scans in the same launches (XENONnT, three masses: 12 launches instead of 16)
    by_mediator = mediators_limits(mm, data, tuple(MEDIATOR_MODELS.values()), masses, ratios=ratios,
                                   refine_points=refine_points)
    out = {}
    for curve, mediator in MEDIATOR_MODELS.items():
        rows = by_mediator[mediator]
        out[curve] = {"mediator": mediator, "masses_mev": [float(x) for x in masses],
                      "couplings": [r["g"] for r in rows], "products": [r["product"] for r in rows],
                      "best_products": [r["best_product"] for r in rows],
                      "delta_chi2_at_zero": [r["delta_chi2_at_zero"] for r in rows],
                      "coupling_definition": "g with g_nu g_e = g^2 (flavour-universal)",
                      "scans_converged": [r["converged"] for r in rows],
                      "scans_points": [r["points"] for r in rows]}
        if say:
            say(f"      {curve}: g < " + ", ".join("-" if r["g"] is None else f"{r['g']:.2g}" for r in rows))
    return out


def plot_mediator_curves(ax, curves: dict, *, label: str = "", color=None, curve_names=None) -> None:
    """Draw ``curves`` (as :func:`mediator_curves` returns) on the matplotlib axes ``ax`` (log–log),
    one line style per curve; ``label`` prefixes the legend entries."""
    styles = {"universal_vector": "-", "b_minus_l": ":", "scalar": "--"}
    for curve in curve_names or curves:
        d = curves[curve]
        x = np.array(d["masses_mev"])
        y = np.array([np.nan if g is None else g for g in d["couplings"]])
        name = curve.replace("_", " ")
        ax.loglog(x, y, styles.get(curve, "-"), marker="o", ms=3, color=color,
                  label=f"{label}: {name}" if label else name)
    ax.set_xlabel("mediator mass [MeV]")
    ax.set_ylabel(r"coupling $g$ ($g_\nu g_e = g^2$), 90% CL upper limit")
