"""Physical constants (MeV, cm, s units unless stated).

Values: CODATA 2018 / PDG 2024 (G_F, m_e, alpha, hbar*c, N_A); low-energy weak mixing angle
from J. Erler and M. J. Ramsey-Musolf, Phys. Rev. D 72, 073003 (2005); the MS-bar value at M_Z
and rho used with the Bahcall-Kamionkowski-Sirlin radiative corrections from J. N. Bahcall,
M. Kamionkowski and A. Sirlin, Phys. Rev. D 51, 6146 (1995), astro-ph/9502003.
"""

import math

__all__ = ["ALPHA", "BKS_RHO", "BKS_SW2_MZ", "FLAVOURS", "G_F", "HBARC2_MEV2_CM2", "HBARC_MEV_CM", "M_E", "N_A",
           "N_E_PER_100T", "PI_RE2_CM2", "SECONDS_PER_DAY", "SIGMA0_PER_MEV", "SW2_LOW_ENERGY",
           "V_CC_EV_PER_MOL_CM3"]

G_F = 1.1663788e-11  # Fermi constant [MeV^-2]  (1.1663788e-5 GeV^-2)
M_E = 0.51099895  # electron mass [MeV]
ALPHA = 1.0 / 137.035999084  # fine-structure constant
HBARC_MEV_CM = 1.973269804e-11  # hbar*c [MeV cm]
HBARC2_MEV2_CM2 = HBARC_MEV_CM**2  # (hbar c)^2 [MeV^2 cm^2]
N_A = 6.02214076e23  # Avogadro [1/mol]
SECONDS_PER_DAY = 86400.0

#: 2 G_F^2 m_e / pi in cm^2/MeV: the prefactor of the tree-level dsigma/dT (paper Eq. sm_cross_section).
SIGMA0_PER_MEV = 2.0 * G_F**2 * M_E / math.pi * HBARC2_MEV2_CM2

#: pi alpha^2 / m_e^2 = pi r_e^2 in cm^2 (prefactor of paper Eq. xs_mm).
PI_RE2_CM2 = math.pi * ALPHA**2 / M_E**2 * HBARC2_MEV2_CM2

#: low-energy (Q ~ 0) MS-bar sin^2 theta_W, Erler & Ramsey-Musolf (2005), used at tree level.
SW2_LOW_ENERGY = 0.23867

#: BKS electroweak parameters (Bahcall, Kamionkowski & Sirlin, Phys. Rev. D 51, 6146 (1995)).
BKS_RHO = 1.0126
BKS_SW2_MZ = 0.23129

#: sqrt(2) G_F N_A (hbar c)^3 in eV: matter potential V_CC per (electron density in mol/cm^3).
V_CC_EV_PER_MOL_CM3 = math.sqrt(2.0) * G_F * 1e-12 * N_A * (HBARC_MEV_CM * 1e6) ** 3

#: electrons per 100 t of pseudocumene-based scintillator (Borexino-like); the value Newtrinos.jl
#: (borexino_ph3.jl) uses with the Borexino Phase-III open data.
N_E_PER_100T = 3.307e31

FLAVOURS = ("e", "mu", "tau")
