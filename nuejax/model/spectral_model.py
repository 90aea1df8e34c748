r"""The expected spectrum (paper Eq. mu_total) and its likelihood, as pure functions of parameters.

.. math::
    \mu_j = \mathrm{MT}\, M_j\Big[\sum_{k\in\rm signals} a_k \sum_i G^{(k)}_{ij}
            f_T^{(k)}(T_i; \varepsilon, \theta_{osc}) + \sum_{b\in\rm bkg} \text{rate}_b\, t_b(j)\Big]

with the reweighting kernel :math:`G^{(k)}` of :mod:`nuejax.reweighting` (which is paper Eqs. Rij,
fT_norm, reweight_factor and fNp_reweight multiplied by the component's rate), the recoil spectra
:math:`f_T^{(k)}` recomputed at the recoil-bin centres for every parameter point (NSI, magnetic
moment and the oscillation parameters enter there; the cross section on the fixed quadrature
nodes is precomputed, :mod:`nuejax.physics.precomputed`), flux normalisations :math:`a_k` (1 = the
B16 prediction) and background templates :math:`t_b` with rates in counts/(day·100 t). Exposure
MT in day·100 t.

A :class:`SpectralModel` is a PyTree; :func:`expected` and :func:`nll` are pure and jit-compiled,
``vmap`` over a batch of parameter dicts evaluates a grid in one launch, and ``jax.grad`` /
``jax.hessian`` give exact derivatives.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from ..physics.cross_section import MU_NU_UNIT, NewPhysics  # noqa: F401 (MU_NU_UNIT re-exported)
from ..physics.oscillation import GAUSS_RULE_SIN2_THETA12, PRODUCTION_NODES, OscillationParams
from ..physics.precomputed import PrecomputedSpectrum, group_recoil_spectra, group_spectra
from ..physics.spectra import SolarSource, recoil_spectrum
from ..detector.kernel_blocks import KernelBlocks, use_blocks
from ..errors import ParameterError
from .checks import check_data, check_params, is_traced
from .likelihood import check_counts, check_expected, poisson_nll, poisson_draw, poisson_parts
from .parameters import ParameterSet

__all__ = ["SignalComponent", "SpectralModel", "expected", "nll", "signal_spectra", "physics_from_params", "osc_from_params",
           "production_nodes"]

#: mu_nu parameters are in units of MU_NU_UNIT = 1e-11 Bohr magnetons, like NewPhysics.mu_nu;
#: Delta m^2_21 in units of 1e-5 eV^2.
DM2_UNIT = 1e-5


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SignalComponent:
    """One reweighted solar spectrum: its source, recoil-bin centres, fixed kernel G (n_T, n_obs)
    and the cross-section coefficients at its quadrature nodes (:mod:`nuejax.physics.precomputed`)."""

    source: SolarSource
    t_mid: jax.Array
    kernel: jax.Array
    pre: PrecomputedSpectrum
    name: str = field(metadata=dict(static=True))
    norm: str = field(metadata=dict(static=True))


class _Signals(tuple):
    """A tuple of signal components that hashes and compares by identity, so that it can be
    static metadata of a jitted model (arrays are not hashable)."""

    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other


class ModelMethods:
    """Conveniences shared by every model class that defines ``parameters``, ``n_obs``-sized
    ``expected(params)`` and ``nll(params, data)``.

    The methods ``expected`` and ``nll`` are the checked front door: called eagerly they validate
    the parameter mapping (unknown names with the closest valid one, missing, NaN or out-of-bound
    values) and the data (shape, finite, >= 0) and raise :class:`~nuejax.errors.InputError`;
    inside ``jit``/``vmap``/``grad`` (traced values) they check nothing, so compiled code pays
    nothing.
    """

    def defaults(self) -> dict:
        return self.parameters.defaults()

    def with_parameters(self, parameters: ParameterSet):
        """The same model with a different parameter description (e.g. after ``fix``/``release``)."""
        if not isinstance(parameters, ParameterSet):
            raise ParameterError(f"with_parameters takes a ParameterSet, got {type(parameters).__name__}")
        missing = set(self.parameters.names) - set(parameters.names)
        if missing:
            raise ParameterError(f"parameter set lacks {sorted(missing)}")
        extra = set(parameters.names) - set(self.parameters.names)
        if extra:
            raise ParameterError(f"parameter set has parameter(s) {sorted(extra)} that the model does not read")
        return dataclasses.replace(self, parameters=parameters)

    def _check_call(self, params, data=None) -> None:
        check_params(self.parameters, params)
        if data is not None and not is_traced(data):
            n = np.asarray(data) if not hasattr(data, "axes") else data
            check_data(n, self.n_obs, batch=np.ndim(n) == 2, warn_non_integer=False)

    def asimov(self, params=None) -> jax.Array:
        """Asimov data set: the expected spectrum at ``params`` (default: the defaults)."""
        return self.expected(self.defaults() if params is None else params)

    def pseudo_data(self, key, params=None, n_toys: int | None = None) -> jax.Array:
        """Poisson pseudo-data from ``params``: shape (n_obs,) or (n_toys, n_obs)."""
        mu = self.asimov(params)
        shape = mu.shape if n_toys is None else (n_toys,) + mu.shape
        return poisson_draw(key, mu, shape, parts=poisson_parts(np.max(np.asarray(mu), initial=0.0)))


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SpectralModel(ModelMethods):
    """Fixed tensors of a binned ν–e spectral model plus its static parameter description."""

    #: The signal components (static, compared by identity): a call uses only the stacked
    #: ``groups`` and ``kernels`` below, so the per-signal arrays are not passed to compiled
    #: functions on every call (on a GPU each argument array costs dispatch time).
    signals: tuple = field(metadata=dict(static=True))
    templates: jax.Array  # (n_bkg, n_obs), fraction of decays per bin
    mask: jax.Array  # (n_obs,) live-time mask M_j
    obs_edges: jax.Array  # (n_obs + 1,)
    exposure: float = field(metadata=dict(static=True))  # day x 100 t
    background_names: tuple = field(metadata=dict(static=True))
    parameters: ParameterSet = field(metadata=dict(static=True))
    radiative: bool = field(metadata=dict(static=True), default=True)
    n_quad: int = field(metadata=dict(static=True), default=48)
    #: Derived at construction (leave unset): the signals' spectra stacked into groups of equal
    #: shapes, the positions of each group's members, and the kernels stacked (n_sig, n_T, n_obs)
    #: (a tuple if their shapes differ), so that a call makes one vectorised pass per group and
    #: one fold, not one per signal.
    groups: tuple = ()
    group_members: tuple = field(metadata=dict(static=True), default=())
    kernels: jax.Array | tuple | None = None
    #: Derived too: the kernels cut into blocks that cover their nonzero entries, the fold's
    #: route where the kernels live on a CPU device (:mod:`nuejax.detector.kernel_blocks`);
    #: None elsewhere (one dense product). Derived fields are cut from the signals: replace the
    #: signals with ``groups=(), group_members=(), kernels=None, kernel_blocks=None`` so that
    #: they are derived again (as ``with_parameters`` does), never ``kernels`` alone.
    kernel_blocks: KernelBlocks | None = None
    #: The general case (:mod:`nuejax.model.flavour`): its static options (None: the
    #: flavour-diagonal model of the paper), the per-signal tensors of the trace form and the
    #: Earth exposure of a night or yearly-average model.
    flavour: object = field(metadata=dict(static=True), default=None)
    state_nodes: tuple = ()
    earth: object = None

    def __post_init__(self):
        if not isinstance(self.signals, _Signals):
            object.__setattr__(self, "signals", _Signals(self.signals))
        if self.signals and not self.groups:
            groups, members = group_spectra([s.source for s in self.signals], [s.pre for s in self.signals],
                                            production_nodes=production_nodes(self.parameters))
            object.__setattr__(self, "groups", groups)
            object.__setattr__(self, "group_members", members)
            kernels = [s.kernel for s in self.signals]
            same = len({k.shape for k in kernels}) == 1
            object.__setattr__(self, "kernels", jnp.stack(kernels) if same else tuple(kernels))
            object.__setattr__(self, "kernel_blocks",
                               KernelBlocks.from_kernels(kernels) if use_blocks(kernels) else None)

    @property
    def n_obs(self) -> int:
        return int(self.obs_edges.shape[0] - 1)

    def with_parameters(self, parameters: ParameterSet):
        """The same model with a different parameter description; its spectrum groups are rebuilt
        (stacking only) when the new ``sin2_theta12`` bounds change the production-zone rule
        (:func:`production_nodes`)."""
        m = super().with_parameters(parameters)
        if self.signals and production_nodes(parameters) != production_nodes(self.parameters):
            m = dataclasses.replace(m, groups=(), group_members=(), kernels=None, kernel_blocks=None)
        return m

    @property
    def signal_names(self) -> tuple:
        return tuple(s.name for s in self.signals)

    @property
    def linear_parameters(self) -> tuple:
        """The parameters in which the expectation is jointly affine, the signal normalisations
        and background rates: :func:`~nuejax.inference.fitting.value_grad_hessian` builds the
        exact Hessian from this structure."""
        return tuple(dict.fromkeys(tuple(s.norm for s in self.signals)
                                   + tuple("rate_" + b for b in self.background_names)))

    def constraint_nll(self, params) -> jax.Array:
        """The terms of -2 ln L besides the Poisson term: ``nll = poisson_nll(expected) + constraint_nll``."""
        return self.parameters.pulls(params)

    def expected(self, params) -> jax.Array:
        """Expected counts per observable bin (paper Eq. mu_total); checked front door (class docstring)."""
        self._check_call(params)
        return expected(self, params)

    def nll(self, params, data) -> jax.Array:
        """-2 ln L (paper Eq. logL); checked front door (class docstring)."""
        self._check_call(params, data)
        return nll(self, params, data)

    def check(self, params, data) -> None:
        """Eager validation: parameters in bounds, data valid, expectation > 0 wherever data > 0."""
        self.parameters.check(params)
        n = check_counts(data)
        if n.shape != (self.n_obs,):
            raise ValueError(f"data has shape {n.shape}, the model has {self.n_obs} observable bins")
        check_expected(expected(self, params), n, np.asarray(self.obs_edges))


def production_nodes(parameters: ParameterSet) -> int | None:
    """How a model averages P_ee over the production zones: the Gauss rule of
    :data:`~nuejax.physics.oscillation.PRODUCTION_NODES` nodes
    (:func:`~nuejax.physics.oscillation.production_quadrature`, equal to the zone sum to 5e-15)
    when every ``sin2_theta12`` the parameter set allows lies in the range where that is verified,
    :data:`~nuejax.physics.oscillation.GAUSS_RULE_SIN2_THETA12`; else ``None``: every zone."""
    lo, hi = GAUSS_RULE_SIN2_THETA12
    if "sin2_theta12" in parameters:
        p = parameters["sin2_theta12"]
        inside = lo <= p.lower and p.upper <= hi  # the value lies within its bounds (Parameter checks)
    else:
        inside = lo <= OscillationParams().sin2_theta12 <= hi
    return PRODUCTION_NODES if inside else None


def physics_from_params(p) -> NewPhysics:
    """NSI couplings ``eps_<flavour>_<L|R>`` and ``mu_nu`` (units of 1e-11 μ_B) -> :class:`NewPhysics`."""
    zero = jnp.zeros(())
    g = lambda k: p.get(k, zero)  # noqa: E731
    return NewPhysics(
        eps_L=jnp.stack([g("eps_ee_L"), g("eps_mumu_L"), g("eps_tautau_L")]),
        eps_R=jnp.stack([g("eps_ee_R"), g("eps_mumu_R"), g("eps_tautau_R")]),
        mu_nu=g("mu_nu"),
    )


def osc_from_params(p) -> OscillationParams:
    """Oscillation parameters from the dict (``dm2_21`` in 1e-5 eV^2); absent ones take NuFIT 6.0 values."""
    d = OscillationParams()
    return OscillationParams(
        sin2_theta12=p.get("sin2_theta12", d.sin2_theta12),
        sin2_theta13=p.get("sin2_theta13", d.sin2_theta13),
        dm2_21=p["dm2_21"] * DM2_UNIT if "dm2_21" in p else d.dm2_21,
        sin2_theta23=p.get("sin2_theta23", d.sin2_theta23),
        delta_cp=p.get("delta_cp", d.delta_cp),
    )


def signal_spectra(model: SpectralModel, params) -> list:
    """Recoil spectra f_T of all signals at ``params`` in σ0 units, a list in signal order
    (one vectorised evaluation per group of equally shaped spectra; a general-case model:
    :func:`~nuejax.model.flavour.general_signal_spectra`)."""
    if getattr(model, "flavour", None) is not None:  # FloatingResponseModel has no general case
        from .flavour import general_signal_spectra

        return general_signal_spectra(model, params)
    phys = physics_from_params(params)
    osc = osc_from_params(params)
    out = [None] * len(model.signals)
    for group, members in zip(model.groups, model.group_members):
        f = group_recoil_spectra(group, phys, osc)
        for j, i in enumerate(members):
            out[i] = f[j]
    return out


@jax.jit
def expected(model: SpectralModel, params) -> jax.Array:
    """Expected counts per observable bin, paper Eq. (mu_total)."""
    f = signal_spectra(model, params)
    total = jnp.zeros(model.n_obs, dtype=model.templates.dtype)
    if model.kernel_blocks is not None:  # the CPU route: only the blocks holding nonzero entries
        total = total + model.kernel_blocks.fold([params[s.norm] * fk for s, fk in zip(model.signals, f)])
    elif isinstance(model.kernels, tuple):  # kernels of different shapes: fold one by one
        total = total + sum(params[s.norm] * (fk @ k) for s, fk, k in zip(model.signals, f, model.kernels))
    elif model.kernels is not None:  # one matrix-vector product over all signals; flat: no transpose
        a = jnp.stack([params[s.norm] for s in model.signals])
        total = total + (a[:, None] * jnp.stack(f)).reshape(-1) @ model.kernels.reshape(-1, model.kernels.shape[-1])
    if model.background_names:
        rates = jnp.stack([params["rate_" + b] for b in model.background_names])
        total = total + rates @ model.templates
    return model.exposure * model.mask * total


def expected_direct(model: SpectralModel, params) -> jax.Array:
    """:func:`expected` with the recoil spectra computed from scratch by
    :func:`~nuejax.physics.recoil_spectrum` (the reference the precomputed route is tested against;
    a general-case model: :func:`~nuejax.physics.spectra.recoil_spectrum_general`)."""
    osc = osc_from_params(params)
    if model.flavour is not None:
        from ..physics.spectra import recoil_spectrum_general
        from .flavour import general_physics_from_params

        gen = general_physics_from_params(params)
        spectrum = lambda s, t: recoil_spectrum_general(  # noqa: E731
            s, t, gen, osc, propagation=model.flavour.propagation, exposure=model.earth, period=model.flavour.period,
            radiative=model.radiative, n_quad=model.n_quad, in_sigma0_units=True)
    else:
        phys = physics_from_params(params)
        spectrum = lambda s, t: recoil_spectrum(s, t, phys, osc, radiative=model.radiative,  # noqa: E731
                                             n_quad=model.n_quad, in_sigma0_units=True)
    total = jnp.zeros(model.n_obs, dtype=model.templates.dtype)
    for sig in model.signals:
        f = spectrum(sig.source, sig.t_mid)
        total = total + params[sig.norm] * (f @ sig.kernel)
    if model.background_names:
        total = total + jnp.stack([params["rate_" + b] for b in model.background_names]) @ model.templates
    return model.exposure * model.mask * total


@jax.jit
def nll(model: SpectralModel, params, data) -> jax.Array:
    """-2 ln L (paper Eq. logL): Poisson term plus Gaussian pulls of the constrained parameters."""
    return poisson_nll(expected(model, params), data) + model.parameters.pulls(params)
