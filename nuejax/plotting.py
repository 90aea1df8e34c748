r"""Plots (matplotlib is an optional dependency: ``pip install nuejax[plot]``).

Importing this module never changes the matplotlib backend: in a notebook figures display inline,
in a script without a display matplotlib falls back to Agg by itself. Functions that take a
``path`` save the figure there and close it; without a path they return the open figure.

Labels: :func:`parameter_label` turns a parameter name into a physics label
(``eps_ee_L`` -> :math:`\varepsilon^L_{ee}`, ``mu_nu`` -> :math:`\mu_\nu` [:math:`10^{-11}\mu_B`]).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

__all__ = ["require_matplotlib", "plot_spectrum", "plot_scan", "plot_scan_2d", "plot_correlation", "plot_pulls",
           "parameter_label", "parameter_symbol", "component_label", "component_colors", "plot_feldman_cousins",
           "plot_cls", "plot_coverage", "plot_impacts", "save_scan_figures"]

#: Component (signal normalisation group or background) -> legend label.
_COMPONENT_LABELS = {
    "norm_pp": "pp", "norm_pep": "pep", "norm_hep": "hep", "norm_7Be": r"$^7$Be", "norm_8B": r"$^8$B",
    "norm_CNO": "CNO", "rate_pp": "pp", "rate_pep": "pep", "rate_hep": "hep", "rate_7Be": r"$^7$Be",
    "rate_8B": r"$^8$B", "rate_CNO": "CNO", "rate_14C": r"$^{14}$C", "rate_210Bi": r"$^{210}$Bi", "rate_85Kr": r"$^{85}$Kr",
    "rate_210Po": r"$^{210}$Po", "rate_11C": r"$^{11}$C", "rate_ext_40K": r"ext $^{40}$K",
    "rate_ext_214Bi": r"ext $^{214}$Bi", "rate_ext_208Tl": r"ext $^{208}$Tl",
}

_FLAVOUR_TEX = {"ee": "ee", "mumu": r"\mu\mu", "tautau": r"\tau\tau"}

#: Parameters whose values are in a scaled unit: the unit is part of their label even when the
#: caller gives none (a bare "3" on a mu_nu axis would read as 3 mu_B).
_DEFAULT_UNITS = {"mu_nu": "1e-11 mu_B", "dm2_21": "1e-5 eV^2"}

#: Unit strings used by the parameter sets -> LaTeX.
_UNIT_TEX = {
    "1e-11 mu_B": r"$10^{-11}\mu_B$",
    "1e-5 eV^2": r"$10^{-5}$ eV$^2$",
    "cpd/100t": "cpd/100 t",
    "mu_B": r"$\mu_B$",
}

_FIXED_LABELS = {
    "mu_nu": r"$\mu_\nu$",
    "sin2_theta12": r"$\sin^2\theta_{12}$",
    "sin2_theta13": r"$\sin^2\theta_{13}$",
    "sin2_theta23": r"$\sin^2\theta_{23}$",
    "dm2_21": r"$\Delta m^2_{21}$",
}


def _unit_tex(unit: str) -> str:
    return _UNIT_TEX.get(unit, unit)


def parameter_label(name: str, unit: str = "") -> str:
    r"""Physics label of the model parameter ``name`` for an axis, with its unit in brackets.

    ``eps_<ee|mumu|tautau>_<L|R>`` -> ``$\varepsilon^L_{ee}$``; ``mu_nu`` -> ``$\mu_\nu$ [$10^{-11}\mu_B$]``
    (μ_ν and Δm²₂₁ always carry their scaled unit); ``norm_X`` -> "X flux normalisation";
    ``rate_X`` -> "X rate"; oscillation parameters in their usual notation. ``unit`` (as in
    :class:`~nuejax.model.Parameter`, e.g. ``"1e-11 mu_B"``, ``"cpd/100t"``) is typeset and appended;
    unknown names are returned as they are (plus the unit).
    """
    label = parameter_symbol(name)
    unit = unit or _DEFAULT_UNITS.get(name, "")
    return f"{label} [{_unit_tex(unit)}]" if unit else label


def parameter_symbol(name: str) -> str:
    r"""The label of :func:`parameter_label` without a unit (``mu_nu`` -> ``$\mu_\nu$``), for titles."""
    m = re.fullmatch(r"eps_(ee|mumu|tautau)_(L|R)", name)
    if m:
        label = rf"$\varepsilon^{m.group(2)}_{{{_FLAVOUR_TEX[m.group(1)]}}}$"
    elif name in _FIXED_LABELS:
        label = _FIXED_LABELS[name]
    elif name.startswith("norm_"):
        label = f"{component_label(name)} flux normalisation"
    elif name.startswith("rate_"):
        label = f"{component_label(name)} rate"
    else:
        label = name
    return label


def component_label(name: str) -> str:
    """Legend label of a spectrum component (``norm_7Be`` -> ⁷Be, ``rate_210Bi`` -> ²¹⁰Bi)."""
    return _COMPONENT_LABELS.get(name, name)


def require_matplotlib():
    """Import and return ``matplotlib.pyplot``, or explain how to get it. Never changes the backend."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError("plots need matplotlib: pip install 'nuejax[plot]' (or pip install matplotlib)") from err
    return plt


def component_colors(n: int) -> list:
    """``n`` distinct colours: tab10 up to 10, tab20 up to 20 (its 10 darker shades first, then
    the lighter ones), then tab20 + tab20b + tab20c (60). Raises beyond 60."""
    from matplotlib import colormaps

    if n <= 10:
        return [colormaps["tab10"](i) for i in range(n)]
    tab20 = [colormaps["tab20"](i) for i in list(range(0, 20, 2)) + list(range(1, 20, 2))]
    if n <= 20:
        return tab20[:n]
    more = tab20 + [colormaps[c](i) for c in ("tab20b", "tab20c") for i in range(20)]
    if n > len(more):
        raise ValueError(f"{n} components: at most {len(more)} distinct colours are available; "
                         "merge small ones (min_fraction)")
    return more[:n]


def plot_spectrum(edges, components: dict, data=None, *, title=None, path=None, min_fraction=1e-3,
                  xlabel=r"$N_p$ [photoelectrons]", ylabel="counts per photoelectron bin"):
    """Stacked expected spectrum by component, data points, and the pulls (data − model)/√model below.

    ``components`` maps parameter names (or labels) to expected counts per bin; components whose
    total is below ``min_fraction`` of the whole are drawn as one "other" layer. Every layer has
    its own colour. The pull panel's y range is symmetric, at least ±3, so that data equal to the
    model (Asimov data, whose pulls are rounding noise ~1e-12) lie flat at 0.
    With ``path`` the figure is saved there and closed; the figure is returned either way.
    """
    plt = require_matplotlib()
    edges = np.asarray(edges)
    x = 0.5 * (edges[1:] + edges[:-1])
    total = sum(np.asarray(v, dtype=float) for v in components.values())
    items = sorted(components.items(), key=lambda kv: -np.sum(kv[1]))
    big = [(k, np.asarray(v, dtype=float)) for k, v in items if np.sum(v) >= min_fraction * np.sum(total)]
    small = [np.asarray(v, dtype=float) for k, v in items if np.sum(v) < min_fraction * np.sum(total)]
    if small:
        big.append(("other", sum(small)))
    fig, (a0, a1) = plt.subplots(2, 1, sharex=True, figsize=(8, 6.4), gridspec_kw=dict(height_ratios=[3, 1]))
    a0.stackplot(x, *[v for _, v in big], labels=[component_label(k) for k, _ in big],
                 colors=component_colors(len(big)), step="mid", alpha=0.85)
    if data is not None:
        data = np.asarray(data, dtype=float)
        a0.errorbar(x, data, yerr=np.sqrt(np.maximum(data, 1)), fmt=".", ms=2, color="k", elinewidth=0.5, label="data")
    a0.set_yscale("log")
    a0.set_ylim(max(1e-1, 0.5 * float(np.min(total))), 2 * float(np.max(total)))
    a0.set_ylabel(ylabel)
    a0.legend(ncol=3, fontsize=8)
    if title:
        a0.set_title(title)
    limit = 3.0
    if data is not None:
        ok = total > 0
        pull = np.where(ok, (data - total) / np.sqrt(np.where(ok, total, 1.0)), np.nan)
        a1.plot(x, pull, ".", ms=2, color="k")
        if np.any(np.isfinite(pull)):
            limit = max(limit, 1.1 * float(np.nanmax(np.abs(pull))))
    a1.axhline(0, color="gray", lw=0.5)
    a1.set_ylim(-limit, limit)
    a1.set_xlabel(xlabel)
    a1.set_ylabel(r"(data − model)/$\sqrt{\rm model}$")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


def _axes(ax, figsize):
    """``ax`` or a new figure's axes; the second value says whether the figure is new."""
    if ax is not None:
        return ax, False
    plt = require_matplotlib()
    _, ax = plt.subplots(figsize=figsize)
    return ax, True


def _finish(ax, created: bool, path):
    """Save (and close) a figure this module created when ``path`` is given."""
    if path is not None:
        fig = ax.figure
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        if created:
            require_matplotlib().close(fig)
    return ax


def plot_scan(scan, ax=None, *, injected=None, cl: float = 0.9, label=None, one_sided: bool | None = None,
              path=None):
    r"""Profile :math:`\Delta\chi^2` of a :class:`~nuejax.inference.ScanResult` against the scanned
    value, with the CL line: two-sided (:math:`\chi^2_1` at ``cl``, 2.706 at 90 %) or one-sided
    (:math:`\chi^2_1` at 2 cl − 1, 1.642 at 90 %; :meth:`ScanResult.upper_limit`) when the parameter
    is bounded below and ``one_sided`` is true, or ``None`` with the best fit on that bound.
    The x axis carries the physics label and unit (:func:`parameter_label`). Returns the axes;
    with ``path`` the figure is saved there (and closed if this function created it).
    """
    from .inference.intervals import one_sided_threshold, two_sided_threshold

    lower = (getattr(scan, "bounds", None) or (None, None))[0]
    if one_sided is None:
        one_sided = lower is not None and bool(np.isclose(float(scan.best), float(lower)))
    elif one_sided and lower is None:
        raise ValueError(f"a one-sided limit needs a parameter bounded below; {scan.name} has no lower bound")
    level = one_sided_threshold(cl) if one_sided else two_sided_threshold(cl, 1)
    ax, created = _axes(ax, (6.4, 4.4))
    d = np.asarray(scan.delta_chi2, dtype=float)
    ax.plot(scan.values, d, "-", label=label or "profile likelihood")
    kind = "one-sided" if one_sided else "two-sided"
    ax.axhline(level, ls=":", color="gray", label=rf"{cl:.0%} CL, {kind} ($\Delta\chi^2$ = {level:.3f})")
    if injected is not None:
        ax.axvline(injected, ls="--", color="k", lw=1, label=f"injected {injected:g}")
    ax.set_xlabel(parameter_label(scan.name, getattr(scan, "unit", "")))
    ax.set_ylabel(r"$\Delta\chi^2 = -2\Delta\ln\mathcal{L}$")
    # Delta chi^2 of mu_nu grows like mu^4: show the region that matters, not the far wall.
    top = float(np.nanmax(d)) if np.any(np.isfinite(d)) else 4 * level
    ax.set_ylim(0, min(top * 1.05, 4 * level) if top > 0 else 4 * level)
    ax.legend()
    return _finish(ax, created, path)


def plot_scan_2d(scan, ax=None, *, cl: float = 0.9, injected=None, path=None):
    r"""The :math:`\chi^2_2` (``cl``; 4.605 at 90 %) contour of a 2-D profile scan, physics labels
    on both axes, the injected point as a star. Returns the axes (``path`` as in :func:`plot_scan`)."""
    from .inference.intervals import two_sided_threshold

    level = two_sided_threshold(cl, 2)
    ax, created = _axes(ax, (6.4, 4.8))
    d = np.asarray(scan.delta_chi2, dtype=float)
    if np.nanmax(d) >= level:
        cs = ax.contour(scan.values_x, scan.values_y, d.T, levels=[level])
        ax.clabel(cs, fmt={cs.levels[0]: f"{cl:.0%} CL"})
    if injected is not None:
        ax.plot(*injected, "k*", label="injected")
        ax.legend()
    ax.set_xlabel(parameter_label(scan.names[0]))
    ax.set_ylabel(parameter_label(scan.names[1]))
    return _finish(ax, created, path)


def plot_correlation(result, ax=None, *, names=None, annotate: bool | None = None, path=None):
    """Correlation matrix of a :class:`~nuejax.inference.FitResult` as a heat map (−1 blue to +1
    red), parameters labelled with their physics symbols; ``names`` picks a subset (default all
    fitted); ``annotate`` writes the coefficients (default: up to 12 parameters)."""
    names = list(result.names if names is None else names)
    unknown = [n for n in names if n not in result.names]
    if unknown:
        raise ValueError(f"not fitted parameters: {unknown}; fitted: {list(result.names)}")
    idx = [list(result.names).index(n) for n in names]
    corr = np.asarray(result.correlation, dtype=float)[np.ix_(idx, idx)]
    n = len(names)
    ax, created = _axes(ax, (1.0 + 0.45 * n + 1.5, 0.45 * n + 1.5))
    im = ax.imshow(corr, vmin=-1.0, vmax=1.0, cmap="RdBu_r")
    ax.figure.colorbar(im, ax=ax, label="correlation")
    labels = [parameter_symbol(k) for k in names]
    ax.set_xticks(range(n), labels, rotation=90)
    ax.set_yticks(range(n), labels)
    if annotate if annotate is not None else n <= 12:
        for i in range(n):
            for j in range(n):
                ax.text(j, i, f"{corr[i, j]:.2f}", ha="center", va="center", fontsize=7,
                        color="w" if abs(corr[i, j]) > 0.6 else "k")
    return _finish(ax, created, path)


def plot_pulls(result, parameters, ax=None, *, path=None):
    r"""Pulls (value − centre)/σ of the constrained parameters (:meth:`FitResult.pulls`), with
    the ±1σ and ±2σ bands. Returns the axes (``path`` as in :func:`plot_scan`)."""
    pulls = result.pulls(parameters)
    if not pulls:
        raise ValueError("no constrained parameters: nothing to plot")
    names = list(pulls)
    y = np.arange(len(names))
    ax, created = _axes(ax, (6.4, 0.35 * len(names) + 1.2))
    ax.axvspan(-2, 2, color="gold", alpha=0.35, lw=0)
    ax.axvspan(-1, 1, color="limegreen", alpha=0.45, lw=0)
    ax.axvline(0, color="k", lw=0.5)
    ax.plot([pulls[k] for k in names], y, "ko")
    ax.set_yticks(y, [parameter_label(k) for k in names])
    lim = max(3.0, 1.1 * max(abs(v) for v in pulls.values()))
    ax.set_xlim(-lim, lim)
    ax.set_xlabel(r"pull (value $-$ centre)/$\sigma$")
    return _finish(ax, created, path)


def plot_impacts(result, ax=None, *, top: int | None = 20, path=None):
    r"""A :class:`~nuejax.inference.impacts.ImpactsResult` as the ranking plots of ATLAS, CMS and
    cabinetry draw it: one row per parameter, highest-ranked at the top; on the top axis the
    post-fit impacts on the parameter of interest as filled bars (parameter shifted up: blue,
    down: teal) and the pre-fit ones as open bars; on the bottom axis the pull with the
    post-fit constraint as its error bar (parameters without a pre-fit width show no pull).
    ``top``: how many parameters (None: all). Returns the bottom axes (``path`` as in
    :func:`plot_scan`)."""
    names = list(result.ranked(top))
    if not names:
        raise ValueError("no parameters to rank")
    y = np.arange(len(names))[::-1]
    ax, created = _axes(ax, (7.0, 0.42 * len(names) + 2.6))
    up = ax.twiny()
    for what, kw in (("prefit", dict(fill=False, lw=1.0)), ("postfit", dict(alpha=0.75, lw=0))):
        for side, colour in ((1, "C0"), (0, "C9")):
            vals = [np.nan if (result.__dict__[what].get(n) is None or result.__dict__[what][n][side] is None)
                    else result.__dict__[what][n][side] for n in names]
            label = f"{what[:-3]}-fit impact, θ {'+' if side else '−'} σ"
            up.barh(y, np.nan_to_num(vals), height=0.7, edgecolor=colour,
                    **({"color": colour} if what == "postfit" else {}), label=label, **kw)
    span = max([abs(v) for n in names for w in (result.prefit, result.postfit) if w.get(n)
                for v in w[n] if v is not None] + [1e-12])
    up.set_xlim(-1.15 * span, 1.15 * span)
    up.set_xlabel(rf"impact $\Delta$ on {parameter_label(result.poi)}")
    up.legend(loc="lower center", ncol=2, fontsize="small", framealpha=0.9)
    pulls = [np.nan if result.pulls.get(n) is None else result.pulls[n] for n in names]
    err = [np.nan if result.constraints.get(n) is None else result.constraints[n] for n in names]
    ax.axvline(0, color="k", lw=0.5)
    ax.axvline(-1, color="gray", ls=":", lw=0.7)
    ax.axvline(1, color="gray", ls=":", lw=0.7)
    ax.errorbar(pulls, y, xerr=err, fmt="ko", ms=4, label="pull")
    ax.set_xlim(-2.0, 2.0)
    ax.set_xlabel(r"pull $(\hat\theta - \theta_0)/\sigma_{\rm pre}$, error bar $\sigma_{\rm post}/\sigma_{\rm pre}$")
    ax.set_yticks(y, [parameter_label(n) for n in names])
    ax.set_ylim(-2.6, len(names) - 0.3)  # two empty rows at the bottom hold the legend
    ax.set_zorder(up.get_zorder() + 1)  # pulls drawn over the bars
    ax.patch.set_visible(False)
    return _finish(ax, created, path)


def plot_feldman_cousins(result, ax=None, *, path=None):
    r"""A :class:`~nuejax.inference.FeldmanCousinsResult`. 1-D: the observed statistic
    :math:`t_{\rm obs}(\theta)` and the critical values :math:`t_c(\theta)` from the toys (band:
    their statistical uncertainty) against θ, the accepted interval shaded, the Wilks line
    (:math:`\chi^2_1` at the CL) for comparison. 2-D: the accepted grid points and the
    :math:`t_{\rm obs} = t_c` contour. Returns the axes (``path`` as in :func:`plot_scan`)."""
    from .inference.intervals import two_sided_threshold

    ax, created = _axes(ax, (6.4, 4.4))
    if len(result.poi) == 1:
        x = np.asarray(result.axes[0])
        tc, err = np.asarray(result.t_crit), np.asarray(result.t_crit_err)
        ax.plot(x, result.t_obs, "-", label=r"observed $t(\theta)$")
        ax.plot(x, tc, "-", color="C1", label=rf"$t_c$ ({result.cl:.0%} of {result.n_toys} toys per point)")
        ax.fill_between(x, tc - err, tc + err, color="C1", alpha=0.3, lw=0)
        ax.axhline(two_sided_threshold(result.cl, 1), ls=":", color="gray", label="Wilks (asymptotic)")
        for a, b in result.regions:
            ax.axvspan(a, b, color="C2", alpha=0.15)
        ax.set_xlabel(parameter_label(result.poi[0]))
        ax.set_ylabel(r"$-2\ln\lambda$")
        top = float(np.nanmax(tc)) * 3 if np.any(np.isfinite(tc)) else 10.0
        ax.set_ylim(0, top)
        ax.legend(title=f"Feldman–Cousins {result.cl:.0%} CL")
    else:
        nx, ny = (len(a) for a in result.axes)
        d = (np.asarray(result.t_obs) - np.asarray(result.t_crit)).reshape(nx, ny)
        acc = result.accepted_grid
        pts = np.asarray(result.points).reshape(nx, ny, 2)
        ax.plot(pts[..., 0][acc], pts[..., 1][acc], "s", ms=3, color="C2", alpha=0.5, label="accepted")
        if np.nanmin(d) < 0 < np.nanmax(d):
            ax.contour(result.axes[0], result.axes[1], d.T, levels=[0.0], colors="C2")
        ax.plot(*result.best_fit, "k+", label="best fit")
        ax.set_xlabel(parameter_label(result.poi[0]))
        ax.set_ylabel(parameter_label(result.poi[1]))
        ax.legend(title=f"Feldman–Cousins {result.cl:.0%} CL")
    return _finish(ax, created, path)


def plot_cls(result, ax=None, *, path=None):
    """CLs, CL_s+b and CL_b of a :class:`~nuejax.inference.CLsResult` against the tested value,
    the 1 − CL line and the observed limit. Returns the axes (``path`` as in :func:`plot_scan`)."""
    ax, created = _axes(ax, (6.4, 4.4))
    ax.semilogy(result.values, result.cls, "-", label=r"CL$_s$")
    ax.semilogy(result.values, result.clsb, "--", label=r"CL$_{s+b}$")
    ax.semilogy(result.values, result.clb, ":", label=r"CL$_b$")
    ax.axhline(1 - result.cl, color="gray", lw=1)
    if result.limit is not None:
        ax.axvline(result.limit, color="k", lw=1, label=f"limit {result.limit:.3g}")
    ax.set_xlabel(parameter_label(result.name))
    ax.set_ylabel("p-value")
    ax.legend(title=f"{result.cl:.0%} CL, {result.method}")
    return _finish(ax, created, path)


def plot_coverage(results, ax=None, *, path=None):
    """Coverage of :class:`~nuejax.inference.CoverageResult` objects (one per true value of a
    single parameter of interest) against the truth, with binomial error bars and the nominal
    CL. Returns the axes (``path`` as in :func:`plot_scan`)."""
    ax, created = _axes(ax, (6.4, 4.4))
    results = list(results)
    name = results[0].poi[0]
    x = [r.truth[name] for r in results]
    ax.errorbar(x, [r.fraction for r in results], yerr=[r.error for r in results], fmt="o", label="toys")
    ax.axhline(results[0].cl, color="gray", ls=":", label=f"nominal {results[0].cl:.0%}")
    ax.set_xlabel("true " + parameter_label(name))
    ax.set_ylabel("coverage")
    ax.legend()
    return _finish(ax, created, path)


def save_scan_figures(outdir, scans: dict) -> None:
    """One figure per 1-D scan (:func:`plot_scan`): ``profile_<name>.png`` in ``outdir`` for each
    ``{name: ScanResult}``."""
    plt = require_matplotlib()
    for name, s in scans.items():
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        plot_scan(s, ax)
        fig.tight_layout()
        fig.savefig(Path(outdir) / f"profile_{name}.png", dpi=120)
        plt.close(fig)
