r"""Solar-neutrino flavour probabilities: adiabatic MSW-LMA averaged over the production region.

A :math:`\nu_e` produced at radius :math:`r` leaves the Sun adiabatically as an incoherent mixture
of mass eigenstates with weights (three-flavour, one-mass-scale dominance; e.g. Gonzalez-Garcia &
Nir, Rev. Mod. Phys. 75, 345 (2003); MISSION.md sec. 2)

.. math::
    P_1 = c_{13}^2\,\tfrac12(1 + \cos 2\theta_{12}^m),\quad
    P_2 = c_{13}^2\,\tfrac12(1 - \cos 2\theta_{12}^m),\quad P_3 = s_{13}^2,

.. math::
    \cos 2\theta_{12}^m(r) = \frac{\Delta m^2_{21}\cos 2\theta_{12} - A}
        {\sqrt{(\Delta m^2_{21}\cos 2\theta_{12} - A)^2 + (\Delta m^2_{21}\sin 2\theta_{12})^2}},
    \qquad A = 2\sqrt2\,G_F\,n_e(r)\,E\,c_{13}^2 .

The flavour probabilities at Earth are :math:`P_{e\alpha} = \sum_i P_i |U_{\alpha i}|^2` (PMNS
matrix, standard parametrisation), which gives
:math:`P_{ee} = c_{13}^4\,\tfrac12(1 + \cos2\theta_{12}\cos2\theta_{12}^m) + s_{13}^4` and splits
:math:`1 - P_{ee}` into :math:`\nu_\mu` and :math:`\nu_\tau` through :math:`\theta_{23}` (and
:math:`\delta_{CP}`). Each is averaged over the production region of the component,
:math:`\bar P(E) = \sum_r f_k(r)\,\Delta r\,P(E; r)`, with :math:`n_e(r)` and :math:`f_k(r)`
from the B16 tables (Vinyoles et al. 2017). Earth-matter (day-night) effects are not included.

All functions are pure ``jax.numpy``: differentiable in every oscillation parameter.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..constants import V_CC_EV_PER_MOL_CM3
from ..precision import resolve_dtype
from .solar import _check_model, get_component, read_data_file

__all__ = [
    "OscillationParams",
    "ProductionProfile",
    "production_profile",
    "mass_state_weights",
    "pmns_abs2",
    "flavour_probabilities",
    "survival_probability",
]


class OscillationParams(NamedTuple):
    r"""Oscillation parameters (a PyTree). Defaults: NuFIT 6.0, normal ordering, with SK
    atmospheric data (I. Esteban et al., JHEP 12 (2024) 216, arXiv:2410.05380).

    ``dm2_21`` in eV^2, ``delta_cp`` in radians.
    """

    sin2_theta12: float | jax.Array = 0.308
    sin2_theta13: float | jax.Array = 0.02215
    dm2_21: float | jax.Array = 7.49e-5
    sin2_theta23: float | jax.Array = 0.470
    delta_cp: float | jax.Array = math.radians(212.0)


class ProductionProfile(NamedTuple):
    """Electron density ``n_e`` [mol/cm^3] and normalised production weights ``weight`` (sum 1)
    of one component over the radial zones of a solar model; zones with zero production dropped."""

    n_e: jax.Array
    weight: jax.Array


_PROFILE_FILES = {"gs98": "nudistr_b16_gs98.dat", "agss09": "nudistr_b16_agss09.dat"}


@functools.lru_cache(maxsize=None)
def _profile_table(solar_model: str) -> np.ndarray:
    name = _PROFILE_FILES[solar_model]
    table = read_data_file(name)
    if table.ndim != 2 or table.shape[1] != 12:
        raise ValueError(f"{name}: expected 12 columns, found shape {table.shape}")
    return table


def production_profile(component: str, solar_model: str = "gs98", dtype=None) -> ProductionProfile:
    """Production-zone weights and electron densities of ``component`` in the B16 ``solar_model``.

    Column 3 of the table is :math:`\\log_{10}(n_e / N_A\\,[\\mathrm{cm}^{-3}])`, i.e. the density in
    mol/cm^3; columns 5-12 are production densities per unit radius, normalised here to unit sum.
    """
    dt = resolve_dtype(dtype)
    table = _profile_table(_check_model(solar_model))
    f = table[:, get_component(component).profile_column]
    keep = f > 0
    n_e = 10.0 ** table[keep, 2]
    w = f[keep] / f[keep].sum()
    return ProductionProfile(jnp.asarray(n_e, dtype=dt), jnp.asarray(w, dtype=dt))


def _matter_cos2(E, dm2, s12, s13, n_e):
    """cos 2θ12^m on the (E, zone) grid and the quantities its derivatives need."""
    c13 = 1.0 - s13
    cos2 = 1.0 - 2.0 * s12
    y = dm2 * 2.0 * jnp.sqrt(s12 * (1.0 - s12))  # Δm² sin 2θ12
    # A [eV^2] = 2 E V_CC c13^2 with E in eV.
    A = 2.0 * (E[..., None] * 1e6) * V_CC_EV_PER_MOL_CM3 * n_e * c13
    x = dm2 * cos2 - A
    return x, y, A, x * x + y * y


def _zone_sum(weight, h):
    return jnp.sum(weight * h, axis=-1)


@jax.custom_jvp
def production_mean_cos2m(E, dm2, s12, s13, n_e, weight):
    r"""Production-averaged :math:`\overline{\cos 2\theta_{12}^m}(E) = \sum_r w_r \cos 2\theta^m_{12}(E, n_e(r))`.

    Its derivatives have closed forms (a custom JVP), with :math:`x = \Delta m^2\cos2\theta_{12} - A`,
    :math:`y = \Delta m^2 \sin 2\theta_{12}`, :math:`R^2 = x^2 + y^2`:

    .. math::
        \partial_{\Delta m^2} = \Delta m^2 \sin^2 2\theta_{12}\, S_b,\quad
        \partial_{s^2_{12}} = -2(\Delta m^2)^2(\Delta m^2 S_a - \cos 2\theta_{12} S_b),\quad
        \partial_{s^2_{13}} = y^2 S_b / c^2_{13},\quad
        \partial_E = -y^2 S_b / E,

    :math:`S_a = \sum_r w_r/R^3`, :math:`S_b = \sum_r w_r A_r/R^3`. Two zone sums of
    residual size ``E.shape`` replace reverse-mode through the (E × zone) grid, which would keep
    and re-read every intermediate of that grid (checked against finite differences and against
    plain autodiff in the tests).
    """
    x, _, _, z = _matter_cos2(E, dm2, s12, s13, n_e)
    return _zone_sum(weight, x * jax.lax.rsqrt(z))


#: E-values per block of :func:`_zone_sums` on CPU (on accelerators: one block).
_ZONE_BLOCK = 128


def _zone_sums(E, dm2, s12, s13, n_e, weight):
    """(S0, Sa, Sb) = zone sums of w x/R, w/R^3 and w A/R^3, shape ``E.shape`` each.

    Evaluated block by block over E (``lax.map``) so that the (block x zone) intermediates stay
    in cache: XLA:CPU does not fuse one elementwise producer into several reductions and, over
    the whole (E x zone) grid, wrote them to memory (measured 5.5 ms instead of 25-58 ms for
    6 x 1000 x 1000 on 2 cores; docs/benchmarks.md). On a GPU, where the three sums fuse, one
    block."""
    shape = E.shape
    flat = E.reshape(-1)
    n = flat.shape[0]
    # A GPU fuses the three sums in one pass and would run the block loop serially: one block.
    block_size = _ZONE_BLOCK if jax.default_backend() == "cpu" else max(n, 1)
    n_pad = -n % block_size
    flat = jnp.concatenate([flat, jnp.broadcast_to(flat[-1:], (n_pad,))])

    def block(Eb):
        x, _, A, z = _matter_cos2(Eb, dm2, s12, s13, n_e)
        inv = jax.lax.rsqrt(z)
        inv3 = inv / z
        return _zone_sum(weight, x * inv), _zone_sum(weight, inv3), _zone_sum(weight, A * inv3)

    sums = jax.lax.map(block, flat.reshape(-1, block_size))
    return tuple(v.reshape(-1)[:n].reshape(shape) for v in sums)


def _production_mean_cos2m_jvp(primals, tangents):
    E, dm2, s12, s13, n_e, weight = primals
    dE, ddm2, ds12, ds13, dn_e, dweight = tangents
    out, Sa, Sb = _zone_sums(E, dm2, s12, s13, n_e, weight)
    cos2 = 1.0 - 2.0 * s12
    y2 = dm2 * dm2 * 4.0 * s12 * (1.0 - s12)
    terms = [(ddm2, lambda: dm2 * (1.0 - cos2 * cos2) * Sb),
             (ds12, lambda: -2.0 * dm2 * dm2 * (dm2 * Sa - cos2 * Sb)),
             (ds13, lambda: y2 * Sb / (1.0 - s13)),
             (dE, lambda: -y2 * Sb / E)]
    t = jnp.zeros_like(out)
    for dot, partial in terms:
        if not _is_zero(dot):
            t = t + partial() * dot
    if not _is_zero(dn_e):  # per-zone tangents: a general (rarely needed) zone sum
        _, y, A, z = _matter_cos2(E, dm2, s12, s13, n_e)
        t = t - _zone_sum(weight, y * y * A / n_e * dn_e * jax.lax.rsqrt(z) / z)
    if not _is_zero(dweight):
        x, _, _, z = _matter_cos2(E, dm2, s12, s13, n_e)
        t = t + _zone_sum(dweight, x * jax.lax.rsqrt(z))
    return out, t


production_mean_cos2m.defjvp(_production_mean_cos2m_jvp, symbolic_zeros=True)


def _is_zero(t) -> bool:
    return isinstance(t, jax.custom_derivatives.SymbolicZero)


def mass_state_weights(E, osc: OscillationParams, profile: ProductionProfile):
    r"""Production-averaged mass-eigenstate weights :math:`(\bar P_1, \bar P_2, \bar P_3)`,
    shape ``E.shape + (3,)``; ``E`` in MeV."""
    E = jnp.asarray(E)
    s12, s13 = jnp.asarray(osc.sin2_theta12), jnp.asarray(osc.sin2_theta13)
    dm2 = jnp.asarray(osc.dm2_21)
    dt = jnp.result_type(E, profile.n_e)  # the fixed tables set the working precision
    mean_cos2m = production_mean_cos2m(E.astype(dt), dm2.astype(dt), s12.astype(dt), s13.astype(dt),
                                       profile.n_e.astype(dt), profile.weight.astype(dt))
    c13 = 1.0 - s13
    P1 = c13 * 0.5 * (1.0 + mean_cos2m)
    P2 = c13 * 0.5 * (1.0 - mean_cos2m)
    P3 = jnp.broadcast_to(s13, P1.shape)
    return jnp.stack([P1, P2, P3], axis=-1)


def pmns_abs2(osc: OscillationParams):
    r""":math:`|U_{\alpha i}|^2` (rows :math:`e,\mu,\tau`; columns 1, 2, 3), standard parametrisation."""
    s12, s13, s23 = (jnp.asarray(v) for v in (osc.sin2_theta12, osc.sin2_theta13, osc.sin2_theta23))
    c12, c13, c23 = 1.0 - s12, 1.0 - s13, 1.0 - s23
    cd = jnp.cos(jnp.asarray(osc.delta_cp))
    # amplitudes: s_ij = sqrt(sin^2), interference terms carry cos(delta)
    x12 = jnp.sqrt(s12 * c12 * s23 * c23 * s13)
    ue = jnp.stack([c12 * c13, s12 * c13, s13])
    umu = jnp.stack([s12 * c23 + c12 * s23 * s13 + 2.0 * x12 * cd,
                     c12 * c23 + s12 * s23 * s13 - 2.0 * x12 * cd,
                     s23 * c13])
    utau = jnp.stack([s12 * s23 + c12 * c23 * s13 - 2.0 * x12 * cd,
                      c12 * s23 + s12 * c23 * s13 + 2.0 * x12 * cd,
                      c23 * c13])
    return jnp.stack([ue, umu, utau])


def flavour_probabilities(E, osc: OscillationParams, profile: ProductionProfile):
    r""":math:`(\bar P_{ee}, \bar P_{e\mu}, \bar P_{e\tau})(E)`, shape ``E.shape + (3,)``; sums to 1."""
    return mass_state_weights(E, osc, profile) @ pmns_abs2(osc).T


def survival_probability(E, osc: OscillationParams, profile: ProductionProfile):
    r"""Production-averaged :math:`\bar P_{ee}(E)`."""
    return flavour_probabilities(E, osc, profile)[..., 0]
