"""Plots (matplotlib is an optional dependency: ``pip install nuejax[plot]``)."""

from __future__ import annotations

import numpy as np

__all__ = ["require_matplotlib", "plot_spectrum"]

_LABELS = {"norm_pp": "pp", "norm_pep": "pep", "norm_hep": "hep", "norm_7Be": r"$^7$Be", "norm_8B": r"$^8$B",
           "norm_CNO": "CNO", "rate_14C": r"$^{14}$C", "rate_210Bi": r"$^{210}$Bi", "rate_85Kr": r"$^{85}$Kr",
           "rate_210Po": r"$^{210}$Po", "rate_11C": r"$^{11}$C", "rate_ext_40K": r"ext $^{40}$K",
           "rate_ext_214Bi": r"ext $^{214}$Bi", "rate_ext_208Tl": r"ext $^{208}$Tl"}


def require_matplotlib():
    """Import matplotlib with the non-interactive Agg backend, or explain how to get it."""
    try:
        import matplotlib
    except ImportError as err:
        raise ImportError("plots need matplotlib: pip install 'nuejax[plot]' (or pip install matplotlib)") from err
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_spectrum(edges, components: dict, data=None, *, title=None, path=None, min_fraction=1e-3):
    """Stacked expected spectrum by component, data points, and (data - model)/sqrt(model) below.

    ``components`` maps parameter names (or labels) to expected counts per bin; components whose
    total is below ``min_fraction`` of the whole are drawn as one "other" layer.
    """
    plt = require_matplotlib()
    edges = np.asarray(edges)
    x = 0.5 * (edges[1:] + edges[:-1])
    total = sum(np.asarray(v) for v in components.values())
    items = sorted(components.items(), key=lambda kv: -np.sum(kv[1]))
    big = [(k, v) for k, v in items if np.sum(v) >= min_fraction * np.sum(total)]
    small = [v for k, v in items if np.sum(v) < min_fraction * np.sum(total)]
    if small:
        big.append(("other", sum(small)))
    fig, (a0, a1) = plt.subplots(2, 1, sharex=True, figsize=(8, 6.4), gridspec_kw=dict(height_ratios=[3, 1]))
    a0.stackplot(x, *[np.asarray(v) for _, v in big], labels=[_LABELS.get(k, k) for k, _ in big], step="mid", alpha=0.85)
    if data is not None:
        a0.errorbar(x, data, yerr=np.sqrt(np.maximum(data, 1)), fmt=".", ms=2, color="k", elinewidth=0.5, label="data")
    a0.set_yscale("log")
    a0.set_ylim(max(1e-1, 0.5 * float(np.min(total))), 2 * float(np.max(total)))
    a0.set_ylabel("counts per photoelectron bin")
    a0.legend(ncol=3, fontsize=8)
    if title:
        a0.set_title(title)
    if data is not None:
        a1.plot(x, (np.asarray(data) - total) / np.sqrt(total), ".", ms=2, color="k")
    a1.axhline(0, color="gray", lw=0.5)
    a1.set_xlabel(r"$N_p$ [photoelectrons]")
    a1.set_ylabel(r"(data − model)/$\sqrt{\rm model}$")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig
