r"""Recoil spectra at fixed recoil energies with the cross section precomputed on its quadrature nodes.

For a fixed set of recoil energies :math:`T_i` (a model's recoil-bin centres) the neutrino-energy
nodes :math:`E_{iq}` of Eq. (fT) (see :func:`~nuejax.physics.spectra.recoil_spectrum`) and their
weights are fixed, and so is the cross section there, up to its polynomial dependence on the new
physics (quadratic in the NSI couplings of each flavour, linear in :math:`\mu_\nu^2`). Only the
oscillated spectrum :math:`\lambda(E)\bar P_{e\alpha}(E)` changes with the oscillation parameters.
:class:`PrecomputedSpectrum` therefore stores 19 coefficient tensors per component -- one SM term
per flavour, five NSI terms per flavour, one magnetic-moment term -- and a call costs an
interpolation of :math:`\lambda\bar P` plus a contraction, instead of the cross section on
n_T × n_quad × 3 nodes. The coefficients are extracted from :func:`dsigma_dT` itself by evaluating
it at unit couplings (exact for a quadratic), so there is one implementation of the physics; the
tests compare the two routes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from .cross_section import NewPhysics, dsigma_dT
from .oscillation import OscillationParams
from .spectra import SolarSource, _interp_uniform, _weighted_flavour_table, energy_nodes

__all__ = ["PrecomputedSpectrum", "precompute_spectrum", "precomputed_recoil_spectrum", "nsi_coefficients",
           "probe_points", "coefficients_from_probes"]


def probe_points(mu_unit: float) -> NewPhysics:
    """17 probe points: 0; per flavour (ε_L=+1, ε_L=−1, ε_R=+1, ε_R=−1, ε_L=ε_R=+1); μ = ``mu_unit``."""
    pts = [(np.zeros(3), np.zeros(3), 0.0)]
    for a in range(3):
        e = np.zeros(3)
        e[a] = 1.0
        pts += [(e, 0 * e, 0.0), (-e, 0 * e, 0.0), (0 * e, e, 0.0), (0 * e, -e, 0.0), (e, e, 0.0)]
    pts.append((np.zeros(3), np.zeros(3), mu_unit))
    eL, eR, mu = (np.array(x) for x in zip(*pts))
    return NewPhysics(eps_L=eL, eps_R=eR, mu_nu=mu)


def coefficients_from_probes(f):
    """Polynomial coefficients (17, ...) from evaluations (17, ...) at :func:`probe_points`:
    [SM, then per flavour (L, R, LL, RR, LR), then μ²] (exact for a quadratic)."""
    f0 = f[0]
    rows = [f0]
    for a in range(3):
        lp, lm, rp, rm, lr = (f[1 + 5 * a + i] for i in range(5))
        cL, cLL = 0.5 * (lp - lm), 0.5 * (lp + lm) - f0
        cR, cRR = 0.5 * (rp - rm), 0.5 * (rp + rm) - f0
        rows += [cL, cR, cLL, cRR, lr - f0 - cL - cLL - cR - cRR]
    rows.append(f[-1] - f0)
    return jnp.stack(rows)


def nsi_coefficients(eps_L, eps_R):
    """(3, 5) multipliers of the NSI terms: per flavour (ε_L, ε_R, ε_L², ε_R², ε_L ε_R)."""
    eL, eR = jnp.asarray(eps_L), jnp.asarray(eps_R)
    return jnp.stack([eL, eR, eL**2, eR**2, eL * eR], axis=-1)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class PrecomputedSpectrum:
    """Fixed tensors for :func:`precomputed_recoil_spectrum` (a PyTree).

    ``energies`` (n_T, q) neutrino-energy nodes (for lines: (1, L), the line energies);
    ``weights`` (n_T, q) quadrature weights (lines: ones); ``sm`` (n_T, q, 3), ``nsi``
    (3, 5, n_T, q) and ``mm`` (n_T, q, 3) the cross-section coefficients in σ0 units (``mm`` per
    unit of ``mu_unit``²).
    """

    energies: jax.Array
    weights: jax.Array
    sm: jax.Array
    nsi: jax.Array
    mm: jax.Array
    mu_unit: float = field(metadata=dict(static=True))


def precompute_spectrum(source: SolarSource, T, *, radiative: bool = True, n_quad: int = 48,
                        mu_unit: float = 1e-11) -> PrecomputedSpectrum:
    """Precompute the cross-section coefficients of ``source`` at the recoil energies ``T`` (n_T,)."""
    T = jnp.asarray(T, dtype=source.energies.dtype)
    if source.is_line:
        E = jnp.broadcast_to(source.energies, T.shape + source.energies.shape)
        W = jnp.ones_like(E)
    else:
        E, W = energy_nodes(source, T, n_quad)
    probes = probe_points(mu_unit)
    xs = jax.vmap(lambda p: dsigma_dT(T[:, None], E, p, radiative=radiative, in_sigma0_units=True))(probes)
    c = coefficients_from_probes(xs)  # (17, n_T, q, 3)
    nsi = jnp.stack([c[1 + 5 * a:6 + 5 * a, ..., a] for a in range(3)])  # (3, 5, n_T, q)
    return PrecomputedSpectrum(E, W, c[0], nsi, c[16], float(mu_unit))


def precomputed_recoil_spectrum(source: SolarSource, pre: PrecomputedSpectrum, physics: NewPhysics,
                                osc: OscillationParams):
    r""":math:`f_T(T_i)` in σ0 units at the precomputed recoil energies; equals
    :func:`~nuejax.physics.spectra.recoil_spectrum` (``in_sigma0_units=True``) to rounding."""
    table = _weighted_flavour_table(source, osc)  # (n, 3): lambda * P_ealpha on the source grid
    if source.is_line:
        g = jnp.broadcast_to(table, pre.energies.shape + (3,))
    else:
        g = _interp_uniform(pre.energies, source.energies, table)  # (n_T, q, 3)
    wg = pre.weights[..., None] * g
    f = jnp.einsum("nqa,nqa->n", wg, pre.sm)
    f = f + jnp.einsum("ak,aknq,nqa->n", nsi_coefficients(physics.eps_L, physics.eps_R), pre.nsi, wg)
    mu = jnp.broadcast_to(jnp.asarray(physics.mu_nu), (3,)) / pre.mu_unit
    return f + jnp.einsum("a,nqa,nqa->n", mu**2, pre.mm, wg)
