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
arXiv:2302.12846, Sec. 2), with the flavour-independent kinematic factors
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
import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..constants import G_F, M_E, SIGMA0_PER_MEV, SW2_LOW_ENERGY
from .cross_section import (NewPhysics, check_mu_nu_unit, dsigma_dT_mm_unchecked, kinematics, mm_couplings2,
                            weak_kinematics)

__all__ = [
    "MEDIATOR_COUPLING_UNIT",
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


def hermitian(diag, re=(0.0, 0.0, 0.0), im=(0.0, 0.0, 0.0)):
    r"""Hermitian (3, 3) complex matrix from its real diagonal and the real and imaginary parts of
    its upper off-diagonal entries :math:`\varepsilon_{e\mu}, \varepsilon_{e\tau},
    \varepsilon_{\mu\tau}` (in that order); :math:`\varepsilon_{\beta\alpha} =
    \varepsilon^*_{\alpha\beta}`. Leading batch axes broadcast: shapes ``(..., 3)`` -> ``(..., 3, 3)``."""
    d, r, i = (jnp.asarray(x, dtype=jnp.result_type(float)) for x in (diag, re, im))
    d, r, i = jnp.broadcast_arrays(d, r, i)
    z = r + 1j * i
    dd = d.astype(z.dtype)
    rows = [[dd[..., 0], z[..., 0], z[..., 1]],
            [jnp.conj(z[..., 0]), dd[..., 1], z[..., 2]],
            [jnp.conj(z[..., 1]), jnp.conj(z[..., 2]), dd[..., 2]]]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


class _GeneralPhysicsFields(NamedTuple):
    eps_L: jax.Array | np.ndarray = np.zeros((3, 3), dtype=complex)
    eps_R: jax.Array | np.ndarray = np.zeros((3, 3), dtype=complex)
    mu_nu: jax.Array | float = 0.0
    zprime_coupling: jax.Array | float = 0.0
    zprime_mass: jax.Array | float = 10.0
    phi_coupling: jax.Array | float = 0.0
    phi_mass: jax.Array | float = 10.0


def _concrete(x) -> bool:
    return isinstance(x, (numbers.Number, np.ndarray, np.generic, list, tuple))


def _nsi_matrix(eps, name):
    """A concrete (3,) vector becomes the diagonal matrix; a concrete (3, 3) one must be Hermitian."""
    if not _concrete(eps):
        return eps  # a JAX array or tracer: taken as it is (shape checked by use)
    a = np.asarray(eps)
    if a.shape == (3,):
        return hermitian(a.real)
    if a.shape != (3, 3):
        raise ValueError(f"{name} must be a (3, 3) Hermitian matrix or a (3,) diagonal, got shape {a.shape}")
    if not np.allclose(a, a.conj().T, rtol=0, atol=1e-12 * max(1.0, float(np.abs(a).max()))):
        raise ValueError(f"{name} must be Hermitian (eps_ba = conj(eps_ab)); build it with nuejax.physics.hermitian")
    return a.astype(complex)


class GeneralPhysics(_GeneralPhysicsFields):
    r"""New-physics point of the general case (a PyTree).

    Attributes
    ----------
    eps_L, eps_R:
        Hermitian (3, 3) NSI matrices :math:`\varepsilon^{L,R}_{\alpha\beta}` (complex; build them
        with :func:`hermitian`), flavours e, μ, τ.
    mu_nu:
        magnetic moment in units of 1e-11 μ_B, scalar (effective) or (3,) (per flavour, diagonal).
    zprime_coupling, zprime_mass:
        :math:`g_\nu^\alpha g_e` of a vector mediator Z′ in units of :data:`MEDIATOR_COUPLING_UNIT`
        (scalar: flavour-universal; (3,): per flavour) and its mass [MeV] (default 10).
    phi_coupling, phi_mass:
        :math:`g_\nu g_e` of a scalar mediator φ (units of :data:`MEDIATOR_COUPLING_UNIT`) and its
        mass [MeV] (default 10).

    The mediator fields have the names of the model parameters they come from
    (:mod:`nuejax.model.physics_params`) and of the ``nuejax rates`` options (``--zprime-coupling``).

    Concrete (NumPy or Python) ``eps_L``/``eps_R`` of shape (3,) are taken as diagonals; a (3, 3)
    one that is not Hermitian, or any other shape, raises ``ValueError``; a concrete ``mu_nu``
    that looks like a value in μ_B warns (as :class:`~nuejax.physics.cross_section.NewPhysics`).
    JAX arrays and traced values are not checked.
    """

    __slots__ = ()

    def __new__(cls, eps_L=np.zeros((3, 3), dtype=complex), eps_R=np.zeros((3, 3), dtype=complex), mu_nu=0.0,
                zprime_coupling=0.0, zprime_mass=10.0, phi_coupling=0.0, phi_mass=10.0):
        check_mu_nu_unit(mu_nu)
        return super().__new__(cls, _nsi_matrix(eps_L, "eps_L"), _nsi_matrix(eps_R, "eps_R"), mu_nu,
                               zprime_coupling, zprime_mass, phi_coupling, phi_mass)

    @classmethod
    def from_new_physics(cls, physics: NewPhysics) -> "GeneralPhysics":
        """The flavour-diagonal point of :class:`~nuejax.physics.cross_section.NewPhysics`."""
        return cls(eps_L=hermitian(physics.eps_L), eps_R=hermitian(physics.eps_R), mu_nu=physics.mu_nu)

    @property
    def eps_V(self):
        r""":math:`\varepsilon^V`, the NSI of the matter potential in propagation: :math:`\varepsilon^L +
        \varepsilon^R` plus the vector mediator's forward-scattering (:math:`q^2 = 0`) term
        :math:`2 g_\nu^\alpha g_e/(2\sqrt2 G_F m^2)` on the diagonal (a contact potential: valid for
        masses far above the inverse size of the Sun, 10⁻¹⁷ MeV)."""
        v0 = 2.0 * vector_mediator_epsilon(jnp.zeros(()), self.zprime_coupling, self.zprime_mass)
        return jnp.asarray(self.eps_L) + jnp.asarray(self.eps_R) + jnp.diag(v0)


def vector_mediator_epsilon(T, coupling, mass):
    r"""The vector mediator as a :math:`T`-dependent vector NSI, shape ``T.shape + (3,)``:
    :math:`\varepsilon^L_{\alpha\alpha} = \varepsilon^R_{\alpha\alpha} = g_\nu^\alpha g_e /
    [2\sqrt2 G_F (2m_eT + m^2)]` (module docstring), ``coupling`` in units of
    :data:`MEDIATOR_COUPLING_UNIT` (scalar or (3,)), ``mass`` and ``T`` in MeV."""
    T = jnp.asarray(T)
    c = jnp.broadcast_to(jnp.asarray(coupling, dtype=jnp.result_type(T, float)), (3,))
    den = 2.0 * M_E * T + jnp.asarray(mass) ** 2
    # a massless mediator at T = 0 (a divergent propagator): zero there, double where (NaN-free grads)
    ok = den > 0
    inv = jnp.where(ok, 1.0 / jnp.where(ok, den, 1.0), 0.0)
    return (MEDIATOR_COUPLING_UNIT / (2.0 * math.sqrt(2.0) * G_F)) * c * inv[..., None]


def _scalar_shape(T, E, mass):
    """T(2 m_e + T) / (16 G_F^2 E^2 (2 m_e T + m^2)^2): the scalar cross section per unit coupling^2
    in units of sigma0 = 2 G_F^2 m_e / pi (times MEDIATOR_COUPLING_UNIT^2)."""
    den = 2.0 * M_E * T + jnp.asarray(mass) ** 2
    ok = den > 0  # a massless scalar at T = 0: zero there (double where), as for the magnetic moment
    r = jnp.where(ok, T / jnp.where(ok, den, 1.0), 0.0)  # T / den <= 1/(2 m_e): no float32 underflow
    return MEDIATOR_COUPLING_UNIT**2 * r * (2.0 * M_E + T) / jnp.where(ok, den, 1.0) / (16.0 * G_F**2 * E**2)


def scalar_mediator_dsigma_dT(T, E, coupling, mass, *, in_sigma0_units=False):
    r"""Scalar-mediator cross section :math:`g_\nu^2g_e^2\,m_eT(2m_e+T)/[8\pi E^2(2m_eT+m_\phi^2)^2]`
    [cm^2/MeV] (module docstring), flavour-universal, zero outside :math:`0 \le T \le T_{max}`;
    ``coupling`` = :math:`g_\nu g_e` in units of :data:`MEDIATOR_COUPLING_UNIT`, ``mass`` in MeV."""
    valid, T_s, E_s = kinematics(T, E)
    xs = jnp.asarray(coupling) ** 2 * _scalar_shape(T_s, E_s, mass)
    return jnp.where(valid, xs if in_sigma0_units else SIGMA0_PER_MEV * xs, 0.0)


def _anticommutator_half(a, b):
    return 0.5 * (a @ b + b @ a)


def _couplings(gL, gR, T, physics: GeneralPhysics):
    """G_L, G_R (..., 3, 3): SM couplings (+ the vector mediator's eps(T)) on the diagonal, plus eps."""
    v = vector_mediator_epsilon(T, physics.zprime_coupling, physics.zprime_mass)
    eye = jnp.eye(3)
    GL = (gL + v)[..., None] * eye + jnp.asarray(physics.eps_L)
    GR = (gR + v)[..., None] * eye + jnp.asarray(physics.eps_R)
    return GL, GR


def dsigma_dT_matrix(T, E, physics: GeneralPhysics = GeneralPhysics(), *, radiative=True,
                     sw2=SW2_LOW_ENERGY, in_sigma0_units=False):
    r"""The Hermitian matrix :math:`Q(T, E)` with :math:`d\sigma/dT = \mathrm{Re\,Tr}[\rho\,Q]`,
    shape ``broadcast(T, E).shape + (3, 3)`` (module docstring; weak, magnetic-moment and
    scalar-mediator parts). Zero outside the physical region."""
    if isinstance(physics, NewPhysics):
        physics = GeneralPhysics.from_new_physics(physics)
    valid, K, gL, gR = weak_kinematics(T, E, radiative=radiative, sw2=sw2)
    _, T_s, E_s = kinematics(T, E)
    GL, GR = _couplings(gL, gR, T_s, physics)
    Kc = K.astype(GL.dtype)[..., None, None, :]
    Q = Kc[..., 0] * (GL @ GL) + Kc[..., 1] * (GR @ GR) + Kc[..., 2] * _anticommutator_half(GL, GR)
    mm = dsigma_dT_mm_unchecked(T, E, physics.mu_nu, in_sigma0_units=True)  # (..., 3): diagonal in flavour
    scalar = jnp.asarray(physics.phi_coupling) ** 2 * _scalar_shape(T_s, E_s, physics.phi_mass)
    Q = Q + (mm + scalar[..., None])[..., None] * jnp.eye(3)
    unit = 1.0 if in_sigma0_units else SIGMA0_PER_MEV
    return jnp.where(valid[..., None, None], unit * Q, 0.0)


def dsigma_dT_state(T, E, rho, physics: GeneralPhysics = GeneralPhysics(), *, radiative=True,
                    sw2=SW2_LOW_ENERGY, in_sigma0_units=False):
    r""":math:`d\sigma/dT = \mathrm{Re\,Tr}[\rho\,Q(T, E)]` [cm^2/MeV] for the flavour state ``rho``
    (..., 3, 3) (trace 1 for a normalised state; :func:`~nuejax.physics.oscillation.density_matrix`),
    broadcast against ``T`` and ``E``; ``physics`` a :class:`GeneralPhysics` or a flavour-diagonal
    :class:`~nuejax.physics.cross_section.NewPhysics`."""
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
    f = f + R_mu @ mm_couplings2(physics.mu_nu, in_sigma0_units=True)
    # h_phi(T) E^2 = the scalar shape without its 1/E^2, which R_phi carries
    f = f + R_phi * jnp.asarray(physics.phi_coupling) ** 2 * _scalar_shape(T, 1.0, physics.phi_mass)
    return f

