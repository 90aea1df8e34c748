r"""A real-analysis model as a pipeline of stages: templates and reweighted physics on an input axis,
an observable-level response transform, peaks on the observable axis, Poisson likelihood and
constraint terms.

.. math::
    \mu_j = \mathrm{MT}\,M_j\Big[\Big(\sum_c r_c\,t_c + \underbrace{\sum_g r_g\,\big(t^{\rm pub}_g
            + \Delta_g(\varepsilon, \mu_\nu)\big)}_{\text{reweighted physics}}\Big)
            \cdot \mathcal T(\theta)\Big]_j + \mathrm{MT}\,M_j\sum_p \text{peak}_p(j),

* :math:`t_c` fixed templates per unit rate on the input axis (:mod:`nuejax.model.templates`);
* :math:`r_g\,(t^{\rm pub}_g + \Delta_g)`: a solar component with a *published* shape
  :math:`t^{\rm pub}_g` plus the folded difference
  :math:`\Delta_g = [f_g(\varepsilon, \mu_\nu) - f_g(\mathrm{SM})]\otimes K_g` of nuejax's recoil
  spectra through a calibrated response :math:`K_g` (:mod:`nuejax.detector.calibration`), per unit
  of the component's SM rate. At the SM point :math:`\Delta_g = 0` exactly, by construction.
  The folded part is the stages of a physics model (signals and their fold: general path,
  spectra recomputed per call, or its fast path, :func:`~nuejax.model.fast.fast_model`), so the
  paper's reweighting is unchanged underneath; the offsets :math:`t^{\rm pub}_g - f_g(\mathrm{SM})
  \otimes K_g` are templates of the same rate parameters;
* :math:`\mathcal T(\theta)`: a :class:`~nuejax.detector.transforms.ResponseTransform` (energy
  scale, offset, non-linearity, extra resolution) from the input axis to the observable bins;
* peaks (:class:`~nuejax.model.templates.GaussianPeak`) directly on the observable axis;
* :math:`-2\ln L` = Poisson term (paper Eq. logL) + every constraint term (the parameters'
  Gaussian constraints and ``constraints``, :mod:`nuejax.model.constraints`).

:func:`template_model` assembles these stages into a :class:`~nuejax.model.pipeline.Model`
(physics stages → :class:`~nuejax.model.stages.AddTemplates` (offsets) →
:class:`~nuejax.model.stages.AddTemplates` (templates) → transform →
:class:`~nuejax.model.stages.AddPeaks` → :class:`~nuejax.model.stages.Exposure`), so ``grad``,
``hessian``, ``vmap`` and the batched fits of :mod:`nuejax.inference` apply unchanged.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..detector.checks import check_edges
from ..errors import InputError
from .parameters import ParameterSet
from .pipeline import Model
from .stages import AddPeaks, AddTemplates, Exposure

__all__ = ["template_model"]


def _physics_stages(physics: Model, n_in: int) -> tuple:
    """The stages of a physics model on the input axis, without its (unit) exposure and empty templates."""
    if not isinstance(physics, Model):
        raise InputError(f"template model: physics must be a nuejax Model, got {type(physics).__name__}")
    if physics.n_obs != n_in:
        raise InputError(f"template model: the physics model has {physics.n_obs} bins, the input axis {n_in}")
    out = []
    for s in physics.stages:
        if isinstance(s, Exposure):
            if s.exposure != 1.0 or not np.all(np.asarray(s.mask) == 1.0):
                raise InputError("template model: the physics model's exposure must be 1 with no mask (its counts "
                                 "are per unit rate; the template model applies its own exposure)")
            continue
        if isinstance(s, AddTemplates) and not s.names:
            continue
        out.append(s)
    return tuple(out)


def template_model(*, in_edges, obs_edges, templates, template_names, parameters: ParameterSet, exposure: float,
                   physics=None, physics_offset=None, physics_names=(), transform=None, peaks=(), constraints=(),
                   mask=None, shape_variations=None, mc_stat=None, likelihood=None) -> Model:
    """Check and assemble a template analysis (module docstring). ``transform`` None means the
    input axis *is* the observable axis.

    Args:
        in_edges, obs_edges: the input axis (templates, physics) and the observable axis (data).
        templates, template_names: (n, n_in) templates per unit rate and their rate parameters.
        parameters: every parameter a stage or constraint reads.
        exposure: day × 100 t (or the unit the rates need).
        physics: a model of the reweighted physics on the input axis (its stages are spliced in),
            with ``physics_offset`` (n_g, n_in) per unit of the rates ``physics_names``.
        transform: a :class:`~nuejax.detector.transforms.ResponseTransform` from the input to the
            observable axis, or None.
        peaks: Gaussian peaks on the observable axis; constraints: constraint terms; mask: live
            fraction per observable bin.
        shape_variations: an :class:`~nuejax.model.variations.AddShapeVariations` stage of the
            templates (:func:`~nuejax.model.variations.shape_variation_stage`), applied after them.
        mc_stat: a :class:`~nuejax.model.variations.ScaleBins` stage (Barlow–Beeston-lite,
            :func:`~nuejax.model.variations.mc_stat_parameters`), applied to the sum on the input axis.
        likelihood: the likelihood stage (default: binned Poisson on ``obs_edges``; an
            :class:`~nuejax.model.likelihood.UnbinnedPoisson` on ``obs_edges`` for event data).
    Raises:
        InputError: shapes that do not match the axes (names the array), an exposure that is
            not finite and > 0, a transform whose axes differ from ``in_edges``/``obs_edges``.
        ParameterError: a name read by a stage that ``parameters`` lacks (names the stage).
    """
    x = check_edges(in_edges, "template model", "input")
    e = check_edges(obs_edges, "template model", "observable")
    templates = np.asarray(templates, dtype=float)
    if templates.size == 0:
        templates = np.zeros((0, x.size - 1))
    elif templates.ndim == 1:
        templates = templates[None, :]
    if templates.ndim != 2 or templates.shape[1] != x.size - 1:
        raise InputError(f"template model: templates has shape {templates.shape}, expected "
                         f"({len(template_names)}, {x.size - 1}) (one row per template on the input bins)")
    if len(template_names) != templates.shape[0]:
        raise InputError(f"template model: {templates.shape[0]} templates but {len(template_names)} names")
    if transform is None and not np.array_equal(x, e):
        raise InputError("template model: without a transform the input and observable bins must be the same")
    if transform is not None and (np.asarray(transform.in_edges).shape != x.shape
                                  or np.asarray(transform.out_edges).shape != e.shape
                                  or not np.allclose(np.asarray(transform.in_edges), x)
                                  or not np.allclose(np.asarray(transform.out_edges), e)):
        raise InputError("template model: the transform's input/output bins differ from in_edges/obs_edges")
    if not (np.isfinite(exposure) and exposure > 0):
        raise InputError(f"template model: exposure must be finite and > 0 [day x 100 t], got {exposure}")
    n_in = x.size - 1
    dt = jnp.result_type(float)
    stages = []
    if physics is not None:
        stages += _physics_stages(physics, n_in)
        physics_offset = np.asarray(physics_offset, dtype=float)
        if physics_offset.shape != (len(physics_names), n_in):
            raise InputError(f"template model: physics_offset has shape {physics_offset.shape}, expected "
                             f"({len(physics_names)}, {n_in})")
        stages.append(AddTemplates(jnp.asarray(physics_offset, dtype=dt), tuple(physics_names)))
    if template_names:
        stages.append(AddTemplates(jnp.asarray(templates, dtype=dt), tuple(template_names)))
    for extra, what in ((shape_variations, "shape_variations"), (mc_stat, "mc_stat")):
        if extra is None:
            continue
        if not stages:
            raise InputError(f"template model: {what} needs templates to act on")
        width = getattr(extra, "delta_up", None)
        if width is not None and width.shape[-1] != n_in:
            raise InputError(f"template model: {what} has {width.shape[-1]} bins, the input axis {n_in}")
        stages.append(extra)
    if transform is not None:
        stages.append(transform)
    if peaks:
        stages.append(AddPeaks(tuple(peaks), jnp.asarray(e, dtype=dt)))
    mask = np.ones(e.size - 1) if mask is None else np.asarray(mask, dtype=float)
    if mask.shape != (e.size - 1,):
        raise InputError(f"template model: mask has shape {mask.shape}, expected ({e.size - 1},)")
    stages.append(Exposure(jnp.asarray(mask, dtype=dt), float(exposure)))
    if physics is not None:
        for par in physics.parameters.parameters:
            if par.constraint is not None and (par.name not in parameters
                                               or parameters[par.name].constraint != par.constraint):
                raise InputError(f"template model: the physics model constrains {par.name!r} to "
                                 f"{par.constraint[0]:g} ± {par.constraint[1]:g}, the template model's parameter set "
                                 "does not: declare the same constraint there (or none in the physics model)")
    baked = tuple(physics.baked) if physics is not None else ()
    terms = tuple(physics.constraints) if physics is not None else ()
    return Model.create(tuple(stages), parameters, obs_edges=e, constraints=terms + tuple(constraints), baked=baked,
                        likelihood=likelihood)
