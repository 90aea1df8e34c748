r"""Models of the general case: general NSI, NSI in propagation, light mediators, day and night.

The parameters take these names (every one optional; those a model does not declare are zero,
and the mediator masses then irrelevant; :mod:`nuejax.model.physics_params` maps them to the
physics layer):

============================  ==============================================================
name                          meaning
============================  ==============================================================
``eps_ee_L`` … ``eps_tautau_R`` diagonal :math:`\varepsilon^{L,R}_{\alpha\alpha}` (as in the default model)
``eps_emu_L_re``, ``_im``     :math:`\mathrm{Re}, \mathrm{Im}\,\varepsilon^L_{e\mu}` (and ``etau``, ``mutau``; ``_R``)
``mu_nu``                     effective magnetic moment [1e-11 μ_B]
``zprime_coupling``           :math:`g_\nu g_e` of a flavour-universal vector mediator [1e-12]
``zprime_mass``               its mass [MeV]
``phi_coupling``              :math:`g_\nu g_e` of a scalar mediator [1e-12]
``phi_mass``                  its mass [MeV]
============================  ==============================================================

:math:`\varepsilon_{\beta\alpha} = \varepsilon^*_{\alpha\beta}` (Hermitian), phases relative to
the PDG PMNS convention (:func:`~nuejax.physics.oscillation.pmns_matrix`). A model of the general
case (its :class:`~nuejax.model.signals.SolarSignals` stage has ``flavour`` set) evaluates each
signal as the trace form of :func:`~nuejax.physics.general_nsi.trace_form` on state-weighted
kinematic sums; the fast path (:func:`nuejax.model.fast.fast_model`) expands it into polynomial
templates.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from .._internal.build_jit import build_jit
from ..errors import InputError
from ..physics.cross_section import bks_couplings, kinematics, mm_shape, tree_couplings, weak_kinematics
from ..physics.general_nsi import trace_form
from ..physics.precomputed import PrecomputedSpectrum, node_values
from ..physics.spectra import SolarSource, state_table
from .parameters import Parameter, unknown_name_message
from .physics_params import (GENERAL_NSI_NAMES, MEDIATOR_PARAMETERS, general_physics_from_params,
                             osc_from_params)

__all__ = ["FlavourOptions", "StateNodes", "state_nodes", "general_parameters", "general_signal_spectra",
           "state_sums"]


@dataclass(frozen=True)
class FlavourOptions:
    """Static options of a general-case model: NSI in propagation (``propagation``: the model's
    :math:`\\varepsilon^V = \\varepsilon^L + \\varepsilon^R` also in the matter potential of the Sun
    and the Earth) and the period of the data (``'day'``, ``'night'``, ``'average'``: the yearly mean;
    the last two need the model's Earth exposure)."""

    propagation: bool = False
    period: str = "day"

    def __post_init__(self):
        if self.period not in ("day", "night", "average"):
            raise InputError(f"period must be 'day', 'night' or 'average', not {self.period!r}")


def general_parameters(nsi="all", mediators=(), *, mediator_masses=None) -> tuple:
    """Parameter descriptions of the general case, all fixed at zero (release what you test).

    ``nsi``: ``'all'`` (the 18 real NSI parameters) or an iterable of names from
    :data:`~nuejax.model.physics_params.GENERAL_NSI_NAMES`; ``mediators``: any of ``'zprime'``,
    ``'phi'``; ``mediator_masses``: {name: MeV} starting masses (default 10 MeV)."""
    names = GENERAL_NSI_NAMES if nsi == "all" else tuple(nsi)
    for n in names:
        if n not in GENERAL_NSI_NAMES:
            raise InputError(unknown_name_message(n, GENERAL_NSI_NAMES, "NSI parameter"))
    ps = [Parameter(n, 0.0, -2.0, 2.0, fixed=True, doc=_doc(n)) for n in names]
    masses = dict(mediator_masses or {})
    for m in mediators:
        if m not in MEDIATOR_PARAMETERS:
            raise InputError(f"unknown mediator {m!r}: known are {', '.join(MEDIATOR_PARAMETERS)}")
        c, mass = MEDIATOR_PARAMETERS[m]
        ps.append(Parameter(c, 0.0, -1e3, 1e3, fixed=True, unit="1e-12", doc=f"g_nu g_e of the {m} mediator"))
        ps.append(Parameter(mass, float(masses.get(m, 10.0)), 1e-3, 1e4, fixed=True, unit="MeV",
                            doc=f"mass of the {m} mediator"))
    return tuple(ps)


def _doc(name: str) -> str:
    parts = name.split("_")
    if len(parts) == 3:
        return f"NSI epsilon^{parts[2]}_{parts[1]}"
    return f"{'Re' if parts[3] == 're' else 'Im'} NSI epsilon^{parts[2]}_{parts[1]}"


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class StateNodes:
    """Fixed tensors of one signal for the trace form: kinematic factors ``K`` (3, n_T, q)
    (:math:`K_{A,B,C}` at the quadrature nodes of ``pre``), ``mm`` (n_T, q) = 1/T − 1/E, ``phi``
    (n_T, q) = 1/E², couplings ``gL``, ``gR`` (n_T, 3), all zero outside the physical region."""

    K: jax.Array
    mm: jax.Array
    phi: jax.Array
    gL: jax.Array
    gR: jax.Array


@build_jit(static_argnames=("radiative",))
def state_nodes(pre: PrecomputedSpectrum, t_mid, *, radiative: bool = True) -> StateNodes:
    """:class:`StateNodes` at the quadrature nodes of ``pre`` (its energies, for recoil energies
    ``t_mid``). A build step: one compiled program (op by op it compiled some forty small ones
    per component)."""
    T = jnp.asarray(t_mid)[:, None]
    E = pre.energies
    valid, K, _, _ = weak_kinematics(T, E, radiative=radiative)
    _, _, E_s = kinematics(T, E)
    K = jnp.where(valid[..., None], K, 0.0)
    mm = mm_shape(T, E)
    phi = jnp.where(valid, 1.0 / E_s**2, 0.0)
    t = jnp.asarray(t_mid)
    gL, gR = bks_couplings(t) if radiative else (jnp.broadcast_to(g, t.shape + (3,)) for g in tree_couplings())
    return StateNodes(jnp.moveaxis(K, -1, 0), mm, phi, gL, gR)


def _state_node_values(table, pre: PrecomputedSpectrum):
    """The (n, 3, 3) table at the nodes of ``pre``, times the quadrature weights: (n_T, q, 3, 3)."""
    v = node_values(table.reshape(table.shape[0], 9), pre)  # (9, n_T, q)
    return jnp.moveaxis(v, 0, -1).reshape(v.shape[1:] + (3, 3))


def state_sums(source: SolarSource, pre: PrecomputedSpectrum, nodes: StateNodes, osc, *, eps_V=None, exposure=None,
               period: str = "day"):
    r"""The state-weighted kinematic sums :math:`(R_{ABC}, R_\mu, R_\phi)` of
    :func:`~nuejax.physics.general_nsi.trace_form` at the recoil energies of ``pre``."""
    table = state_table(source, osc, eps_V=eps_V, exposure=exposure, period=period)
    v = _state_node_values(table, pre)  # (n_T, q, 3, 3)
    R_abc = jnp.einsum("ktq,tqab->tkab", nodes.K.astype(v.dtype), v)
    diag = jnp.real(jnp.diagonal(v, axis1=-2, axis2=-1))  # (n_T, q, 3)
    R_mu = jnp.einsum("tq,tqa->ta", nodes.mm, diag)
    R_phi = jnp.einsum("tq,tqa->t", nodes.phi, diag)
    return R_abc, R_mu, R_phi


def general_signal_spectra(stage, params) -> list:
    """Recoil spectra (σ0 units) of all signals of a general-case signal stage
    (:class:`~nuejax.model.signals.SolarSignals` with ``flavour`` set) at ``params``."""
    phys = general_physics_from_params(params)
    osc = osc_from_params(params)
    opts: FlavourOptions = stage.flavour
    eps_V = phys.eps_V if opts.propagation else None
    out = []
    for sig, nodes in zip(stage.signals, stage.state_nodes):
        R = state_sums(sig.source, sig.pre, nodes, osc, eps_V=eps_V, exposure=stage.earth, period=opts.period)
        out.append(trace_form(R, nodes.gL, nodes.gR, sig.t_mid, phys))
    return out
