r"""Beta-decay spectra: Fermi function and allowed / forbidden shapes (host-side numpy).

Electron or positron kinetic-energy spectrum (e.g. Konopinski, *The Theory of Beta
Radioactivity* (1966); Behrens & Bühring, *Electron Radial Wave Functions and Nuclear
Beta-decay* (1982)), with :math:`W` the lepton total energy and :math:`p` its momentum in units
of :math:`m_e`, :math:`W_0` the end-point total energy and :math:`q = W_0 - W` the neutrino
momentum:

.. math::  \frac{dN}{dW} \propto p\,W\,q^2\,F(Z, W)\,C(W).

:math:`F` is the relativistic point-charge Fermi function with a finite nuclear radius
:math:`R = 1.2A^{1/3}` fm,
:math:`F = 2(1+\gamma)(2pR)^{2(\gamma-1)} e^{\pi\eta}|\Gamma(\gamma+i\eta)|^2/\Gamma(2\gamma+1)^2`,
:math:`\gamma = \sqrt{1-(\alpha Z)^2}`, :math:`\eta = \pm\alpha Z W/p` (+ for electrons, − for
positrons), Z the daughter's charge. :math:`C(W)` is the shape factor (1 for allowed decays).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import loggamma

from ..constants import ALPHA, M_E

__all__ = ["fermi_function", "beta_kinetic_spectrum"]

_HBAR_OVER_MEC_FM = 386.15926796


def fermi_function(Z: int, W, A: int, *, positron: bool):
    """Relativistic Fermi function F(Z, W) for the daughter charge ``Z`` (module docstring)."""
    W = np.asarray(W, dtype=float)
    p = np.sqrt(np.maximum(W**2 - 1.0, 1e-300))
    gamma = math.sqrt(1.0 - (ALPHA * Z) ** 2)
    eta = (-1.0 if positron else 1.0) * ALPHA * Z * W / p
    R = 1.2 * A ** (1.0 / 3.0) / _HBAR_OVER_MEC_FM
    log_f = (
        math.log(2.0 * (1.0 + gamma))
        + 2.0 * (gamma - 1.0) * np.log(2.0 * p * R)
        + math.pi * eta
        + 2.0 * np.real(loggamma(gamma + 1j * eta))
        - 2.0 * float(np.real(loggamma(2.0 * gamma + 1.0)))
    )
    return np.exp(log_f)


def beta_kinetic_spectrum(T, Q: float, Z_daughter: int, A: int, *, positron: bool = False, shape_factor=None):
    """Unnormalised dN/dT of the emitted electron (positron) at kinetic energies ``T`` [MeV].

    ``Q`` is the end-point kinetic energy [MeV]; ``shape_factor(W, p, q)`` (all in m_e units)
    gives C; zero outside 0 < T < Q.
    """
    T = np.asarray(T, dtype=float)
    inside = (T > 0) & (T < Q)
    W = np.where(inside, 1.0 + T / M_E, 2.0)
    p = np.sqrt(W**2 - 1.0)
    q = 1.0 + Q / M_E - W
    C = 1.0 if shape_factor is None else shape_factor(W, p, q)
    dens = p * W * q**2 * fermi_function(Z_daughter, W, A, positron=positron) * C
    return np.where(inside, dens, 0.0)
