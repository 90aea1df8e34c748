r"""Neutrino-electron elastic scattering cross sections :math:`d\sigma/dT` [cm^2/MeV].

Implements, for incident :math:`\nu_e, \nu_\mu, \nu_\tau` (flavour axis last, in that order):

* the tree-level Standard Model cross section, paper Eq. (sm_cross_section),
  :math:`\frac{d\sigma}{dT} = \frac{2G_F^2 m_e}{\pi}\left[g_L^2 + g_R^2(1-T/E)^2
  - g_L g_R\, m_e T/E^2\right]`, with :math:`g_L^e = \tfrac12 + s_W^2`,
  :math:`g_L^{\mu,\tau} = -\tfrac12 + s_W^2`, :math:`g_R = s_W^2`;
* flavour-diagonal NSI, paper Eqs. (g_tilde), (xs_nsi): :math:`g_{L,R}^\alpha \to g_{L,R}^\alpha
  + \varepsilon^{L,R}_{\alpha\alpha}`;
* the neutrino magnetic moment, paper Eq. (xs_mm),
  :math:`\frac{d\sigma^{MM}}{dT} = \frac{\pi\alpha^2}{m_e^2}(\mu_\nu/\mu_B)^2 (1/T - 1/E)`,
  added incoherently, paper Eq. (xs_total); every ``mu_nu`` argument is in units of
  :data:`MU_NU_UNIT` :math:`= 10^{-11}\mu_B` (``mu_nu=3.0`` means :math:`3\times10^{-11}\mu_B`);
* the one-loop electroweak and QED radiative corrections of J. N. Bahcall, M. Kamionkowski and
  A. Sirlin, Phys. Rev. D 51, 6146 (1995) [astro-ph/9502003] (BKS), their Eqs. (A1)-(A3) and the
  QED functions :math:`f_-, f_+, f_\pm` of their Appendix, as the default precision model.

Every function is a pure ``jax.numpy`` function: ``jit``, ``vmap`` and ``grad`` safe. Outside the
physical region :math:`0 \le T \le T_{max}(E)` the cross section is exactly zero, and all
singular sub-expressions are evaluated on guarded arguments (the "double where" pattern), so
neither values nor gradients are NaN at :math:`T = 0` or :math:`T = T_{max}`.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..constants import (
    ALPHA,
    BKS_RHO,
    BKS_SW2_MZ,
    M_E,
    PI_RE2_CM2,
    SIGMA0_PER_MEV,
    SW2_LOW_ENERGY,
)

__all__ = [
    "MU_NU_UNIT",
    "NewPhysics",
    "t_max",
    "e_min",
    "tree_couplings",
    "bks_couplings",
    "bks_qed_functions",
    "weak_kinematics",
    "dsigma_dT_weak",
    "dsigma_dT_mm",
    "dsigma_dT",
    "sigma_total",
]

#: Lower guard on T [MeV] inside the radiative-correction functions, whose individual terms
#: (ln z, 1/beta, ...) are singular at T = 0 although their combination has a finite limit.
#: 1e-7 MeV = 0.1 eV is far below any recoil threshold; the functions are flat there.
_T_GUARD = 1e-7
#: Lower guard on the argument of u = ln(1 - z - m_e/(E_e + l)), which vanishes at T = T_max
#: (the integrable soft-photon logarithm of BKS).
_U_GUARD = 1e-15
#: Unit of every ``mu_nu`` that nuejax takes (``NewPhysics.mu_nu``, the ``mu_nu`` model parameter,
#: ``nuejax rates --mu-nu``): 1e-11 Bohr magnetons. ``mu_nu=3.0`` means 3e-11 mu_B.
MU_NU_UNIT = 1e-11
#: sqrt(pi r_e^2 / sigma0) x MU_NU_UNIT: multiplies mu_nu [MU_NU_UNIT] so that its square is the
#: magnetic-moment cross section in units of SIGMA0_PER_MEV x MeV.
MM_SCALE_SIGMA0 = math.sqrt(PI_RE2_CM2 / SIGMA0_PER_MEV) * MU_NU_UNIT
#: sqrt(pi r_e^2) x MU_NU_UNIT [cm]: the same in cm^2/MeV.
_MM_SCALE_CM = math.sqrt(PI_RE2_CM2) * MU_NU_UNIT
#: Concrete |mu_nu| values in (0, this) are taken for a value meant in mu_B and warned about.
_MU_NU_SUSPICIOUS = 1e-6


def check_mu_nu_unit(mu_nu) -> None:
    """Warn when a concrete ``mu_nu`` looks like a value in mu_B (0 < |mu_nu| < 1e-6).

    Only Python and NumPy numbers and arrays are inspected: JAX arrays and tracers (under ``jit``,
    ``vmap``, ``grad``) and anything else (PyTree placeholders) pass silently."""
    if isinstance(mu_nu, bool) or not isinstance(mu_nu, (numbers.Real, np.ndarray, np.generic)):
        return
    try:
        a = np.abs(np.asarray(mu_nu, dtype=np.float64))
    except (TypeError, ValueError):
        return
    if a.size == 0 or not np.all(np.isfinite(a)):
        return
    big = float(a.max())
    if 0.0 < big < _MU_NU_SUSPICIOUS:
        scaled = np.asarray(mu_nu, dtype=np.float64) / MU_NU_UNIT
        guess = (f"{float(scaled):g}" if scaled.ndim == 0
                 else "[" + ", ".join(f"{x:g}" for x in scaled.ravel()) + "]")
        warnings.warn(f"mu_nu = {mu_nu!r} looks like a value in Bohr magnetons: mu_nu is in units of "
                      f"1e-11 mu_B; did you mean mu_nu={guess}?", UserWarning, stacklevel=3)


class _NewPhysicsFields(NamedTuple):
    eps_L: jax.Array | tuple = (0.0, 0.0, 0.0)
    eps_R: jax.Array | tuple = (0.0, 0.0, 0.0)
    mu_nu: jax.Array | float = 0.0


class NewPhysics(_NewPhysicsFields):
    r"""New-physics point: flavour-diagonal NSI couplings and the neutrino magnetic moment.

    A PyTree (NamedTuple), so it can be ``vmap``-ped over and differentiated.

    Attributes
    ----------
    eps_L, eps_R:
        :math:`\varepsilon^{eL}_{\alpha\alpha}`, :math:`\varepsilon^{eR}_{\alpha\alpha}` for
        :math:`\alpha = e, \mu, \tau` (shape ``(3,)``), paper Eq. (g_tilde).
    mu_nu:
        magnetic moment in units of :data:`MU_NU_UNIT` :math:`= 10^{-11}\mu_B` (``mu_nu=3.0`` is
        :math:`3\times10^{-11}\mu_B`), the unit of the ``mu_nu`` model parameter: a scalar (one
        effective :math:`\mu_\nu` for every flavour, as in the paper) or shape ``(3,)`` (one per
        flavour). A concrete (Python or NumPy) value with :math:`0 < |\mu_\nu| < 10^{-6}` looks
        like a value in :math:`\mu_B` and raises a ``UserWarning``; traced values are not checked.
    """

    __slots__ = ()

    def __new__(cls, eps_L=(0.0, 0.0, 0.0), eps_R=(0.0, 0.0, 0.0), mu_nu=0.0):
        check_mu_nu_unit(mu_nu)
        return super().__new__(cls, eps_L, eps_R, mu_nu)


def t_max(E):
    r"""Kinematic end point :math:`T_{max} = 2E^2/(m_e + 2E)` [MeV] for neutrino energy ``E``."""
    E = jnp.asarray(E)
    return 2.0 * E**2 / (M_E + 2.0 * E)


def e_min(T):
    r"""Smallest neutrino energy that can give recoil ``T``: :math:`E_{min} = \tfrac12[T + \sqrt{T^2 + 2 m_e T}]`."""
    T = jnp.asarray(T)
    return 0.5 * (T + jnp.sqrt(jnp.maximum(T * (T + 2.0 * M_E), 0.0)))


def tree_couplings(sw2=SW2_LOW_ENERGY):
    r"""Tree-level chiral couplings :math:`(g_L, g_R)` for :math:`\nu_e, \nu_\mu, \nu_\tau`.

    Paper Sec. II.A: :math:`g_L^e = \tfrac12 + s_W^2`, :math:`g_L^{\mu,\tau} = -\tfrac12 + s_W^2`,
    :math:`g_R^\alpha = s_W^2`. Default :math:`s_W^2 = 0.23867` (low-energy MS-bar value,
    Erler & Ramsey-Musolf, PRD 72, 073003 (2005)). Returns two arrays of shape ``(3,)``.
    """
    sw2 = jnp.asarray(sw2)
    gL = jnp.stack([0.5 + sw2, -0.5 + sw2, -0.5 + sw2])
    gR = jnp.stack([sw2, sw2, sw2])
    return gL, gR


def kinematics(T, E):
    """Physical-region mask and guarded copies of T and E (for the double-where pattern)."""
    T = jnp.asarray(T)
    E = jnp.asarray(E)
    T, E = jnp.broadcast_arrays(T, E)
    valid = (T >= 0.0) & (E > 0.0) & (T <= t_max(jnp.where(E > 0.0, E, 1.0)))
    E_safe = jnp.where(E > 0.0, E, 1.0)
    T_safe = jnp.where(valid, T, 0.5 * t_max(E_safe))
    return valid, T_safe, E_safe


def _bks_loop_function(T):
    r"""BKS Eq. (A3): :math:`I(T) = \tfrac16[\tfrac13 + (3 - x^2)(\tfrac12 x \ln\frac{x+1}{x-1} - 1)]`,
    :math:`x = \sqrt{1 + 2m_e/T}` (T already guarded > 0)."""
    x = jnp.sqrt(1.0 + 2.0 * M_E / T)
    # ln((x+1)/(x-1)) = log1p(2/(x-1)) keeps precision when x is large (T -> 0).
    return (1.0 / 6.0) * (1.0 / 3.0 + (3.0 - x**2) * (0.5 * x * jnp.log1p(2.0 / (x - 1.0)) - 1.0))


def bks_couplings(T, rho=BKS_RHO, sw2_mz=BKS_SW2_MZ):
    r"""Energy-dependent BKS couplings, converted to the tree-level sign convention.

    BKS Eqs. (A1)-(A2) (Bahcall, Kamionkowski & Sirlin, Phys. Rev. D 51, 6146 (1995)):
    :math:`g_L^{\nu_e} = \rho(\tfrac12 - \kappa_e\hat s^2) - 1`,
    :math:`g_L^{\nu_{\mu,\tau}} = \rho(\tfrac12 - \kappa_\mu \hat s^2)`,
    :math:`g_R = -\rho\kappa\hat s^2`, with :math:`\kappa_e = 0.9791 + 0.0097 I(T)`,
    :math:`\kappa_\mu = 0.9970 - 0.00037 I(T)`, :math:`\rho = 1.0126`, :math:`\hat s^2 = 0.23129`.
    BKS's couplings are the negatives of the tree-level ones (same squares and product); they are
    returned here negated, so that NSI shifts :math:`g \to g + \varepsilon` keep the paper's sign.

    Returns ``(gL, gR)`` with a trailing flavour axis of size 3 (broadcast over ``T``).
    """
    T = jnp.maximum(jnp.asarray(T), _T_GUARD)
    i_t = _bks_loop_function(T)
    kappa_e = 0.9791 + 0.0097 * i_t
    kappa_mu = 0.9970 - 0.00037 * i_t
    gL_e = rho * (0.5 - kappa_e * sw2_mz) - 1.0
    gL_mu = rho * (0.5 - kappa_mu * sw2_mz)
    gR_e = -rho * kappa_e * sw2_mz
    gR_mu = -rho * kappa_mu * sw2_mz
    gL = -jnp.stack([gL_e, gL_mu, gL_mu], axis=-1)
    gR = -jnp.stack([gR_e, gR_mu, gR_mu], axis=-1)
    return gL, gR


def _neg_dilog(x):
    r""":math:`L(x) = \int_0^x \ln|1-t|/t\,dt = -\mathrm{Li}_2(x)`, for :math:`0 \le x \le 1`."""
    return -jax.scipy.special.spence(1.0 - x)


def bks_qed_functions(T, E):
    r"""QED correction functions :math:`f_-(z), f_+(z), f_\pm(z)` of BKS (Appendix, Eqs. A4-A6).

    With :math:`E_e = T + m_e`, :math:`l = \sqrt{E_e^2 - m_e^2}`, :math:`\beta = l/E_e`,
    :math:`z = T/E_\nu`, :math:`h = (E_e/l)\ln((E_e + l)/m_e) - 1`,
    :math:`u = \ln(1 - z - m_e/(E_e + l))` and :math:`L(x) = -\mathrm{Li}_2(x)`:

    .. math::
        f_- &= h[2u - \ln(1-z) - \tfrac12\ln z - \tfrac5{12}] + \tfrac12[L(z) - L(\beta)]
              - \tfrac12\ln^2(1-z) - (\tfrac{11}{12} + \tfrac z2)\ln(1-z)
              + z[\ln z + \tfrac12\ln(2E_\nu/m_e)] - (\tfrac{31}{18} + \tfrac1{12}\ln z)\beta
              - \tfrac{11}{12}z + \tfrac{z^2}{24} \\
        f_+ &= (1-z)^{-2}\{h[(1-z)^2(2u - \ln(1-z) - \tfrac12\ln z - \tfrac23)
              - \tfrac12(z^2\ln z + 1 - z)]
              - \tfrac12(1-z)^2[\ln^2(1-z) + \beta(L(1-z) - \ln z\ln(1-z))] \\
            &\quad + \ln(1-z)[\tfrac12 z^2\ln z + \tfrac13(1-z)(2z - \tfrac12)]
              - \tfrac12 z^2 L(1-z) - \tfrac13 z(1-2z)\ln z - \tfrac16 z(1-z)
              - \tfrac{\beta}{12}[\ln z + (1-z)(115 - 109z)/6]\} \\
        f_\pm &= 2hu

    Arguments must lie in the physical region; :math:`T` is guarded below by
    :math:`\min(0.1\,\mathrm{eV}, T_{max}/2)` and the
    argument of :math:`u` (which vanishes at :math:`T_{max}`, the integrable soft-photon
    logarithm) by 1e-15, so the result is finite everywhere.
    """
    E = jnp.asarray(E)
    # The guard must stay inside the kinematic range even for E ~ 1e-7 MeV, hence the min.
    T = jnp.maximum(jnp.asarray(T), jnp.minimum(_T_GUARD, 0.5 * t_max(E)))
    Ee = T + M_E
    l = jnp.sqrt(T * (T + 2.0 * M_E))
    beta = l / Ee
    z = T / E
    h = (Ee / l) * jnp.log1p((T + l) / M_E) - 1.0
    u = jnp.log(jnp.maximum(1.0 - z - M_E / (Ee + l), _U_GUARD))
    lz = jnp.log(z)
    l1z = jnp.log1p(-z)
    f_minus = (
        h * (2.0 * u - l1z - 0.5 * lz - 5.0 / 12.0)
        + 0.5 * (_neg_dilog(z) - _neg_dilog(beta))
        - 0.5 * l1z**2
        - (11.0 / 12.0 + 0.5 * z) * l1z
        + z * (lz + 0.5 * jnp.log(2.0 * E / M_E))
        - (31.0 / 18.0 + lz / 12.0) * beta
        - 11.0 / 12.0 * z
        + z**2 / 24.0
    )
    omz = 1.0 - z
    f_plus = (
        h * (omz**2 * (2.0 * u - l1z - 0.5 * lz - 2.0 / 3.0) - 0.5 * (z**2 * lz + 1.0 - z))
        - 0.5 * omz**2 * (l1z**2 + beta * (_neg_dilog(omz) - lz * l1z))
        + l1z * (0.5 * z**2 * lz + (1.0 / 3.0) * omz * (2.0 * z - 0.5))
        - 0.5 * z**2 * _neg_dilog(omz)
        - (1.0 / 3.0) * z * (1.0 - 2.0 * z) * lz
        - (1.0 / 6.0) * z * omz
        - (beta / 12.0) * (lz + omz * (115.0 - 109.0 * z) / 6.0)
    ) / omz**2
    f_pm = 2.0 * h * u
    return f_minus, f_plus, f_pm


def as_float(x):
    return jnp.asarray(x, dtype=jnp.result_type(float))


def weak_kinematics(T, E, *, radiative=True, sw2=SW2_LOW_ENERGY):
    r"""The flavour-independent kinematic factors and the couplings of the weak cross section.

    The weak :math:`d\sigma/dT` (tree level or BKS) factorises as

    .. math::
        \frac{d\sigma}{dT} = \sigma_0\big[g_L^2 K_A + g_R^2 K_B + g_L g_R K_C\big],\quad
        K_A = 1 + \tfrac\alpha\pi f_-,\ K_B = (1-z)^2(1 + \tfrac\alpha\pi f_+),\
        K_C = -\tfrac{m_e z}{E}(1 + \tfrac\alpha\pi f_\pm),

    :math:`z = T/E`, :math:`\sigma_0 = 2G_F^2m_e/\pi` (BKS Eq. A1; tree level: :math:`f = 0`),
    where only the couplings :math:`g_{L,R}` depend on the flavour (BKS: and on :math:`T`).

    Returns ``(valid, K, gL, gR)``: the physical-region mask ``broadcast(T, E).shape``, ``K`` of
    shape ``broadcast(T, E).shape + (3,)`` (:math:`K_A, K_B, K_C`, guarded finite outside the
    physical region, where ``valid`` is False) and the couplings ``gL``, ``gR`` of shape
    ``(..., 3)`` (flavours e, μ, τ) in the tree-level sign convention.
    """
    valid, T_s, E_s = kinematics(T, E)
    z = T_s / E_s
    if radiative:
        gL, gR = bks_couplings(T_s)
        f_minus, f_plus, f_pm = bks_qed_functions(T_s, E_s)
        c = ALPHA / np.pi
        k_minus, k_plus, k_pm = (1.0 + c * f for f in (f_minus, f_plus, f_pm))
    else:
        gL, gR = tree_couplings(sw2)
        k_minus = k_plus = k_pm = jnp.ones_like(z)
    K = jnp.stack([k_minus, (1.0 - z) ** 2 * k_plus, -(M_E * z / E_s) * k_pm], axis=-1)
    return valid, K, gL, gR


def dsigma_dT_weak(T, E, eps_L=(0.0, 0.0, 0.0), eps_R=(0.0, 0.0, 0.0), *, radiative=True,
                   sw2=SW2_LOW_ENERGY, in_sigma0_units=False):
    r"""Weak (SM + flavour-diagonal NSI) :math:`d\sigma_\alpha/dT` in cm^2/MeV, shape ``(..., 3)``.

    ``radiative=False``: paper Eqs. (sm_cross_section), (g_tilde), (xs_nsi) with tree couplings at
    ``sw2``. ``radiative=True`` (default): BKS Eq. (A1) with the energy-dependent couplings of
    :func:`bks_couplings` shifted by :math:`\varepsilon` in the tree-level sign convention, and the
    QED factors :math:`1 + (\alpha/\pi) f`:

    .. math::
        \frac{d\sigma}{dT} = \frac{2G_F^2 m_e}{\pi}\Big[\tilde g_L^2(1 + \tfrac\alpha\pi f_-)
        + \tilde g_R^2(1-z)^2(1 + \tfrac\alpha\pi f_+)
        - \tilde g_L \tilde g_R \tfrac{m_e z}{E}(1 + \tfrac\alpha\pi f_\pm)\Big].

    ``T`` and ``E`` [MeV] broadcast against each other; zero outside :math:`0 \le T \le T_{max}(E)`.
    ``in_sigma0_units=True`` returns the result in units of :data:`SIGMA0_PER_MEV`
    (:math:`2G_F^2 m_e/\pi` = 1.72e-44 cm^2/MeV) -- needed in float32, whose range ends near 1e-38.
    The kinematic factors are those of :func:`weak_kinematics`.
    """
    valid, K, gL, gR = weak_kinematics(T, E, radiative=radiative, sw2=sw2)
    gL = gL + as_float(eps_L)
    gR = gR + as_float(eps_R)
    K = K[..., None, :]
    xs = gL**2 * K[..., 0] + gR**2 * K[..., 1] + gL * gR * K[..., 2]
    unit = 1.0 if in_sigma0_units else SIGMA0_PER_MEV
    return jnp.where(valid[..., None], unit * xs, 0.0)


def dsigma_dT_mm(T, E, mu_nu, *, in_sigma0_units=False):
    r"""Magnetic-moment cross section, paper Eq. (xs_mm), in cm^2/MeV, shape ``(..., 3)``.

    :math:`\frac{\pi\alpha^2}{m_e^2}(\mu_\nu/\mu_B)^2(1/T - 1/E)` for :math:`0 < T \le T_{max}(E)`,
    zero elsewhere (including :math:`T = 0`, where the density diverges). ``mu_nu`` in units of
    :data:`MU_NU_UNIT` :math:`= 10^{-11}\mu_B`: a scalar (flavour-universal effective moment) or
    shape ``(3,)``.
    ``in_sigma0_units`` as in :func:`dsigma_dT_weak`. A concrete ``mu_nu`` that looks like a
    value in :math:`\mu_B` warns, as in :class:`NewPhysics`.
    """
    check_mu_nu_unit(mu_nu)
    return dsigma_dT_mm_unchecked(T, E, mu_nu, in_sigma0_units=in_sigma0_units)


def mm_shape(T, E):
    """1/T - 1/E where 0 < T <= T_max(E), zero elsewhere (T = 0 included; NaN-free gradients)."""
    valid, T_s, E_s = kinematics(T, E)
    valid = valid & (jnp.asarray(T) > 0.0)
    T_s = jnp.where(valid, T_s, 0.5 * t_max(E_s))  # keep 1/T finite where masked (NaN-free grad)
    return jnp.where(valid, 1.0 / T_s - 1.0 / E_s, 0.0)


def mm_couplings2(mu_nu, *, in_sigma0_units=False):
    """(3,) squared moments times pi r_e^2 (cm^2, or sigma0 x MeV units): the magnetic-moment
    cross section is ``mm_shape(T, E) * mm_couplings2(mu_nu)``."""
    # Scale mu before squaring: (3e-11 mu_B)^2 ~ 1e-21 and pi r_e^2 ~ 2.5e-25 cm^2 are both
    # hostile to float32, their product in sigma0 units is O(0.01).
    scale = MM_SCALE_SIGMA0 if in_sigma0_units else _MM_SCALE_CM
    return (jnp.broadcast_to(as_float(mu_nu), (3,)) * scale) ** 2


def dsigma_dT_mm_unchecked(T, E, mu_nu, *, in_sigma0_units=False):
    return mm_shape(T, E)[..., None] * mm_couplings2(mu_nu, in_sigma0_units=in_sigma0_units)


def dsigma_dT(T, E, physics: NewPhysics = NewPhysics(), *, radiative=True, sw2=SW2_LOW_ENERGY,
              in_sigma0_units=False):
    r"""Total :math:`d\sigma_\alpha/dT` for each incident flavour, paper Eq. (xs_total) [cm^2/MeV].

    Weak part (:func:`dsigma_dT_weak`, BKS by default, NSI-shifted) plus the incoherent
    magnetic-moment part (:func:`dsigma_dT_mm`). Output shape ``broadcast(T, E).shape + (3,)``,
    flavours ordered :math:`e, \mu, \tau`.
    """
    xs = dsigma_dT_weak(T, E, physics.eps_L, physics.eps_R, radiative=radiative, sw2=sw2,
                        in_sigma0_units=in_sigma0_units)
    return xs + dsigma_dT_mm_unchecked(T, E, physics.mu_nu, in_sigma0_units=in_sigma0_units)


def gauss_legendre_regularised(n):
    """Gauss-Legendre nodes/weights on [0, 1] after the map x = 3s^2 - 2s^3.

    The map has zero derivative at both ends, which turns integrable end-point singularities
    (the BKS log at T_max, square-root edges of beta spectra) into smooth integrands.
    """
    s, w = np.polynomial.legendre.leggauss(n)
    s = 0.5 * (s + 1.0)
    w = 0.5 * w
    x = 3.0 * s**2 - 2.0 * s**3
    return x, w * 6.0 * s * (1.0 - s)


def sigma_total(E, physics: NewPhysics = NewPhysics(), *, T_min=0.0, radiative=True,
                sw2=SW2_LOW_ENERGY, n_quad=64, in_sigma0_units=False):
    r"""Integrated cross section :math:`\int_{T_{min}}^{T_{max}(E)} d\sigma_\alpha/dT\,dT` [cm^2].

    Gauss-Legendre quadrature (``n_quad`` nodes, end-point regularised) of :func:`dsigma_dT`.
    Returns shape ``E.shape + (3,)`` (in units of :data:`SIGMA0_PER_MEV` x MeV if
    ``in_sigma0_units``). With a non-zero magnetic moment ``T_min`` must be > 0
    (the :math:`1/T` term diverges logarithmically).
    """
    E = jnp.asarray(E)
    x, w = gauss_legendre_regularised(n_quad)
    lo = jnp.broadcast_to(jnp.asarray(T_min, dtype=E.dtype), E.shape)
    hi = jnp.maximum(t_max(E), lo)
    width = hi - lo
    T = lo[..., None] + width[..., None] * x
    xs = dsigma_dT(T, E[..., None], physics, radiative=radiative, sw2=sw2, in_sigma0_units=in_sigma0_units)
    return jnp.einsum("...q,...qf->...f", width[..., None] * w, xs)
