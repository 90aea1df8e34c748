r"""Stages on the observable axis: templates, peaks and the exposure.

A stage is a small frozen PyTree with ``__call__(p, x) -> x``: it reads named parameters from the
dict ``p`` and maps the expected counts ``x`` of the stage before it (:mod:`nuejax.model.pipeline`).
Besides the signal stages (:mod:`~nuejax.model.signals`), the folds (:mod:`~nuejax.model.folds`)
and the observable transforms (:class:`~nuejax.detector.transforms.ResponseTransform`), a model
ends with these:

* :class:`AddTemplates` -- :math:`x + \sum_c r_c\,t_c`: background templates (per unit rate,
  counts/(day·100 t) per bin), or shapes of :func:`~nuejax.model.templates.shape_template`;
* :class:`AddPeaks` -- :math:`x + \sum_p \mathrm{peak}_p`: Gaussian lines on the observable axis
  (:class:`~nuejax.model.templates.GaussianPeak`);
* :class:`Exposure` -- :math:`\mathrm{MT}\,M_j\,x_j`: exposure (day·100 t) and live-time mask
  (paper Eq. mu_total).

Each stage says which parameters it ``reads`` (checked against the model's parameter set when
the model is made), in which of them it is affine (``linear_names``: the Hessian of
:func:`~nuejax.inference.fitting.value_grad_hessian` uses it) and which of them scale a component
of the spectrum (``component_names``: :func:`~nuejax.model.pipeline.components`).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .._internal.pytree import static_field

__all__ = ["AddTemplates", "AddPeaks", "ComponentScales", "Exposure", "SumBins"]



class ComponentScales:
    """What a stage declares whose every component is multiplied by one parameter of
    ``scale_names`` (a template's rate, a signal's flux normalisation): it reads them, is affine in
    them, and each scales one component of the spectrum."""

    @property
    def reads(self) -> tuple:
        return self.scale_names

    @property
    def linear_names(self) -> tuple:
        return self.scale_names

    @property
    def component_names(self) -> tuple:
        return self.scale_names


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class AddTemplates(ComponentScales):
    """:math:`x + \\sum_c p[\\text{names}_c]\\,t_c`: ``templates`` (n, n_bins) per unit of their
    rate parameters ``names`` (static). The first stage of a model without signals starts from 0."""

    templates: jax.Array
    names: tuple = static_field()

    @property
    def scale_names(self) -> tuple:
        return self.names

    def __call__(self, p, x) -> jax.Array:
        if not self.names:
            return x
        total = jnp.stack([p[n] for n in self.names]) @ self.templates
        return total if x is None else x + total


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class AddPeaks:
    """:math:`x + \\sum_p \\mathrm{peak}_p(p, \\text{edges})`: ``peaks`` (e.g.
    :class:`~nuejax.model.templates.GaussianPeak`, whose first name is its rate) on the bins ``obs_edges``."""

    peaks: tuple
    obs_edges: jax.Array

    @property
    def reads(self) -> tuple:
        return tuple(n for peak in self.peaks for n in peak.names)

    @property
    def linear_names(self) -> tuple:
        return tuple(peak.names[0] for peak in self.peaks)

    @property
    def component_names(self) -> tuple:
        return tuple(peak.names[0] for peak in self.peaks)

    def __call__(self, p, x) -> jax.Array:
        for peak in self.peaks:
            x = peak(p, self.obs_edges) if x is None else x + peak(p, self.obs_edges)
        return x


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Exposure:
    """:math:`\\mathrm{MT}\\,M_j\\,x_j`: ``exposure`` (static, day × 100 t, or whatever unit the
    rates need) times the live-time ``mask`` (n_bins,)."""

    mask: jax.Array
    exposure: float = static_field()

    reads = ()

    def __call__(self, p, x) -> jax.Array:
        return self.exposure * self.mask * x


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SumBins:
    r""":math:`y_j = \sum_{k<m} x_{jm+k}`: every ``m`` (static) consecutive bins summed into one
    (counts on fine sub-bins, e.g. after a per-sub-bin efficiency, back on the analysis bins);
    ``m`` a tuple: output bin ``j`` sums the next ``m[j]`` input bins."""

    m: int | tuple = static_field()

    reads = ()

    def __call__(self, p, x) -> jax.Array:
        if isinstance(self.m, int):
            return x.reshape(-1, self.m).sum(axis=1)
        ids = np.repeat(np.arange(len(self.m)), self.m)
        return jax.ops.segment_sum(x, jnp.asarray(ids), num_segments=len(self.m), indices_are_sorted=True)

