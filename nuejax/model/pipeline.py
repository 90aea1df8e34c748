r"""A model is a pipeline of stages (paper Eq. mu_total, generalised).

.. code-block:: text

    params ──► signals ──► fold ──► observable transforms ──► + templates ──► + peaks ──► × exposure ──► μ
               (recoil     (2-D kernels,  (energy scale,         (backgrounds,  (Gaussian    (mask)
               spectra)    floating       offset, resolution)    published      lines)
                           response)                             shapes)
    −2 ln L = likelihood(μ, data) + Σ_k C_k(params; aux_k)

:class:`Model` holds a tuple of stages, each a small frozen PyTree with ``__call__(p, x) -> x``
(the first gets ``x = None``), a likelihood stage, its parameter set and constraint terms; its
``expected`` runs the stages in order and ``nll`` is the protocol's
(:class:`~nuejax.model.protocol.AbstractModel`). The stages:

* signals (:mod:`~nuejax.model.signals`): :class:`~nuejax.model.signals.SolarSignals` (general
  evaluation), :class:`~nuejax.model.signals.PolynomialSignals` (fast evaluation),
  :class:`~nuejax.model.signals.FoldedPolynomial` (fast evaluation with a fixed fold multiplied out);
* folds (:mod:`~nuejax.model.folds`): :class:`~nuejax.model.folds.KernelFold` (fixed 2-D kernels),
  :class:`~nuejax.model.folds.FloatingFold` (floating analytic response);
* observable transforms: :class:`~nuejax.detector.transforms.ResponseTransform`;
* :class:`~nuejax.model.stages.AddTemplates`, :class:`~nuejax.model.stages.AddPeaks`,
  :class:`~nuejax.model.stages.Exposure` (:mod:`~nuejax.model.stages`).

The builders assemble the configurations: :func:`~nuejax.model.borexino_like_model` (signals →
kernel fold → backgrounds → exposure), :func:`~nuejax.model.fast_model` (the same with the
fast evaluation), :func:`~nuejax.model.floating_response_model` (signals → floating fold →
backgrounds → transform → exposure), :func:`~nuejax.model.template_model` (a template analysis
such as :func:`~nuejax.analyses.borexino.borexino_phase3_model`); :meth:`Model.create` takes any
other combination and checks it once.

:func:`expected` and :func:`~nuejax.model.protocol.nll` are jitted with the model as an argument,
so ``jax.grad``, ``jax.hessian`` and ``jax.vmap`` over parameter dicts compose.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .._internal.pytree import static_field
from ..detector.checks import check_edges
from ..errors import InputError, ParameterError
from .constraints import check_constraints
from .likelihood import BinnedPoisson
from .parameters import ParameterSet
from .protocol import AbstractModel
from .signals import SolarSignals

__all__ = ["Model", "expected", "expected_direct", "components", "stage_reads"]



def stage_reads(stage) -> tuple:
    """The parameter names a stage reads (its ``reads``, or a transform's ``parameter_names``)."""
    reads = getattr(stage, "reads", None)
    if reads is None:
        reads = getattr(stage, "parameter_names", ())
    return tuple(reads)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Model(AbstractModel):
    """A model as a pipeline of stages (module docstring). Build with :meth:`create` or a builder."""

    stages: tuple
    likelihood: BinnedPoisson  # or UnbinnedPoisson
    constraints: tuple = ()
    parameters: ParameterSet = static_field(default=None)
    baked: tuple = static_field(default=())

    @classmethod
    def create(cls, stages, parameters: ParameterSet, *, obs_edges, constraints=(), baked=(),
               check_shape: bool = True, likelihood=None) -> "Model":
        """Check and assemble a model.

        Args:
            stages: the stages in order (the first is called with ``x = None``).
            parameters: every parameter a stage or constraint reads (baked ones excepted).
            obs_edges: the bins of the expectation (the data's).
            constraints: constraint terms beyond the parameters' own Gaussian constraints.
            baked: the :class:`~nuejax.model.parameters.Parameter` s fixed into the stages' tensors
                (their values the baked ones; their constraints stay terms of the model).
            check_shape: evaluate the shapes once (``jax.eval_shape``, nothing computed) and
                check that the last stage returns one count per bin of ``obs_edges``.
            likelihood: the likelihood stage (default: :class:`~nuejax.model.likelihood.BinnedPoisson`
                on ``obs_edges``; or :class:`~nuejax.model.likelihood.UnbinnedPoisson` on the same edges).
        Raises:
            ParameterError: a name read by a stage that ``parameters`` lacks (names the stage),
                a baked name that is also a parameter.
            InputError: bad ``obs_edges``; a constraint on an unknown name or constrained
                twice; an expectation whose shape is not (n_obs,).
        """
        if not isinstance(parameters, ParameterSet):
            raise ParameterError(f"Model.create takes a ParameterSet, got {type(parameters).__name__}")
        edges = check_edges(obs_edges, "model", "observable")
        stages = tuple(stages)
        if not stages:
            raise InputError("a model needs at least one stage")
        baked = tuple(ParameterSet(tuple(baked)).parameters)
        both = sorted({p.name for p in baked} & set(parameters.names))
        if both:
            raise ParameterError(f"parameter(s) {both} are both baked into the model and parameters of it")
        for i, stage in enumerate(stages):
            for n in stage_reads(stage):
                if n not in parameters.names:
                    raise ParameterError(f"model: stage {i} ({type(stage).__name__}) reads parameter {n!r}, which the "
                                         "parameter set lacks")
        check_constraints(tuple(constraints), ParameterSet(parameters.parameters + baked))
        dt = jnp.result_type(float)
        if likelihood is None:
            likelihood = BinnedPoisson(jnp.asarray(edges, dtype=dt))
        elif likelihood.obs_edges is None or not np.array_equal(np.asarray(likelihood.obs_edges), edges):
            raise InputError("model: the likelihood stage's bins differ from obs_edges")
        model = cls(stages, likelihood, tuple(constraints), parameters, baked)
        if check_shape:
            shape = jax.eval_shape(lambda m, p: expected(m, p), model, parameters.defaults()).shape
            if shape != (edges.size - 1,):
                raise InputError(f"model: the stages give an expectation of shape {shape}, the bins {edges.size - 1} "
                                 "counts (check each stage's input and output bins)")
        return model

    # -- what the stages are ---------------------------------------------------------------------
    @property
    def obs_edges(self) -> jax.Array:
        return self.likelihood.obs_edges

    @property
    def n_obs(self) -> int:
        return int(self.likelihood.obs_edges.shape[0] - 1)

    def stage(self, kind):
        """The first stage of type ``kind`` (a class or a tuple of classes), or None."""
        return next((s for s in self.stages if isinstance(s, kind)), None)

    @property
    def signals(self) -> tuple:
        """The signal components of the general signal stage (empty where there is none)."""
        st = self.stage(SolarSignals)
        return tuple(st.signals) if st is not None else ()

    @property
    def signal_names(self) -> tuple:
        return tuple(s.name for s in self.signals)

    @property
    def linear_parameters(self) -> tuple:
        """The parameters in which the expectation is jointly affine: declared ``linear_names`` of a
        stage that no other stage reads otherwise (every stage after them is linear in its
        input); :func:`~nuejax.inference.fitting.value_grad_hessian` builds the exact Hessian
        from this structure."""
        linear, nonlinear = [], set()
        for stage in self.stages:
            lin = tuple(getattr(stage, "linear_names", ()))
            linear += [n for n in lin if n not in linear]
            nonlinear |= set(stage_reads(stage)) - set(lin)
        return tuple(n for n in linear if n not in nonlinear)

    @property
    def component_names(self) -> tuple:
        """The parameters that each scale one component of the spectrum (flux normalisations,
        template rates, peak rates): :func:`components` splits the expectation by them."""
        out = []
        for stage in self.stages:
            out += [n for n in getattr(stage, "component_names", ()) if n not in out]
        return tuple(out)

    def replace_stage(self, old, new) -> "Model":
        """The same model with stage ``old`` (the object) replaced by ``new`` (a stage or a tuple of stages)."""
        new = new if isinstance(new, tuple) else (new,)
        i = next(k for k, s in enumerate(self.stages) if s is old)
        return dataclasses.replace(self, stages=self.stages[:i] + new + self.stages[i + 1:])

    # -- the protocol ----------------------------------------------------------------------------
    def expected(self, params) -> jax.Array:
        """Expected counts per bin (the stages in order); checked front door when called eagerly."""
        self._check_call(params)
        return expected(self, params)

    def with_parameters(self, parameters: ParameterSet) -> "Model":
        """The same model with a different parameter description (same names); stages that derive
        tensors from the bounds (production zones, the floating fold's grid) derive them again."""
        m = super().with_parameters(parameters)
        stages = tuple(s.with_parameters(parameters) if hasattr(s, "with_parameters") else s for s in self.stages)
        return dataclasses.replace(m, stages=stages)

    def components(self, params) -> dict:
        """Expected counts of every component (:func:`components`)."""
        self._check_call(params)
        return components(self, params)


def _run(stages, params):
    x = None
    for stage in stages:
        x = stage(params, x)
    return x


@jax.jit
def expected(model: Model, params) -> jax.Array:
    """Expected counts per bin: the model's stages applied in order (paper Eq. mu_total)."""
    return _run(model.stages, params)


def expected_direct(model: Model, params) -> jax.Array:
    """:func:`expected` with the general signal stage's spectra computed from scratch
    (:meth:`~nuejax.model.signals.SolarSignals.direct`): the reference of the precomputed route."""
    st = model.stage(SolarSignals)
    if st is None:
        raise InputError("expected_direct needs a model with a general signal stage (SolarSignals)")
    i = model.stages.index(st)
    x = st.direct(params)
    for stage in model.stages[i + 1:]:
        x = stage(params, x)
    return x


def components(model: Model, params) -> dict:
    """Expected counts per bin of every component (for plots): ``{name: (n_obs,) numpy}``, one
    per name of :attr:`Model.component_names`, each the expectation with every other component's
    scale set to 0 (the components add up to :func:`expected`)."""
    names = model.component_names
    out = {}
    for n in names:
        q = {**params, **{m: jnp.zeros_like(jnp.asarray(params[m])) for m in names if m != n}}
        out[n] = np.asarray(expected(model, q))
    return out
