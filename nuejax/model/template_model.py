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
  The folded part is an inner :class:`~nuejax.model.SpectralModel` (general path: spectra
  recomputed per call) or :class:`~nuejax.model.fast.FastModel` (fast path: folded basis
  templates), so the paper's reweighting is unchanged underneath;
* :math:`\mathcal T(\theta)`: a :class:`~nuejax.detector.transforms.ResponseTransform` (energy
  scale, offset, non-linearity, extra resolution) from the input axis to the observable bins;
* peaks (:class:`~nuejax.model.templates.GaussianPeak`) directly on the observable axis;
* :math:`-2\ln L` = Poisson term (paper Eq. logL) + Gaussian pulls of the parameter set +
  every constraint term (:mod:`nuejax.model.constraints`).

Every stage is a pure function of the parameter dict; :func:`template_expected` and
:func:`template_nll` are jitted, so ``grad``, ``hessian``, ``vmap`` and the batched fits of
:mod:`nuejax.inference` apply unchanged.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from ..detector.checks import check_edges
from ..errors import InputError, ParameterError
from .constraints import check_constraints, constraint_total
from .fast import FastModel, fast_expected
from .likelihood import poisson_nll
from .parameters import ParameterSet
from .spectral_model import ModelMethods, SpectralModel
from .spectral_model import expected as spectral_expected

__all__ = ["TemplateModel", "template_expected", "template_nll", "template_components"]


def _static(**kw):
    return field(metadata=dict(static=True), **kw)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class TemplateModel(ModelMethods):
    """Fixed tensors and stages of a template analysis (module docstring).

    Build with :meth:`create` (it checks shapes and that every name a stage reads is a parameter),
    or with an analysis builder such as :func:`nuejax.analyses.borexino.borexino_phase3_model`.
    """

    in_edges: jax.Array  # (n_in + 1,)
    obs_edges: jax.Array  # (n_obs + 1,)
    templates: jax.Array  # (n_t, n_in) per unit rate, counts/(day 100 t) per bin
    mask: jax.Array  # (n_obs,)
    physics: SpectralModel | FastModel | None
    physics_offset: jax.Array  # (n_g, n_in): t_pub - folded SM, per unit rate
    transform: object  # ResponseTransform or None
    peaks: tuple
    constraints: tuple
    template_names: tuple = _static()
    physics_names: tuple = _static()
    exposure: float = _static(default=1.0)
    parameters: ParameterSet = _static(default=None)

    @classmethod
    def create(cls, *, in_edges, obs_edges, templates, template_names, parameters: ParameterSet, exposure: float,
               physics=None, physics_offset=None, physics_names=(), transform=None, peaks=(), constraints=(),
               mask=None) -> "TemplateModel":
        """Check and assemble. ``transform`` None means the input axis *is* the observable axis.

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
        if physics is not None:
            if physics.n_obs != n_in:
                raise InputError(f"template model: the physics model has {physics.n_obs} bins, the input axis {n_in}")
            physics_offset = np.asarray(physics_offset, dtype=float)
            if physics_offset.shape != (len(physics_names), n_in):
                raise InputError(f"template model: physics_offset has shape {physics_offset.shape}, expected "
                                 f"({len(physics_names)}, {n_in})")
        else:
            physics_offset = np.zeros((0, n_in))
        mask = np.ones(e.size - 1) if mask is None else np.asarray(mask, dtype=float)
        if mask.shape != (e.size - 1,):
            raise InputError(f"template model: mask has shape {mask.shape}, expected ({e.size - 1},)")
        reads = {"templates": tuple(template_names), "reweighted physics": tuple(physics_names)}
        if transform is not None:
            reads["response transform"] = transform.parameter_names
        for k, pk in enumerate(peaks):
            reads[f"peak {k}"] = pk.names
        for stage, names in reads.items():
            for n in names:
                if n not in parameters.names:
                    raise ParameterError(f"template model: {stage} reads parameter {n!r}, which the parameter set "
                                         "lacks")
        check_constraints(tuple(constraints), parameters)
        dt = jnp.result_type(float)
        return cls(jnp.asarray(x, dtype=dt), jnp.asarray(e, dtype=dt), jnp.asarray(templates, dtype=dt),
                   jnp.asarray(mask, dtype=dt), physics, jnp.asarray(physics_offset, dtype=dt), transform,
                   tuple(peaks), tuple(constraints), tuple(template_names), tuple(physics_names), float(exposure),
                   parameters)

    @property
    def n_obs(self) -> int:
        return int(self.obs_edges.shape[0] - 1)

    @property
    def fast(self) -> bool:
        """Whether the reweighted physics runs on the fast path (folded basis templates)."""
        return isinstance(self.physics, FastModel)

    def expected(self, params) -> jax.Array:
        """Expected counts per observable bin; checked front door (see ModelMethods)."""
        self._check_call(params)
        return template_expected(self, params)

    def nll(self, params, data) -> jax.Array:
        """-2 ln L: Poisson + pulls + constraint terms; checked front door."""
        self._check_call(params, data)
        return template_nll(self, params, data)

    def components(self, params) -> dict:
        """Expected counts per observable bin of every rate parameter's component and peak (numpy)."""
        self._check_call(params)
        return template_components(self, params)

    def with_physics(self, physics) -> "TemplateModel":
        """The same model with another inner physics model (e.g. its fast path)."""
        return dataclasses.replace(self, physics=physics)


def _input_spectrum(model: TemplateModel, p, only: str | None = None):
    """Counts per (day 100 t) on the input axis, optionally of one rate parameter's component."""
    x = jnp.zeros(model.in_edges.shape[0] - 1, dtype=model.templates.dtype)
    for k, n in enumerate(model.template_names):
        if only is None or n == only:
            x = x + p[n] * model.templates[k]
    if model.physics is not None:
        names = model.physics_names if only is None else tuple(n for n in model.physics_names if n == only)
        if names:
            q = p if only is None else {**p, **{n: jnp.zeros_like(p[n]) for n in model.physics_names if n != only}}
            inner = fast_expected(model.physics, q) if isinstance(model.physics, FastModel) \
                else spectral_expected(model.physics, q)
            rates = jnp.stack([q[n] for n in model.physics_names])
            x = x + inner + rates @ model.physics_offset
    return x


def _observed(model: TemplateModel, p, x):
    return x if model.transform is None else model.transform(p, x)


@jax.jit
def template_expected(model: TemplateModel, p) -> jax.Array:
    """Expected counts per observable bin (module docstring)."""
    mu = _observed(model, p, _input_spectrum(model, p))
    for peak in model.peaks:
        mu = mu + peak(p, model.obs_edges)
    return model.exposure * model.mask * mu


@jax.jit
def template_nll(model: TemplateModel, p, data) -> jax.Array:
    """-2 ln L = Poisson (paper Eq. logL) + Gaussian pulls + constraint terms."""
    return (poisson_nll(template_expected(model, p), data) + model.parameters.pulls(p)
            + constraint_total(model.constraints, p))


def template_components(model: TemplateModel, p) -> dict:
    """Per-component expected counts (for plots): ``{rate parameter or 'peak k': (n_obs,)}``."""
    out = {}
    scale = model.exposure * model.mask
    for n in dict.fromkeys(model.template_names + model.physics_names):
        out[n] = np.asarray(scale * _observed(model, p, _input_spectrum(model, p, only=n)))
    for k, peak in enumerate(model.peaks):
        out[peak.names[0]] = np.asarray(scale * peak(p, model.obs_edges))
    return out
