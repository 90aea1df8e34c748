r"""General NSI and light mediators: the cross section of a flavour state as a trace.

The solar neutrino arriving at a detector is the incoherent mixture of mass states
:math:`\rho_{\alpha\beta}(E) = \sum_i P_i(E)\,U_{\alpha i}U^*_{\beta i}`
(:func:`~nuejax.physics.oscillation.density_matrix`). With non-standard interactions with electrons

.. math::
    \mathcal L_{NSI} = -2\sqrt2 G_F \sum_{\alpha\beta}\varepsilon^P_{\alpha\beta}
    (\bar\nu_\alpha\gamma^\mu P_L\nu_\beta)(\bar e\gamma_\mu P e),\qquad P = P_L, P_R,

(Hermitian :math:`\varepsilon^{L,R}`, complex off-diagonal entries) an incoming :math:`\nu_\beta`
scatters into :math:`\nu_\alpha` with amplitude :math:`\propto (G_P)_{\alpha\beta}`,
:math:`G_L = \mathrm{diag}(g_L^\alpha) + \varepsilon^L`, :math:`G_R = \mathrm{diag}(g_R^\alpha) +
\varepsilon^R`; summing the outgoing flavours and averaging over the state gives

.. math::
    \frac{d\sigma}{dT} = \sigma_0\,\mathrm{Re}\,\mathrm{Tr}\Big[\rho\Big(K_A G_L^2 + K_B G_R^2
        + K_C\tfrac12\{G_L, G_R\}\Big)\Big]
        + \frac{\pi\alpha^2}{m_e^2}\Big(\frac1T - \frac1E\Big)\mathrm{Tr}[\rho\,\mathrm{diag}(\mu_\alpha^2)]
        + \frac{d\sigma_\phi}{dT}\,\mathrm{Tr}\,\rho

(P. Coloma, M. C. Gonzalez-Garcia, M. Maltoni, J. P. Pinheiro, S. Urrea, JHEP 07 (2022) 138,
arXiv:2204.03011, Eq. 2.9; D. W. P. Amaral, D. G. Cerdeño, A. Cheek, P. Foldenauer,
arXiv:2302.12846, Sec. 2; MISSION.md sec. 2), with the flavour-independent kinematic factors
:math:`K_{A,B,C}(T, E)` and couplings :math:`g_{L,R}^\alpha(T)` of
:func:`~nuejax.physics.cross_section.weak_kinematics` (tree level or BKS: the radiative
corrections multiply the SM-and-NSI bilinears exactly as in
:func:`~nuejax.physics.cross_section.dsigma_dT_weak`). For diagonal :math:`\varepsilon` this is
:math:`\sum_\alpha\rho_{\alpha\alpha}\,d\sigma_\alpha/dT` of the flavour-diagonal code (test: 1e-12).

Light mediators, exact at tree level:

* a vector :math:`Z'` coupled as :math:`g_\nu^\alpha Z'_\mu\bar\nu_\alpha\gamma^\mu P_L\nu_\alpha +
  g_e Z'_\mu\bar e\gamma^\mu e` exchanged in the t channel (:math:`q^2 = -2m_eT`) has the Lorentz
  structure of a vector NSI with :math:`\varepsilon^L_{\alpha\alpha} = \varepsilon^R_{\alpha\alpha}
  = g_\nu^\alpha g_e/[2\sqrt2 G_F(2m_eT + m_{Z'}^2)]` (:func:`vector_mediator_epsilon`); its
  interference with the SM and its square follow from the trace above, exactly (the
  :math:`q_\mu q_\nu` part of the propagator vanishes on conserved currents). For
  :math:`m_{Z'}^2 \gg 2m_eT` it is the contact NSI.
* a scalar :math:`\phi` coupled as :math:`g_\nu\phi\bar\nu\nu + g_e\phi\bar e e` (Dirac neutrinos,
  flavour-universal) flips the neutrino chirality and adds incoherently,
  :math:`d\sigma_\phi/dT = g_\nu^2g_e^2\,m_eT(2m_e + T)/[8\pi E^2(2m_eT + m_\phi^2)^2]`
  (:func:`scalar_mediator_dsigma_dT`; Cerdeño et al., JHEP 05 (2016) 118, arXiv:1604.01025,
  Eq. 2.10 in the limit :math:`T \ll 2m_e`; the exact form is checked at amplitude level in the tests).

Mediator couplings are products :math:`g_\nu g_e` in units of :data:`MEDIATOR_COUPLING_UNIT`
= 1e-12; masses in MeV. Every function is pure ``jax.numpy`` (``jit``/``vmap``/``grad``-safe).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..constants import G_F, M_E, SIGMA0_PER_MEV, SW2_LOW_ENERGY
from .cross_section import (_MM_SCALE_SIGMA0, NewPhysics, _check_mu_nu_unit, _kinematics,
                            t_max, weak_kinematics)

__all__ = [
    "MEDIATOR_COUPLING_UNIT",
    "OFF_DIAGONAL",
    "GeneralPhysics",
    "hermitian",
    "vector_mediator_epsilon",
    "scalar_mediator_dsigma_dT",
    "dsigma_dT_matrix",
    "dsigma_dT_state",
    "trace_form",
]

#: Unit of the mediator couplings g_nu g_e (a product of two dimensionless couplings).
MEDIATOR_COUPLING_UNIT = 1e-12
#: Flavour pairs (alpha < beta) of the off-diagonal NSI entries, in the order of every
#: ``(3,)`` real/imaginary-part vector: (e mu, e tau, mu tau).
OFF_DIAGONAL = ((0, 1), (0, 2), (1, 2))
#: Guard of the mediator denominators 2 m_e T + m^2 [MeV^2] (a massless mediator at T = 0).
_DEN_GUARD = 1e-30


def hermitian(diag, re=(0.0, 0.0, 0.0), im=(0.0, 0.0, 0.0)):
    r"""Hermitian (3, 3) complex matrix from its real diagonal and the real and imaginary parts of
    its upper off-diagonal entries :math:`\varepsilon_{e\mu}, \varepsilon_{e\tau},
    \varepsilon_{\mu\tau}` (:data:`OFF_DIAGONAL`); :math:`\varepsilon_{\beta\alpha} =
    \varepsilon^*_{\alpha\beta}`. Leading batch axes broadcast: shapes ``(..., 3)`` -> ``(..., 3, 3)``."""
    d, r, i = (jnp.asarray(x, dtype=jnp.result_type(float)) for x in (diag, re, im))
    d, r, i = jnp.broadcast_arrays(d, r, i)
    z = r + 1j * i
    dd = d.astype(z.dtype)
    rows = [[dd[..., 0], z[..., 0], z[..., 1]],
            [jnp.conj(z[..., 0]), dd[..., 1], z[..., 2]],
            [jnp.conj(z[..., 1]), jnp.conj(z[..., 2]), dd[..., 2]]]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


class GeneralPhysics(NamedTuple):
    r"""New-physics point of the general case (a PyTree).

    Attributes
    ----------
    eps_L, eps_R:
        Hermitian (3, 3) NSI matrices :math:`\varepsilon^{L,R}_{\alpha\beta}` (complex; build them
        with :func:`hermitian`), flavours e, μ, τ.
    mu_nu:
        magnetic moment in units of 1e-11 μ_B, scalar (effective) or (3,) (per flavour, diagonal).
    vector_coupling, vector_mass:
        :math:`g_\nu^\alpha g_e` of a vector mediator in units of :data:`MEDIATOR_COUPLING_UNIT`
        (scalar: flavour-universal; (3,): per flavour) and its mass [MeV].
    scalar_coupling, scalar_mass:
        :math:`g_\nu g_e` of a scalar mediator (units of :data:`MEDIATOR_COUPLING_UNIT`) and its
        mass [MeV].
    """

    eps_L: jax.Array | np.ndarray = np.zeros((3, 3), dtype=complex)
    eps_R: jax.Array | np.ndarray = np.zeros((3, 3), dtype=complex)
    mu_nu: jax.Array | float = 0.0
    vector_coupling: jax.Array | float = 0.0
    vector_mass: jax.Array | float = 1.0
    scalar_coupling: jax.Array | float = 0.0
    scalar_mass: jax.Array | float = 1.0

    @classmethod
    def from_new_physics(cls, physics: NewPhysics) -> "GeneralPhysics":
        """The flavour-diagonal point of :class:`~nuejax.physics.cross_section.NewPhysics`."""
        return cls(eps_L=hermitian(physics.eps_L), eps_R=hermitian(physics.eps_R), mu_nu=physics.mu_nu)

    @property
    def eps_V(self):
        r""":math:`\varepsilon^V = \varepsilon^L + \varepsilon^R`: the matter potential in propagation."""
        return jnp.asarray(self.eps_L) + jnp.asarray(self.eps_R)


def vector_mediator_epsilon(T, coupling, mass):
    r"""The vector mediator as a :math:`T`-dependent vector NSI, shape ``T.shape + (3,)``:
    :math:`\varepsilon^L_{\alpha\alpha} = \varepsilon^R_{\alpha\alpha} = g_\nu^\alpha g_e /
    [2\sqrt2 G_F (2m_eT + m^2)]` (module docstring), ``coupling`` in units of
    :data:`MEDIATOR_COUPLING_UNIT` (scalar or (3,)), ``mass`` and ``T`` in MeV."""
    T = jnp.asarray(T)
    c = jnp.broadcast_to(jnp.asarray(coupling, dtype=jnp.result_type(T, float)), (3,))
    den = jnp.maximum(2.0 * M_E * T + jnp.asarray(mass) ** 2, _DEN_GUARD)
    return (MEDIATOR_COUPLING_UNIT / (2.0 * math.sqrt(2.0) * G_F)) * c / den[..., None]


def _scalar_shape(T, E, mass):
    """T(2 m_e + T) / (16 G_F^2 E^2 (2 m_e T + m^2)^2): the scalar cross section per unit coupling^2
    in units of sigma0 = 2 G_F^2 m_e / pi (times MEDIATOR_COUPLING_UNIT^2)."""
    den = jnp.maximum(2.0 * M_E * T + jnp.asarray(mass) ** 2, _DEN_GUARD)
    return MEDIATOR_COUPLING_UNIT**2 * T * (2.0 * M_E + T) / (16.0 * G_F**2 * E**2 * den**2)


def scalar_mediator_dsigma_dT(T, E, coupling, mass, *, in_sigma0_units=False):
    r"""Scalar-mediator cross section :math:`g_\nu^2g_e^2\,m_eT(2m_e+T)/[8\pi E^2(2m_eT+m_\phi^2)^2]`
    [cm^2/MeV] (module docstring), flavour-universal, zero outside :math:`0 \le T \le T_{max}`;
    ``coupling`` = :math:`g_\nu g_e` in units of :data:`MEDIATOR_COUPLING_UNIT`, ``mass`` in MeV."""
    valid, T_s, E_s = _kinematics(T, E)
    xs = jnp.asarray(coupling) ** 2 * _scalar_shape(T_s, E_s, mass)
    return jnp.where(valid, xs if in_sigma0_units else SIGMA0_PER_MEV * xs, 0.0)


def _anticommutator_half(a, b):
    return 0.5 * (a @ b + b @ a)


def _couplings(gL, gR, T, physics: GeneralPhysics):
    """G_L, G_R (..., 3, 3): SM couplings (+ the vector mediator's eps(T)) on the diagonal, plus eps."""
    v = vector_mediator_epsilon(T, physics.vector_coupling, physics.vector_mass)
    eye = jnp.eye(3)
    GL = (gL + v)[..., None] * eye + jnp.asarray(physics.eps_L)
    GR = (gR + v)[..., None] * eye + jnp.asarray(physics.eps_R)
    return GL, GR


def dsigma_dT_matrix(T, E, physics: GeneralPhysics = GeneralPhysics(), *, radiative=True,
                     sw2=SW2_LOW_ENERGY, in_sigma0_units=False):
    r"""The Hermitian matrix :math:`Q(T, E)` with :math:`d\sigma/dT = \mathrm{Re\,Tr}[\rho\,Q]`,
    shape ``broadcast(T, E).shape + (3, 3)`` (module docstring; weak, magnetic-moment and
    scalar-mediator parts). Zero outside the physical region."""
    valid, K, gL, gR = weak_kinematics(T, E, radiative=radiative, sw2=sw2)
    _, T_s, E_s = _kinematics(T, E)
    GL, GR = _couplings(gL, gR, T_s, physics)
    Kc = K.astype(GL.dtype)[..., None, None, :]
    Q = Kc[..., 0] * (GL @ GL) + Kc[..., 1] * (GR @ GR) + Kc[..., 2] * _anticommutator_half(GL, GR)
    mm_valid = valid & (jnp.asarray(T) > 0.0)
    T_mm = jnp.where(mm_valid, T_s, 0.5 * t_max(E_s))
    _check_mu_nu_unit(physics.mu_nu)
    mu2 = (jnp.broadcast_to(jnp.asarray(physics.mu_nu, dtype=jnp.result_type(float)), (3,)) * _MM_SCALE_SIGMA0) ** 2
    mm = jnp.where(mm_valid, 1.0 / T_mm - 1.0 / E_s, 0.0)
    scalar = jnp.asarray(physics.scalar_coupling) ** 2 * _scalar_shape(T_s, E_s, physics.scalar_mass)
    eye = jnp.eye(3)
    Q = Q + (mm[..., None] * mu2 + scalar[..., None])[..., None] * eye
    unit = 1.0 if in_sigma0_units else SIGMA0_PER_MEV
    return jnp.where(valid[..., None, None], unit * Q, 0.0)


def dsigma_dT_state(T, E, rho, physics: GeneralPhysics = GeneralPhysics(), *, radiative=True,
                    sw2=SW2_LOW_ENERGY, in_sigma0_units=False):
    r""":math:`d\sigma/dT = \mathrm{Re\,Tr}[\rho\,Q(T, E)]` [cm^2/MeV] for the flavour state ``rho``
    (..., 3, 3) (trace 1 for a normalised state; :func:`~nuejax.physics.oscillation.density_matrix`),
    broadcast against ``T`` and ``E``."""
    Q = dsigma_dT_matrix(T, E, physics, radiative=radiative, sw2=sw2, in_sigma0_units=in_sigma0_units)
    return jnp.real(jnp.einsum("...ab,...ba->...", jnp.asarray(rho), Q))


def trace_form(R, gL, gR, T, physics: GeneralPhysics):
    r"""The recoil spectrum at fixed :math:`T` from state-weighted kinematic sums, in σ0 units.

    With the neutrino-energy integral done ahead of the couplings,
    :math:`R_k = \int dE\,\lambda(E)\,\rho(E)\,K_k(T, E)` (:math:`k = A, B, C`; complex (3, 3)),
    :math:`R_\mu = \int dE\,\lambda\,\rho_{\alpha\alpha}(1/T - 1/E)` (3,) and
    :math:`R_\phi = \int dE\,\lambda\,\mathrm{Tr}\rho/E^2`, the spectrum is

    .. math::
        f(T) = \mathrm{Re\,Tr}[R_A G_L^2 + R_B G_R^2 + R_C\tfrac12\{G_L, G_R\}]
               + \sum_\alpha R_{\mu,\alpha}\mu_\alpha^2 + R_\phi\,g^2 h_\phi(T),

    since every :math:`E`-dependence of the cross section is in the kinematic factors and every
    coupling depends on :math:`T` alone (:func:`weak_kinematics`, :func:`vector_mediator_epsilon`).
    ``R`` is a tuple ``(R_ABC (..., 3, 3, 3) with the kind axis third from last, R_mu (..., 3),
    R_phi (...))``; ``gL``, ``gR`` (..., 3) and ``T`` (...) at the same recoil energies.
    """
    R_abc, R_mu, R_phi = R
    GL, GR = _couplings(gL, gR, T, physics)
    tr = lambda a, b: jnp.real(jnp.einsum("...ab,...ba->...", a, b))  # noqa: E731
    f = (tr(R_abc[..., 0, :, :], GL @ GL) + tr(R_abc[..., 1, :, :], GR @ GR)
         + tr(R_abc[..., 2, :, :], _anticommutator_half(GL, GR)))
    mu2 = (jnp.broadcast_to(jnp.asarray(physics.mu_nu, dtype=jnp.result_type(float)), (3,)) * _MM_SCALE_SIGMA0) ** 2
    f = f + R_mu @ mu2
    # h_phi(T) E^2 = the scalar shape without its 1/E^2, which R_phi carries
    f = f + R_phi * jnp.asarray(physics.scalar_coupling) ** 2 * _scalar_shape(T, 1.0, physics.scalar_mass)
    return f

