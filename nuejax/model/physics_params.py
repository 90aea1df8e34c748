"""From the parameter PyTree to the physics layer: the named parameters a model's signals read.

A model's parameters are a ``dict`` name -> value; the physics layer takes typed objects
(:class:`~nuejax.physics.cross_section.NewPhysics`, :class:`~nuejax.physics.oscillation.OscillationParams`,
:class:`~nuejax.physics.general_nsi.GeneralPhysics`). The names, their units and their defaults
when a model does not declare them:

============================  ==============================================================
name                          meaning (absent: value)
============================  ==============================================================
``eps_<ee|mumu|tautau>_<L|R>`` diagonal NSI :math:`\\varepsilon^{L,R}_{\\alpha\\alpha}` (0)
``eps_<emu|etau|mutau>_<L|R>_<re|im>`` off-diagonal NSI, real and imaginary parts (0)
``mu_nu``                     effective magnetic moment [:data:`~nuejax.physics.MU_NU_UNIT` = 1e-11 μ_B] (0)
``zprime_coupling``, ``zprime_mass``  :math:`g_\\nu g_e` [1e-12] and mass [MeV] of a universal vector mediator (0, 10)
``phi_coupling``, ``phi_mass``  the same of a scalar mediator (0, 10)
``sin2_theta12``, ``sin2_theta13``, ``sin2_theta23``, ``delta_cp``  mixing (NuFIT 6.0)
``dm2_21``                    :math:`\\Delta m^2_{21}` [1e-5 eV²] (NuFIT 6.0)
============================  ==============================================================
"""

from __future__ import annotations

import jax.numpy as jnp

from ..constants import SW2_LOW_ENERGY
from ..physics.cross_section import NewPhysics
from ..physics.general_nsi import GeneralPhysics, hermitian
from ..physics.oscillation import GAUSS_RULE_SIN2_THETA12, PRODUCTION_NODES, OscillationParams
from .parameters import ParameterSet

__all__ = ["DM2_UNIT", "FLAVOURS", "PAIRS", "DIAGONAL_NSI_NAMES", "OFF_DIAGONAL_NSI_NAMES", "GENERAL_NSI_NAMES",
           "MEDIATOR_PARAMETERS", "NEW_PHYSICS_NAMES", "NONLINEAR_PHYSICS", "OSC_PARAMS", "physics_from_params",
           "osc_from_params", "general_physics_from_params", "physics_symmetries", "production_nodes"]

#: ``dm2_21`` is in units of 1e-5 eV^2.
DM2_UNIT = 1e-5
FLAVOURS = ("ee", "mumu", "tautau")
PAIRS = ("emu", "etau", "mutau")
DIAGONAL_NSI_NAMES = tuple(f"eps_{f}_{c}" for f in FLAVOURS for c in ("L", "R"))
OFF_DIAGONAL_NSI_NAMES = tuple(f"eps_{p}_{c}_{part}" for c in ("L", "R") for p in PAIRS for part in ("re", "im"))
GENERAL_NSI_NAMES = DIAGONAL_NSI_NAMES + OFF_DIAGONAL_NSI_NAMES
#: mediator -> (coupling parameter, mass parameter)
MEDIATOR_PARAMETERS = {"zprime": ("zprime_coupling", "zprime_mass"), "phi": ("phi_coupling", "phi_mass")}
#: parameters that enter non-polynomially (baked into a fast path, like the oscillation parameters)
NONLINEAR_PHYSICS = ("zprime_mass", "phi_mass")
#: the oscillation parameters a fast path bakes in
OSC_PARAMS = ("sin2_theta12", "dm2_21", "sin2_theta13", "sin2_theta23")
#: the new-physics parameters: what a multi-start design spreads its starts over
NEW_PHYSICS_NAMES = GENERAL_NSI_NAMES + ("mu_nu",) + tuple(n for pair in MEDIATOR_PARAMETERS.values() for n in pair)


def physics_from_params(p) -> NewPhysics:
    """Diagonal NSI ``eps_<flavour>_<L|R>`` and ``mu_nu`` (units of 1e-11 μ_B) -> :class:`NewPhysics`."""
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


def general_physics_from_params(p) -> GeneralPhysics:
    """The :class:`~nuejax.physics.general_nsi.GeneralPhysics` of a parameter dict (absent names:
    0; mediator masses 10 MeV). Off-diagonal entries :math:`\\varepsilon_{\\beta\\alpha} =
    \\varepsilon^*_{\\alpha\\beta}` (Hermitian), phases relative to the PDG PMNS convention
    (:func:`~nuejax.physics.oscillation.pmns_matrix`)."""
    zero = jnp.zeros(())
    g = lambda k, d=zero: p.get(k, d)  # noqa: E731

    def matrix(c):
        diag = jnp.stack([g(f"eps_{f}_{c}") for f in FLAVOURS])
        re = jnp.stack([g(f"eps_{q}_{c}_re") for q in PAIRS])
        im = jnp.stack([g(f"eps_{q}_{c}_im") for q in PAIRS])
        return hermitian(diag, re, im)

    return GeneralPhysics(eps_L=matrix("L"), eps_R=matrix("R"), mu_nu=g("mu_nu"),
                          zprime_coupling=g("zprime_coupling"), zprime_mass=g("zprime_mass", jnp.full((), 10.0)),
                          phi_coupling=g("phi_coupling"), phi_mass=g("phi_mass", jnp.full((), 10.0)))


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


def physics_symmetries(names) -> tuple:
    r"""The approximate symmetries of the ν–e cross section in the new-physics parameters among
    ``names``, each a function of a ``{name: value}`` mapping returning the changed values (the
    image of a point): where the likelihood has mirror minima, a multi-start design starts at
    the images of its start (:mod:`nuejax.inference.starts`).

    * a diagonal coupling :math:`\varepsilon^{L,R}_{\alpha\alpha} \to -2 g^\alpha_{L,R} -
      \varepsilon^{L,R}_{\alpha\alpha}`: the cross section depends on :math:`(g + \varepsilon)^2`
      and on the product :math:`(g_L + \varepsilon^L)(g_R + \varepsilon^R)` (tree-level
      couplings, :math:`s_W^2 = 0.23867`; paper Eqs. sm_cross_section, g_tilde), so the sign-flipped
      coupling is a second branch (Borexino's NSI analysis reports both: Agostini et al.,
      arXiv:1905.03512);
    * an off-diagonal entry :math:`\varepsilon_{\alpha\beta} \to -\varepsilon_{\alpha\beta}`
      (its real and imaginary parts together): it enters the rates through
      :math:`|\varepsilon_{\alpha\beta}|^2` at leading order (Amaral et al., arXiv:2006.11225).
    """
    names = set(names)
    g_L = {"ee": 0.5 + SW2_LOW_ENERGY, "mumu": -0.5 + SW2_LOW_ENERGY, "tautau": -0.5 + SW2_LOW_ENERGY}
    out = []
    for f in FLAVOURS:
        for c, g in (("L", g_L[f]), ("R", SW2_LOW_ENERGY)):
            n = f"eps_{f}_{c}"
            if n in names:
                out.append(lambda v, n=n, g=g: {n: -2.0 * g - v[n]})
    for pair in PAIRS:
        for c in ("L", "R"):
            parts = [f"eps_{pair}_{c}_{x}" for x in ("re", "im") if f"eps_{pair}_{c}_{x}" in names]
            if parts:
                out.append(lambda v, parts=tuple(parts): {n: -v[n] for n in parts})
    return tuple(out)

