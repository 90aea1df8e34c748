r"""Signal stages: the recoil spectra of the solar components, the first stage of a model.

Every signal stage evaluates the same physics, the recoil spectrum :math:`f_T^{(k)}(T_i)` of each
reweighted solar component at its recoil-bin centres in σ0 units (paper Eq. fT; the reweighting of
Eqs. reweight_factor, fNp_reweight happens in the fold that follows), and differs only in how:

* :class:`SolarSignals` -- the general evaluation: the cross section precomputed on the fixed
  quadrature nodes (:mod:`nuejax.physics.precomputed`) and the oscillation probabilities
  recomputed from the parameters in every call; with ``flavour`` set, the general case of
  :mod:`nuejax.model.flavour` (general NSI, NSI in propagation, mediators, day and night) through
  the trace form of :func:`~nuejax.physics.general_nsi.trace_form`. :meth:`SolarSignals.direct`
  is the reference the precomputed route is tested against: :func:`~nuejax.physics.recoil_spectrum`
  from scratch.
* :class:`PolynomialSignals` -- the fast evaluation at fixed oscillations (and mediator masses):
  the spectrum is a quadratic polynomial in the new-physics couplings,
  :math:`f^{(k)} = \sum_b c_b(\theta)\,B_{kb}`, with the basis :math:`B` extracted once from the
  general evaluation (:mod:`nuejax.model.fast`).
* :class:`FoldedPolynomial` -- the fast evaluation when the fold that follows is a fixed linear
  map (2-D kernels): the basis is folded once, so a call costs
  :math:`\sum_k a_k \sum_b c_b F_{kb}(j)`; this stage replaces signals *and* fold.

A signal stage is the first stage: it reads the parameter dict and returns, per signal, its
spectrum (a list of (n_T_k,) arrays, or one stacked (n_sig, n_T) array); the flux normalisations
:math:`a_k` are applied by the fold. The parameter names it reads are those of
:mod:`nuejax.model.physics_params`.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .._internal.build_jit import build_jit
from ..errors import InputError
from .._internal.pytree import static_field
from ..physics.general_nsi import GeneralPhysics  # noqa: F401 (named in docstrings)
from ..physics.precomputed import PrecomputedSpectrum, group_recoil_spectra, group_spectra, nsi_coefficients
from ..physics.spectra import SolarSource, recoil_spectrum, recoil_spectrum_general
from .flavour import FlavourOptions, general_signal_spectra
from .folds import NormalisedSignals
from .parameters import ParameterSet
from .physics_params import general_physics_from_params, osc_from_params, physics_from_params, production_nodes

__all__ = ["SignalComponent", "SolarSignals", "PolynomialSignals", "FoldedPolynomial", "MediatorSignals", "basis_coefficients",
           "polynomial_coefficients", "N_BASIS"]

#: Templates of the flavour-diagonal fast path: 1 + 5 per flavour (ε_L, ε_R, ε_L², ε_R², ε_L ε_R) + μ_ν².
N_BASIS = 1 + 5 * 3 + 1



@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SignalComponent:
    """One reweighted solar spectrum: its source, recoil-bin centres, fixed kernel G (n_T, n_obs)
    and the cross-section coefficients at its quadrature nodes (:mod:`nuejax.physics.precomputed`)."""

    source: SolarSource
    t_mid: jax.Array
    kernel: jax.Array
    pre: PrecomputedSpectrum
    name: str = static_field()
    norm: str = static_field()


class IdentityTuple(tuple):
    """A tuple that hashes and compares by identity, so that it can be static metadata of a
    jitted model (arrays are not hashable): the signal components of a stage."""

    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SolarSignals:
    """The general evaluation of the signals' recoil spectra (module docstring).

    ``groups`` (dynamic): the spectra stacked into groups of equal shapes
    (:func:`~nuejax.physics.precomputed.group_spectra`), one vectorised evaluation per group;
    ``group_members`` (static) their positions. ``signals`` (static, compared by identity): the
    components, read where the general case or the reference path needs them. General case:
    ``flavour`` (static options), ``state_nodes`` and ``earth`` (the Earth exposure of a night or
    yearly-average model). Build with :meth:`create`.
    """

    groups: tuple
    state_nodes: tuple
    earth: object
    signals: tuple = static_field()
    group_members: tuple = static_field()
    flavour: FlavourOptions | None = static_field(default=None)
    radiative: bool = static_field(default=True)
    n_quad: int = static_field(default=48)
    #: the production-zone rule the groups were stacked with (:func:`~nuejax.model.physics_params.production_nodes`)
    zone_rule: int | None = static_field(default=None)

    @classmethod
    def create(cls, signals, parameters: ParameterSet, *, radiative: bool = True, n_quad: int = 48,
               flavour: FlavourOptions | None = None, state_nodes=(), earth=None) -> "SolarSignals":
        """Stack ``signals`` (a sequence of :class:`SignalComponent`) into groups, averaging the
        production zones as ``parameters`` allow (:func:`~nuejax.model.physics_params.production_nodes`)."""
        signals = IdentityTuple(signals)
        rule = production_nodes(parameters)
        groups, members = group_spectra([s.source for s in signals], [s.pre for s in signals], production_nodes=rule)
        return cls(groups, tuple(state_nodes), earth, signals, members, flavour, bool(radiative), int(n_quad), rule)

    @property
    def names(self) -> tuple:
        return tuple(s.name for s in self.signals)

    @property
    def norms(self) -> tuple:
        return tuple(s.norm for s in self.signals)

    def with_parameters(self, parameters: ParameterSet) -> "SolarSignals":
        """The stage for a new parameter description: the groups are stacked again when the
        production-zone rule changes with the ``sin2_theta12`` bounds."""
        if not self.signals or production_nodes(parameters) == self.zone_rule:
            return self
        return SolarSignals.create(self.signals, parameters, radiative=self.radiative, n_quad=self.n_quad,
                                   flavour=self.flavour, state_nodes=self.state_nodes, earth=self.earth)

    def __call__(self, p, x=None) -> list:
        """Recoil spectra of all signals at ``p`` in σ0 units, a list in signal order."""
        if self.flavour is not None:
            return general_signal_spectra(self, p)
        phys = physics_from_params(p)
        osc = osc_from_params(p)
        out = [None] * len(self.signals)
        for group, members in zip(self.groups, self.group_members):
            f = group_recoil_spectra(group, phys, osc)
            for j, i in enumerate(members):
                out[i] = f[j]
        return out

    def direct(self, p) -> list:
        """The same spectra computed from scratch by :func:`~nuejax.physics.recoil_spectrum`
        (general case: :func:`~nuejax.physics.spectra.recoil_spectrum_general`): the reference."""
        osc = osc_from_params(p)
        if self.flavour is not None:
            gen = general_physics_from_params(p)
            return [recoil_spectrum_general(s.source, s.t_mid, gen, osc, propagation=self.flavour.propagation,
                                            exposure=self.earth, period=self.flavour.period, radiative=self.radiative,
                                            n_quad=self.n_quad, in_sigma0_units=True) for s in self.signals]
        phys = physics_from_params(p)
        return [recoil_spectrum(s.source, s.t_mid, phys, osc, radiative=self.radiative, n_quad=self.n_quad,
                                in_sigma0_units=True) for s in self.signals]


def basis_coefficients(params) -> jax.Array:
    """Coefficients c_b(ε, μ) of the flavour-diagonal basis, in the order of
    :func:`~nuejax.physics.precomputed.coefficients_from_probes`; μ in 1e-11 μ_B."""
    phys = physics_from_params(params)
    mu = jnp.asarray(params.get("mu_nu", 0.0))
    nsi = nsi_coefficients(phys.eps_L, phys.eps_R).ravel()
    return jnp.concatenate([jnp.ones(1, dtype=nsi.dtype), nsi, (mu**2)[None]])


def polynomial_coefficients(params, poly_names: tuple, monomials: tuple) -> jax.Array:
    """The coefficients of a polynomial basis: :func:`basis_coefficients` (no ``monomials``: the
    flavour-diagonal basis), or the monomials :math:`\\theta_i\\theta_j` of the general case
    (index -1 meaning 1: ``(-1, -1)`` the constant, ``(i, -1)`` the linear term of parameter i)."""
    if not monomials:
        return basis_coefficients(params)
    theta = jnp.stack([jnp.ones(())] + [jnp.asarray(params[n]) for n in poly_names])
    i = np.array([m[0] + 1 for m in monomials])
    j = np.array([m[1] + 1 for m in monomials])
    return theta[i] * theta[j]


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class PolynomialSignals:
    """The fast evaluation (module docstring): ``basis`` (n_sig, n_basis, n_T) unfolded basis
    spectra at the signals' recoil-bin centres (zero-padded to a common n_T), ``poly_names`` and
    ``monomials`` (static) as in :func:`polynomial_coefficients`. Returns (n_sig, n_T)."""

    basis: jax.Array
    poly_names: tuple = static_field(default=())
    monomials: tuple = static_field(default=())

    @property
    def reads(self) -> tuple:
        return self.poly_names

    def __call__(self, p, x=None) -> jax.Array:
        return jnp.einsum("b,kbi->ki", polynomial_coefficients(p, self.poly_names, self.monomials), self.basis)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class FoldedPolynomial(NormalisedSignals):
    """The fast evaluation with the fixed fold multiplied out (module docstring): ``basis``
    (n_sig, n_basis, n_obs) folded basis templates; ``norms`` (static) each signal's flux
    normalisation. Returns the folded signals (n_obs,), normalisations applied."""

    basis: jax.Array
    norms: tuple = static_field()
    poly_names: tuple = static_field(default=())
    monomials: tuple = static_field(default=())

    @property
    def reads(self) -> tuple:
        return self.scale_names + self.poly_names

    def __call__(self, p, x=None) -> jax.Array:
        a = jnp.stack([p[n] for n in self.norms])
        return jnp.einsum("k,b,kbj->j", a, polynomial_coefficients(p, self.poly_names, self.monomials), self.basis)


@build_jit
def _spectra_at(stage, p):
    # a build step's evaluations of a signal stage (MediatorSignals.from_general): one compiled
    # program; op by op the general stage compiled some 130 small ones
    return stage(p)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class MediatorSignals:
    r"""The fast evaluation of the signals under a light vector mediator (``zprime_coupling``,
    ``zprime_mass``), a light scalar (``phi_coupling``, ``phi_mass``) and a magnetic moment
    (``mu_nu``), every other new-physics parameter zero and the oscillation parameters fixed.

    With propagation unaffected, the vector mediator is a vector NSI whose size depends on the
    recoil only, :math:`\varepsilon(T) = y\,c/(2m_eT + m^2)` (:mod:`nuejax.physics.general_nsi`),
    and the cross section is quadratic in it; the scalar adds
    :math:`y^2 S(E, T)/(2m_eT + m_\phi^2)^2` and μ_ν adds :math:`\mu^2 M(E, T)`, neither
    interfering. So every recoil spectrum is

    .. math:: R(T) = R_0 + u R_1 + u^2 R_2 + w S + \mu_\nu^2 M,\qquad
              u = \frac{y_{Z'}}{2m_eT + m_{Z'}^2},\quad w = \frac{y_\phi^2}{(2m_eT + m_\phi^2)^2},

    with :math:`R_0 \ldots M` independent of the couplings and masses: taken once from the general
    evaluation (:meth:`from_general`: five probes, exact for a quadratic), after which a point costs
    a few element-wise operations and the masses are ordinary parameters (a scan over masses
    compiles once). Returns the spectra as :class:`SolarSignals` does (a list, signal order)."""

    r0: tuple  # one (n_T,) array per signal: each signal keeps its own recoil grid
    r1: tuple
    r2: tuple
    s: tuple
    m: tuple
    q: tuple  # 2 m_e T [MeV^2]

    reads = ("zprime_coupling", "zprime_mass", "phi_coupling", "phi_mass", "mu_nu")

    @classmethod
    def from_general(cls, stage: SolarSignals, params: dict, *, probe: float = 0.3,
                     probe_mass: float = 1e-3) -> "MediatorSignals":
        """Take :math:`R_0, R_1, R_2, S, M` from the general signal stage ``stage`` (built with
        both mediators) at ``params`` (its other parameters' values), from the spectra at
        zero couplings, at ``zprime_coupling`` = ±``probe`` and ``phi_coupling`` = ``probe`` (both
        masses ``probe_mass`` MeV) and at ``mu_nu`` = 1."""
        from ..constants import M_E

        if stage.flavour is None:
            raise InputError("MediatorSignals.from_general needs the general signal stage of a model built with "
                             "mediators=('zprime', 'phi')")
        base = {**params, "zprime_coupling": 0.0, "phi_coupling": 0.0, "mu_nu": 0.0,
                "zprime_mass": probe_mass, "phi_mass": probe_mass}
        base = {k: jnp.asarray(v) for k, v in base.items()}

        def at(**kw):
            return [np.asarray(f) for f in _spectra_at(stage, {**base, **{k: jnp.asarray(v) for k, v in kw.items()}})]

        r0 = at()
        plus, minus, phi, mu = (at(zprime_coupling=probe), at(zprime_coupling=-probe), at(phi_coupling=probe),
                                at(mu_nu=1.0))
        dt = jnp.result_type(float)
        out = {k: [] for k in ("r0", "r1", "r2", "s", "m", "q")}
        for j, sig in enumerate(stage.signals):
            q = 2.0 * M_E * np.asarray(sig.t_mid)
            u = probe / (q + probe_mass**2)
            w = probe**2 / (q + probe_mass**2) ** 2
            for k, v in (("r0", r0[j]), ("r1", (plus[j] - minus[j]) / (2.0 * u)),
                         ("r2", (plus[j] + minus[j] - 2.0 * r0[j]) / (2.0 * u * u)), ("s", (phi[j] - r0[j]) / w),
                         ("m", mu[j] - r0[j]), ("q", q)):
                out[k].append(jnp.asarray(v, dtype=dt))
        return cls(**{k: tuple(v) for k, v in out.items()})

    def __call__(self, p, x=None) -> list:
        out = []
        for r0, r1, r2, s, m, q in zip(self.r0, self.r1, self.r2, self.s, self.m, self.q):
            u = p["zprime_coupling"] / (q + p["zprime_mass"] ** 2)
            w = p["phi_coupling"] ** 2 / (q + p["phi_mass"] ** 2) ** 2
            out.append(r0 + u * (r1 + u * r2) + w * s + p["mu_nu"] ** 2 * m)
        return out
