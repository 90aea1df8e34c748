r"""Components from 1-D shapes on any axis, with declared normalisation conventions.

A published Monte Carlo shape is a piecewise-constant density :math:`d(E)` on its own bins (keV,
N_p, N_h: any axis). :func:`shape_template` turns it into a template :math:`t(j)` on a model's
bins, *per unit of the component's rate parameter*, so that the component contributes
:math:`\text{rate}\cdot t(j)` [counts/(day·100 t) per bin]. The rebinning is exact for the
histogram: :math:`t(j) = [D(b_j) - D(a_j)]/N` with :math:`D` the cumulative content
(piecewise linear between the shape's edges). The normalisation :math:`N` is what the rate
parameter means, and must be declared (there is no default):

``"zero_threshold"``
    The shape is drawn for a total decay (or interaction) rate ``drawn_rate`` counted from zero
    energy, as experiments quote rates (e.g. the Borexino Phase-III solar shapes, drawn at the
    rates of arXiv:2005.12829 Table 2): :math:`N` = ``drawn_rate``. The template then sums to the
    fraction of the rate that lies on the model's bins.
``"integral"``
    The rate parameter is the content of the shape above ``above`` (default: its first edge):
    :math:`N = D(\infty) - D(\text{above})`. The template sums to one over that range.

Gaussian peaks on the observable axis (:class:`GaussianPeak`: a quenched α line such as
²¹⁰Po, with position and width as parameters) are the other kind of component that real
analyses need and Monte Carlo shapes do not provide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import jax
import numpy as np

from ..detector.checks import check_edges, describe_edges
from ..detector.response import gaussian_bin_probabilities
from ..errors import InputError

__all__ = ["NORMALISATIONS", "shape_template", "rebin_density", "GaussianPeak"]

NORMALISATIONS = ("zero_threshold", "integral")


def rebin_density(edges, density, new_edges) -> np.ndarray:
    """Content of a piecewise-constant ``density`` on ``edges`` inside each bin of ``new_edges``
    (exact: differences of the piecewise-linear cumulative content; zero outside the shape)."""
    edges = np.asarray(edges, dtype=float)
    cum = np.concatenate([[0.0], np.cumsum(np.asarray(density, dtype=float) * np.diff(edges))])
    return np.diff(np.interp(np.asarray(new_edges, dtype=float), edges, cum, left=0.0, right=cum[-1]))


def shape_template(edges, density, model_edges, *, normalisation: str, drawn_rate: float | None = None,
                   above: float | None = None, name: str = "shape") -> np.ndarray:
    """The template per unit rate of a 1-D shape on ``model_edges`` (module docstring).

    Args:
        edges: (n + 1,) the shape's bin edges, on the same axis and unit as ``model_edges``.
        density: (n,) content per unit of that axis (content of a bin = density × width).
        model_edges: (m + 1,) the model's bins.
        normalisation: ``"zero_threshold"`` (with ``drawn_rate``) or ``"integral"`` (with
            optional ``above``).
    Returns:
        (m,) numpy template.

    Raises:
        InputError: an unknown ``normalisation`` or a missing/extra ``drawn_rate``/``above``;
            bad edges; a density that is not finite or negative (names the bin); a zero
            normalisation; a template that is empty on the model's bins. Messages name ``name``.
    """
    what = f"shape {name!r}"
    if normalisation not in NORMALISATIONS:
        raise InputError(f"{what}: normalisation must be one of {NORMALISATIONS}, got {normalisation!r}")
    e = check_edges(edges, what, "shape")
    m = check_edges(model_edges, what, "model")
    d = np.asarray(density, dtype=float)
    if d.shape != (e.size - 1,):
        raise InputError(f"{what}: density has shape {d.shape}, expected ({e.size - 1},) for {describe_edges(e)}")
    bad = np.nonzero(~np.isfinite(d) | (d < 0))[0]
    if bad.size:
        raise InputError(f"{what}: density {d[bad[0]]} in bin {int(bad[0])} [{e[bad[0]]:g}, {e[bad[0] + 1]:g}) "
                         "is negative or not finite")
    if normalisation == "zero_threshold":
        if above is not None:
            raise InputError(f"{what}: 'above' is for normalisation='integral'")
        if drawn_rate is None or not (math.isfinite(drawn_rate) and drawn_rate > 0):
            raise InputError(f"{what}: normalisation='zero_threshold' needs drawn_rate > 0 (the total rate the "
                             f"shape is drawn for), got {drawn_rate!r}")
        norm = float(drawn_rate)
    else:
        if drawn_rate is not None:
            raise InputError(f"{what}: drawn_rate is for normalisation='zero_threshold'")
        lo = e[0] if above is None else float(above)
        norm = float(rebin_density(e, d, [lo, e[-1]])[0]) if lo < e[-1] else 0.0
        if not norm > 0:
            raise InputError(f"{what}: the shape has no content above {lo:g}; cannot normalise to its integral")
    t = rebin_density(e, d, m) / norm
    if not np.any(t > 0):
        raise InputError(f"{what}: is empty on the model's bins {describe_edges(m)} (the shape covers "
                         f"[{e[0]:g}, {e[-1]:g}])")
    return t


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class GaussianPeak:
    r"""A Gaussian line on the observable axis: ``rate`` × :math:`\int_{a_j}^{b_j}\mathcal N(x;
    \text{mean}, \text{sigma}^2)\,dx` (the bin integral, counts outside the range are lost).
    ``names`` are the parameters holding (rate, mean, sigma)."""

    names: tuple = field(metadata=dict(static=True))

    def __call__(self, p, obs_edges):
        rate, mean, sigma = (p[n] for n in self.names)
        return rate * gaussian_bin_probabilities(mean, sigma * sigma, obs_edges)
