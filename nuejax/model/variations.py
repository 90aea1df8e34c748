r"""Template uncertainties as stages: shape systematics interpolated between template variations,
and the Monte Carlo statistical uncertainty of the templates per bin (Barlow–Beeston-lite).

**Shape variations** (HistFactory's ``HistoSys``; Cranmer et al., "HistFactory: A tool for
creating statistical models for use with RooFit and RooStats", CERN-OPEN-2012-016). A template
:math:`t_c` with variations :math:`t^\pm_{c,k}` (the template with systematic :math:`k` at
:math:`\pm 1\sigma`) becomes :math:`t_c + \sum_k \delta_{c,k}(\alpha_k)`, with
:math:`\Delta^+ = t^+ - t`, :math:`\Delta^- = t - t^-` and the interpolation

.. math::
    \delta(\alpha) = \begin{cases} \alpha\,\Delta^+ & \alpha > 1 \\
        \alpha\,\big[S + \alpha A\,(15 - 10\alpha^2 + 3\alpha^4)\big] & |\alpha| \le 1 \\
        \alpha\,\Delta^- & \alpha < -1 \end{cases}, \qquad
    S = \tfrac12(\Delta^+ + \Delta^-),\ A = \tfrac1{16}(\Delta^+ - \Delta^-),

ROOT's and pyhf's "code 4p" (pyhf documentation, ``pyhf.interpolators.code4p``): linear outside
:math:`|\alpha| \le 1`, a polynomial inside that equals :math:`t^\pm` at :math:`\alpha = \pm 1`
with continuous first and second derivatives there (piecewise-linear interpolation has a kink at 0
that a Newton solver stumbles on). Each :math:`\alpha_k` is a parameter with a unit Gaussian
constraint (centre 0, σ = 1); one :math:`\alpha_k` may move several templates (a correlated
systematic). The varied template is scaled by the template's normalisation like the nominal one.

**Monte Carlo statistics** (HistFactory's ``staterror``; R. Barlow and C. Beeston, "Fitting using
finite Monte Carlo samples", Comput. Phys. Commun. 77 (1993) 219, in the "lite" form of one
parameter per bin for the sum of templates, J. S. Conway, arXiv:1103.0354). The summed template
expectation in bin :math:`b` is multiplied by :math:`\gamma_b`, constrained by a Gaussian of
centre 1 and width :math:`\sigma_b = \sqrt{\sum_c (r^0_c e_{c,b})^2} / \sum_c r^0_c t_{c,b}`,
the relative uncertainty of the nominal sum (:math:`e_{c,b}`: the absolute uncertainty of
template :math:`c` in bin :math:`b`, :math:`r^0_c` the normalisations' start values). Bins with
no uncertainty get no parameter.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .._internal.pytree import static_field
from ..errors import InputError
from .parameters import Parameter

__all__ = ["AddShapeVariations", "ScaleBins", "code4p", "mc_stat_parameters", "shape_variation_stage"]


def code4p(alpha, delta_up, delta_down):
    r""":math:`\delta(\alpha)` of the module docstring (any array shapes that broadcast): the
    change of a template at nuisance value ``alpha`` given ``delta_up`` = :math:`t^+ - t` and
    ``delta_down`` = :math:`t - t^-`."""
    s = 0.5 * (delta_up + delta_down)
    a = 0.0625 * (delta_up - delta_down)
    a2 = alpha * alpha
    inner = alpha * (s + alpha * a * (15.0 + a2 * (-10.0 + 3.0 * a2)))
    return jnp.where(alpha > 1.0, alpha * delta_up, jnp.where(alpha < -1.0, alpha * delta_down, inner))


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class AddShapeVariations:
    r""":math:`x + \sum_k p[\text{scale}_k]\,\delta_k(p[\alpha_k])`: variation ``k`` changes the
    template whose normalisation is ``scale_names[k]`` by :func:`code4p` of ``delta_up[k]``,
    ``delta_down[k]`` (K, n_bins). The expectation stays affine in the normalisations at fixed
    :math:`\alpha` (declared linear); the :math:`\alpha` are not."""

    delta_up: jax.Array
    delta_down: jax.Array
    alpha_names: tuple = static_field()
    scale_names: tuple = static_field()

    @property
    def reads(self) -> tuple:
        return tuple(dict.fromkeys(self.alpha_names + self.scale_names))

    @property
    def linear_names(self) -> tuple:
        return tuple(dict.fromkeys(self.scale_names))

    def __call__(self, p, x) -> jax.Array:
        alpha = jnp.stack([p[n] for n in self.alpha_names])[:, None]
        scale = jnp.stack([p[n] for n in self.scale_names])[:, None]
        return x + jnp.sum(scale * code4p(alpha, self.delta_up, self.delta_down), axis=0)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class ScaleBins:
    r""":math:`x_b\,p[\text{names}_b]` for the bins ``bins`` (static indices), the other bins
    unchanged: one factor :math:`\gamma_b` per bin (the Barlow–Beeston-lite parameters)."""

    names: tuple = static_field()
    bins: tuple = static_field()

    @property
    def reads(self) -> tuple:
        return self.names

    def __call__(self, p, x) -> jax.Array:
        if not self.names:
            return x
        gamma = jnp.stack([p[n] for n in self.names]).astype(x.dtype)
        factor = jnp.ones_like(x).at[jnp.asarray(self.bins)].set(gamma, unique_indices=True)
        return x * factor


def shape_variation_stage(nominal: dict, variations, dtype=None) -> tuple:
    """The :class:`AddShapeVariations` stage and the :math:`\\alpha` parameters (unit Gaussian
    constraints) of ``variations``: ``(scale_name, alpha_name, up, down)`` tuples, each up/down a
    template (n_bins,) of the normalisation ``scale_name`` whose nominal template is
    ``nominal[scale_name]``. Raises :class:`~nuejax.errors.InputError` naming the variation for
    an unknown template, a wrong length or a non-finite bin."""
    ups, downs, alphas, scales = [], [], [], []
    for scale, alpha, up, down in variations:
        if scale not in nominal:
            raise InputError(f"shape variation {alpha!r}: no template with normalisation {scale!r} "
                             f"(templates: {', '.join(nominal)})")
        t = np.asarray(nominal[scale], dtype=float)
        for side, h in (("up", up), ("down", down)):
            h = np.asarray(h, dtype=float)
            if h.shape != t.shape:
                raise InputError(f"shape variation {alpha!r} of {scale!r}: the {side} template has shape {h.shape}, "
                                 f"the nominal {t.shape}")
            if not np.all(np.isfinite(h)):
                raise InputError(f"shape variation {alpha!r} of {scale!r}: the {side} template's bin "
                                 f"{int(np.argmax(~np.isfinite(h)))} is not finite")
        ups.append(np.asarray(up, dtype=float) - t)
        downs.append(t - np.asarray(down, dtype=float))
        alphas.append(alpha)
        scales.append(scale)
    dt = dtype or jnp.result_type(float)
    stage = AddShapeVariations(jnp.asarray(np.stack(ups), dtype=dt), jnp.asarray(np.stack(downs), dtype=dt),
                               tuple(alphas), tuple(scales))
    params = tuple(Parameter(a, 0.0, -5.0, 5.0, constraint=(0.0, 1.0), doc="shape systematic (code 4p), unit Gaussian")
                   for a in dict.fromkeys(alphas))
    return stage, params


def mc_stat_parameters(templates, errors, scales, *, prefix: str = "mc_stat") -> tuple:
    """The :class:`ScaleBins` stage and its :math:`\\gamma_b` parameters (Gaussian constraints of
    centre 1 and the width of the module docstring) for ``templates`` and their absolute per-bin
    uncertainties ``errors`` (both (n, n_bins)) at the normalisations ``scales`` (n,). Bins
    without uncertainty, or whose nominal sum is 0, get no parameter."""
    t = np.asarray(templates, dtype=float)
    e = np.asarray(errors, dtype=float)
    r = np.asarray(scales, dtype=float)
    if e.shape != t.shape:
        raise InputError(f"MC statistical uncertainties have shape {e.shape}, the templates {t.shape}")
    if not np.all(np.isfinite(e)) or np.any(e < 0):
        i, b = np.argwhere(~np.isfinite(e) | (e < 0))[0]
        raise InputError(f"MC statistical uncertainty of template {i} in bin {b} is {e[i, b]}: it must be finite and >= 0")
    total = r @ t
    sigma = np.sqrt((r[:, None] ** 2 * e ** 2).sum(axis=0))
    bins = tuple(int(b) for b in np.nonzero((sigma > 0) & (total > 0))[0])
    names = tuple(f"{prefix}_{b}" for b in bins)
    params = tuple(Parameter(n, 1.0, 0.0, np.inf, constraint=(1.0, float(sigma[b] / total[b])),
                             doc=f"Barlow-Beeston-lite factor of bin {b}") for n, b in zip(names, bins))
    return ScaleBins(names, bins), params
