r"""Analytic Borexino-like liquid-scintillator response :math:`P(N_p \mid T)`.

The chain (paper Sec. II.D and Sec. VI.A):

1. **Stopping power** of electrons in the scintillator, the Bethe formula for electrons
   (Rohrlich & Carlson, Phys. Rev. 93, 38 (1954); ICRU Report 37 (1984), Eq. 2.2), without the
   density-effect correction (negligible below a few MeV):

   .. math::
       \frac{dE}{dx} = \frac{2\pi r_e^2 m_e n_{el}}{\beta^2}\left[
       \ln\frac{\tau^2(\tau+2)}{2(I/m_e)^2} + 1 - \beta^2
       + \frac{\tau^2/8 - (2\tau+1)\ln 2}{(\tau+1)^2}\right],\qquad \tau = T/m_e,

   for pseudocumene (C₉H₁₂, ρ = 0.876 g/cm³, Z/A = 66/120.19, I = 60 eV) by default.
2. **Birks quenching** (J. B. Birks, Proc. Phys. Soc. A 64, 874 (1951)): the visible energy of an
   electron of kinetic energy T is :math:`E_q(T) = \int_0^T dE / (1 + k_B\,dE/dx)`.
3. **Light yield**: :math:`\langle N_p\rangle = Y\,E_q(T)` photoelectrons (default Y = 500/MeV).
4. **Resolution**: Gaussian, variance :math:`\sigma^2 = \langle N_p\rangle + v_0 + (v_1\langle
   N_p\rangle)^2` (photoelectron statistics, plus optional constant and proportional terms; the
   paper's closure uses :math:`v_0 = v_1 = 0`).

:math:`P(j \mid T)`, the probability of landing in observable bin :math:`j` with edges
:math:`[a_j, b_j)`, is the Gaussian integral
:math:`\tfrac12[\mathrm{erf}((b_j - \mu)/\sqrt2\sigma) - \mathrm{erf}((a_j - \mu)/\sqrt2\sigma)]`.
Everything after the fixed stopping-power table is ``jax.numpy`` and differentiable in
:math:`Y, k_B, v_0, v_1`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..constants import ALPHA, HBARC_MEV_CM, M_E, N_A
from ..precision import resolve_dtype

__all__ = [
    "ResponseParams",
    "Scintillator",
    "PSEUDOCUMENE",
    "electron_stopping_power",
    "QuenchingTable",
    "quenching_table",
    "quenched_energy",
    "mean_photoelectrons",
    "photoelectron_variance",
    "bin_probabilities",
    "gaussian_bin_probabilities",
    "gaussian_fold",
    "unit_bin_edges",
]


class ResponseParams(NamedTuple):
    """Parameters of the analytic response (a PyTree).

    ``light_yield`` [photoelectrons/MeV], ``kB`` [cm/MeV] (Birks), ``var_const`` [pe²] and
    ``var_rel`` (dimensionless) extra variance terms.
    """

    light_yield: float | jax.Array = 500.0
    kB: float | jax.Array = 0.011
    var_const: float | jax.Array = 0.0
    var_rel: float | jax.Array = 0.0


@dataclass(frozen=True)
class Scintillator:
    """Material constants for the stopping power: density [g/cm³], Z/A, mean excitation I [MeV]."""

    name: str
    density: float
    z_over_a: float
    mean_excitation: float

    @property
    def electron_density(self) -> float:
        """Electrons per cm³."""
        return self.density * N_A * self.z_over_a


#: Pseudocumene, C9H12 (Borexino's solvent; the PPO admixture is neglected).
PSEUDOCUMENE = Scintillator("pseudocumene", 0.876, 66.0 / 120.19, 60e-6)


def electron_stopping_power(T, material: Scintillator = PSEUDOCUMENE):
    """Collision stopping power dE/dx [MeV/cm] of electrons of kinetic energy ``T`` [MeV] (numpy).

    Bethe formula for electrons (module docstring). Below 1 keV, where the formula fails, the
    value at 1 keV is used; the quenched energy there is below 1 keV anyway.
    """
    T = np.maximum(np.asarray(T, dtype=float), 1e-3)
    tau = T / M_E
    beta2 = tau * (tau + 2.0) / (tau + 1.0) ** 2
    re = ALPHA * HBARC_MEV_CM / M_E  # classical electron radius [cm]
    pref = 2.0 * math.pi * re**2 * M_E * material.electron_density
    i_rel = material.mean_excitation / M_E
    bracket = (
        np.log(tau**2 * (tau + 2.0) / (2.0 * i_rel**2))
        + 1.0 - beta2
        + (tau**2 / 8.0 - (2.0 * tau + 1.0) * math.log(2.0)) / (tau + 1.0) ** 2
    )
    return pref / beta2 * bracket


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class QuenchingTable:
    """Fixed energy grid and stopping power for the Birks integral (a PyTree)."""

    energy: jax.Array  # (n,) MeV, starting at 0
    stopping_power: jax.Array  # (n,) MeV/cm
    sqrt_step: float = field(metadata=dict(static=True))


def quenching_table(t_max: float = 20.0, n: int = 4001, material: Scintillator = PSEUDOCUMENE,
                    dtype=None) -> QuenchingTable:
    """Tabulate dE/dx on a grid uniform in :math:`\\sqrt{T}` from 0 to ``t_max`` [MeV].

    The :math:`\\sqrt{T}` spacing puts nodes where the quenching varies fastest (low T).
    """
    dt = resolve_dtype(dtype)
    s = np.linspace(0.0, math.sqrt(t_max), n)
    E = s**2
    return QuenchingTable(jnp.asarray(E, dtype=dt), jnp.asarray(electron_stopping_power(E, material), dtype=dt),
                          float(s[1] - s[0]))


def quenched_energy(T, kB, table: QuenchingTable):
    r"""Birks visible energy :math:`E_q(T) = \int_0^T dE/(1 + k_B\,dE/dx)` [MeV].

    Cumulative trapezoid integral on the table, then linear interpolation in :math:`\sqrt{T}`
    (uniform grid: index arithmetic, differentiable in ``kB``). ``T`` beyond the table is an
    error of the caller; it is clamped to the table's end.
    """
    integrand = 1.0 / (1.0 + kB * table.stopping_power)
    dE = jnp.diff(table.energy)
    cum = jnp.concatenate([jnp.zeros(1, dtype=dE.dtype), jnp.cumsum(0.5 * dE * (integrand[1:] + integrand[:-1]))])
    T = jnp.asarray(T)
    s = jnp.sqrt(jnp.maximum(T, 0.0)) / table.sqrt_step
    n = table.energy.shape[0]
    i = jnp.clip(jnp.floor(s).astype(jnp.int32), 0, n - 2)
    # Within a grid cell the integrand is ~constant: interpolate E_q linearly in T, not in sqrt(T).
    t0, t1 = table.energy[i], table.energy[i + 1]
    frac = jnp.clip((T - t0) / (t1 - t0), 0.0, 1.0)
    return cum[i] + frac * (cum[i + 1] - cum[i])


def mean_photoelectrons(T, params: ResponseParams, table: QuenchingTable):
    """:math:`\\langle N_p\\rangle(T) = Y\\,E_q(T)`."""
    return params.light_yield * quenched_energy(T, params.kB, table)


def photoelectron_variance(mean, params: ResponseParams):
    """:math:`\\sigma^2 = \\langle N_p\\rangle + v_0 + (v_1\\langle N_p\\rangle)^2`."""
    return mean + params.var_const + (params.var_rel * mean) ** 2


def bin_probabilities(T, edges, params: ResponseParams, table: QuenchingTable):
    r""":math:`P(j \mid T)` for observable bins ``edges`` (n_obs + 1,): shape ``T.shape + (n_obs,)``.

    Gaussian integral over each bin (module docstring). At :math:`T \to 0` the width is guarded
    (:math:`\sigma \ge 10^{-6}` pe), so the result is a step, not NaN.
    """
    mu = mean_photoelectrons(T, params, table)
    return gaussian_bin_probabilities(mu, photoelectron_variance(mu, params), edges)


def gaussian_bin_probabilities(mean, variance, edges):
    """Probability of a Gaussian (``mean``, ``variance``) to fall in each bin of ``edges``;
    shape ``mean.shape + (n_bins,)``. The width is guarded at 1e-6."""
    mu = jnp.asarray(mean)[..., None]
    sigma = jnp.sqrt(jnp.maximum(jnp.asarray(variance)[..., None], 1e-12))
    z = (jnp.asarray(edges) - mu) / (math.sqrt(2.0) * sigma)
    za, zb = z[..., :-1], z[..., 1:]
    # Difference of lower-tail CDFs below the mean, of upper-tail survival functions above it:
    # keeps full relative precision deep in either tail.
    lower = 0.5 * (jax.scipy.special.erfc(-zb) - jax.scipy.special.erfc(-za))
    upper = 0.5 * (jax.scipy.special.erfc(za) - jax.scipy.special.erfc(zb))
    return jnp.where(za + zb > 0.0, upper, lower)


#: ``jnp.searchsorted`` method per backend for the bin and cell lookups of the folds, read when a
#: function is traced; other backends: "scan". On an H100 the default while loop ("scan") cost a
#: launch per step: value + gradient of the default floating model 1.06 ms with it, 0.56 ms with
#: the unrolled search (the fixed call 0.49 ms); on 2 CPU cores the unrolled search, fused into
#: each consumer of the index, was slower (17 -> 31 ms). ``benchmarks/probes/grid_fold_probe.py``.
SEARCH_METHODS = {"cpu": "scan", "gpu": "scan_unrolled", "cuda": "scan_unrolled", "rocm": "scan_unrolled"}


def search_method() -> str:
    """The ``jnp.searchsorted`` method for the default backend (:data:`SEARCH_METHODS`)."""
    return SEARCH_METHODS.get(jax.default_backend(), "scan")


_SQRT2 = math.sqrt(2.0)
_INV_SQRTPI = 1.0 / math.sqrt(math.pi)


def signed_tails(mean, sigma, edges):
    """z = (e - μ)/(√2σ) for every (Gaussian, edge) pair, and the signed tail t = Φ - [e > μ]
    (the lower tail below the mean, minus the upper tail above it): (n, n_edges) each."""
    z = (edges[None, :] - mean[:, None]) / (_SQRT2 * sigma[:, None])
    tail = 0.5 * jax.scipy.special.erfc(jnp.abs(z))
    return z, jnp.where(z > 0, -tail, tail)


@jax.custom_jvp
def _tail_sums(weights, mean, sigma, edges):
    r""":math:`S_e = \sum_n w_n\,t_n(e)` (:func:`signed_tails`), (n_edges,)."""
    return weights @ signed_tails(mean, sigma, edges)[1]


@_tail_sums.defjvp
def _tail_sums_jvp(primals, tangents):
    # dt/dz = exp(-z^2)/sqrt(pi) on both sides of the mean, and dz = -(dμ + √2 z dσ)/(√2 σ): one
    # exp per pair, shared by the tangents of the means and of the widths (autodiff of the
    # where/abs above would differentiate both branches). The tangent is one fused sum rather
    # than three matrix-vector products: its transpose then reads the pairs once (value +
    # gradient 57 -> 52 ms on 2 CPU cores, 0.90 -> 0.77 ms on an H100; benchmarks/probes/gaussian_fold_ab.py).
    w, mu, s, edges = primals
    dw, dmu, ds, _ = tangents
    z, t = signed_tails(mu, s, edges)
    dens = _INV_SQRTPI * jnp.exp(-z * z)
    a, b = w * dmu / (_SQRT2 * s), w * ds / s
    return w @ t, jnp.sum(dw[:, None] * t - dens * (a[:, None] + b[:, None] * z), axis=0)


def gaussian_fold(weights, mean, variance, edges):
    r""":math:`\mu_j = \sum_n w_n P_j(\mu_n, \sigma_n^2)`: Gaussians of weights ``weights``, means
    ``mean`` and variances ``variance`` (arrays of one shape) binned in ``edges`` (n_bins + 1,),
    shape (n_bins,). Equals ``weights.ravel() @ gaussian_bin_probabilities(...)`` to rounding with
    a quarter of its Gaussian integrals.

    With :math:`\Phi_n` the cdf of Gaussian :math:`n`, :math:`\Phi_n(e) = [e > \mu_n] + t_n(e)`
    where the signed tail :math:`t_n(e) = \pm\tfrac12\mathrm{erfc}(|e - \mu_n|/\sqrt2\sigma_n)`
    (+ below the mean, − above) keeps full relative precision in either tail. So

    .. math:: \mu_j = \sum_{n:\,\mu_n \in [e_j, e_{j+1})} w_n + S_{j+1} - S_j,
              \qquad S_e = \sum_n w_n t_n(e):

    one erfc per (Gaussian, edge) instead of four per (Gaussian, bin) for the two-sided
    difference of :func:`gaussian_bin_probabilities`, and the weighted sum is taken before the
    difference. The step term has no derivative in the means (its jumps are those of the tails);
    the tails' derivatives are analytic (one exp per pair). Widths are guarded at 1e-6, as in
    :func:`gaussian_bin_probabilities`.
    """
    w, mu, var = (jnp.asarray(a) for a in (weights, mean, variance))
    if not (w.shape == mu.shape == var.shape):
        raise ValueError(f"gaussian_fold: weights {w.shape}, mean {mu.shape} and variance {var.shape} differ in shape")
    edges = jnp.asarray(edges)
    w, mu = w.reshape(-1), mu.reshape(-1)
    s = jnp.sqrt(jnp.maximum(var.reshape(-1), 1e-12))
    S = _tail_sums(w, mu, s, edges)
    inside = jax.ops.segment_sum(w, jnp.searchsorted(edges, mu, side="right", method=search_method()),
                                 num_segments=edges.shape[0] + 1)
    return inside[1:-1] + (S[1:] - S[:-1])


def unit_bin_edges(n_lo: int, n_hi: int, dtype=None):
    """Edges of unit-width observable bins centred on the integers ``n_lo .. n_hi`` (inclusive)."""
    if n_hi < n_lo:
        raise ValueError(f"empty observable window: n_lo={n_lo} > n_hi={n_hi}")
    return jnp.asarray(np.arange(n_lo, n_hi + 2) - 0.5, dtype=resolve_dtype(dtype))
