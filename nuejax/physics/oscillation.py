r"""Solar-neutrino flavour probabilities: adiabatic MSW-LMA averaged over the production region.

A :math:`\nu_e` produced at radius :math:`r` leaves the Sun adiabatically as an incoherent mixture
of mass eigenstates with weights (three-flavour, one-mass-scale dominance; e.g. Gonzalez-Garcia &
Nir, Rev. Mod. Phys. 75, 345 (2003))

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
from the B16 tables (Vinyoles et al. 2017). The full flavour density matrix of the arriving state
(:func:`density_matrix`) and NSI in propagation (:func:`mass_state_weights_nsi`) are below;
Earth-matter (day-night) effects are in :mod:`nuejax.physics.earth`.

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
from .solar import check_solar_model, get_component, read_data_file

__all__ = [
    "OscillationParams",
    "ProductionProfile",
    "production_profile",
    "mass_state_weights",
    "mean_cos2m",
    "flavour_affine",
    "production_quadrature",
    "pad_profile",
    "PRODUCTION_NODES",
    "pmns_abs2",
    "flavour_probabilities",
    "survival_probability",
    "pmns_matrix",
    "nsi_matter_block",
    "mass_state_weights_nsi",
    "density_from_weights",
    "solar_mass_weights",
    "density_matrix",
    "mass_state_weights_three_flavour",
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


#: Nodes of the Gauss rule that replaces the sum over a component's production zones in the
#: flavour-diagonal model (:func:`production_quadrature`): 32 already reproduce the 1000-shell
#: sum of every B16 component to <= 4e-15 for E in [0.05, 20] MeV, dm2_21 in [2e-5, 2e-4] eV^2,
#: sin2_theta12 in [0.2, 0.45], sin2_theta13 in [0, 0.05] (tests/test_oscillation.py); 40 leave a
#: margin; over sin2_theta12 in [0.15, 0.5], dm2_21 in [1e-7, 1e-3] eV^2, E in [1 keV, 50 MeV]
#: 40 nodes stay within 5.4e-15 (at sin2_theta12 = 0.1: 1e-12; 0.02: 1e-5, the singularities
#: approach the real axis): models use the rule only when their sin2_theta12 bounds lie in
#: GAUSS_RULE_SIN2_THETA12. Not for NSI in propagation: with |eps| ~ 0.5 the two-level states need
#: ~200 nodes for rounding-level agreement (40: 1e-6), so those keep every zone.
PRODUCTION_NODES = 40
GAUSS_RULE_SIN2_THETA12 = (0.15, 0.5)


def production_profile(component: str, solar_model: str = "gs98", dtype=None,
                       nodes: int | None = None) -> ProductionProfile:
    """Production-zone weights and electron densities of ``component`` in the B16 ``solar_model``.

    Column 3 of the table is :math:`\\log_{10}(n_e / N_A\\,[\\mathrm{cm}^{-3}])`, i.e. the density in
    mol/cm^3; columns 5-12 are production densities per unit radius, normalised here to unit sum.
    ``nodes``: the zones replaced by the Gauss rule of that many nodes of the production
    distribution (:func:`production_quadrature`; :data:`PRODUCTION_NODES` equals the zone sum to
    rounding without NSI in propagation, 25x cheaper); ``None`` (default) keeps every zone.
    """
    dt = resolve_dtype(dtype)
    table = _profile_table(check_solar_model(solar_model))
    f = table[:, get_component(component).profile_column]
    keep = f > 0
    n_e = 10.0 ** table[keep, 2]
    w = f[keep] / f[keep].sum()
    if nodes is not None:
        n_e, w = production_quadrature(n_e, w, nodes)
    return ProductionProfile(jnp.asarray(n_e, dtype=dt), jnp.asarray(w, dtype=dt))


def pad_profile(profile: ProductionProfile, n_zones: int) -> ProductionProfile:
    """``profile`` extended to ``n_zones`` zones by zero-weight zones at its last density (exact:
    they add nothing to an average), so that profiles of different lengths stack; numpy arrays
    of the input dtypes."""
    n_e, w = np.asarray(profile.n_e), np.asarray(profile.weight)
    k = n_zones - n_e.shape[0]
    if k < 0:
        raise ValueError(f"pad_profile: the profile has {n_e.shape[0]} zones, more than n_zones={n_zones}")
    return ProductionProfile(np.concatenate([n_e, np.full(k, n_e[-1], dtype=n_e.dtype)]),
                             np.concatenate([w, np.zeros(k, dtype=w.dtype)]))


def production_quadrature(n_e, weight, nodes: int = PRODUCTION_NODES):
    r"""The Gauss rule of ``nodes`` points for the production distribution of ``n_e`` (numpy).

    A production average :math:`\sum_r w_r\, h(n_{e,r})` over the zones of a solar model is an
    integral over the discrete measure :math:`\sum_r w_r \delta(u - u_r)`, :math:`u = \ln n_e`.
    Its Gauss rule (nodes :math:`u_k`, weights :math:`W_k`, :math:`k = 1..M`) integrates every
    polynomial of degree :math:`\le 2M - 1` in :math:`u` exactly (Golub & Welsch, Math. Comp. 23,
    221 (1969): the eigen-decomposition of the Jacobi matrix, here built by the Lanczos process on
    diag(u) from :math:`\sqrt{w}`, with full reorthogonalisation). The MSW functions averaged here
    (:math:`\cos 2\theta_m` and its derivatives, the NSI two-level states) are analytic in
    :math:`u`: their singularities lie at :math:`|\mathrm{Im}\,u| \approx 2\theta_{12}`, so the
    error falls geometrically with M (measured: 32 nodes reach rounding, :data:`PRODUCTION_NODES`).

    Returns ``(n_e_nodes, weights)`` (M,), weights summing to that of ``weight``.

    Raises:
        ValueError: ``nodes`` < 1, more nodes than distinct densities with weight, or zone
            values that are not finite, positive densities with weights >= 0.
    """
    n_e = np.asarray(n_e, dtype=np.float64)
    w = np.asarray(weight, dtype=np.float64)
    if n_e.ndim != 1 or n_e.shape != w.shape:
        raise ValueError(f"production_quadrature: n_e {n_e.shape} and weight {w.shape} must be equal 1-D shapes")
    if not (np.all(np.isfinite(n_e)) and np.all(n_e > 0) and np.all(np.isfinite(w)) and np.all(w >= 0)):
        raise ValueError("production_quadrature: densities must be finite and > 0, weights finite and >= 0")
    M = int(nodes)
    # zones of equal density are one point of the measure (the B16 tables repeat some n_e values)
    u, inverse = np.unique(np.log(n_e[w > 0]), return_inverse=True)
    w = np.bincount(inverse, weights=w[w > 0])
    if not 1 <= M <= u.shape[0]:
        raise ValueError(f"production_quadrature: nodes={nodes} must lie in [1, {u.shape[0]}] (the distinct "
                         "densities with weight)")
    total = w.sum()
    shift = u @ w / total  # centre u for a well-conditioned recurrence
    x = u - shift
    q = np.sqrt(w / total)
    basis = [q]
    alpha, beta = np.zeros(M), np.zeros(M)
    prev, b = np.zeros_like(q), 0.0
    for k in range(M):
        v = x * basis[-1] - b * prev
        alpha[k] = basis[-1] @ v
        v = v - alpha[k] * basis[-1]
        for _ in range(2):  # full reorthogonalisation, twice ("twice is enough")
            v = v - np.stack(basis).T @ (np.stack(basis) @ v)
        b = float(np.linalg.norm(v))
        beta[k] = b
        if k + 1 < M:
            if not b > 1e-12 * max(1.0, float(np.abs(x).max())):
                raise ValueError(f"production_quadrature: the Lanczos recurrence broke down at node {k + 1} of {M}")
            prev = basis[-1]
            basis.append(v / b)
    J = np.diag(alpha) + np.diag(beta[:-1], 1) + np.diag(beta[:-1], -1)
    lam, vec = np.linalg.eigh(J)
    return np.exp(lam + shift), total * vec[0] ** 2


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
        if not is_zero(dot):
            t = t + partial() * dot
    if not is_zero(dn_e):  # per-zone tangents: a general (rarely needed) zone sum
        _, y, A, z = _matter_cos2(E, dm2, s12, s13, n_e)
        t = t - _zone_sum(weight, y * y * A / n_e * dn_e * jax.lax.rsqrt(z) / z)
    if not is_zero(dweight):
        x, _, _, z = _matter_cos2(E, dm2, s12, s13, n_e)
        t = t + _zone_sum(dweight, x * jax.lax.rsqrt(z))
    return out, t


production_mean_cos2m.defjvp(_production_mean_cos2m_jvp, symbolic_zeros=True)


def is_zero(t) -> bool:
    return isinstance(t, jax.custom_derivatives.SymbolicZero)


def mean_cos2m(E, osc: OscillationParams, profile: ProductionProfile):
    r"""The production average :math:`\overline{\cos 2\theta_{12}^m}(E)` (:func:`production_mean_cos2m`)
    in the working precision of the fixed tables; ``E`` in MeV."""
    E = jnp.asarray(E)
    s12, s13 = jnp.asarray(osc.sin2_theta12), jnp.asarray(osc.sin2_theta13)
    dm2 = jnp.asarray(osc.dm2_21)
    dt = jnp.result_type(E, profile.n_e)  # the fixed tables set the working precision
    return production_mean_cos2m(E.astype(dt), dm2.astype(dt), s12.astype(dt), s13.astype(dt),
                                 profile.n_e.astype(dt), profile.weight.astype(dt))


def mass_state_weights(E, osc: OscillationParams, profile: ProductionProfile):
    r"""Production-averaged mass-eigenstate weights :math:`(\bar P_1, \bar P_2, \bar P_3)`,
    shape ``E.shape + (3,)``; ``E`` in MeV."""
    c = mean_cos2m(E, osc, profile)
    s13 = jnp.asarray(osc.sin2_theta13)
    c13 = 1.0 - s13
    P1 = c13 * 0.5 * (1.0 + c)
    P2 = c13 * 0.5 * (1.0 - c)
    P3 = jnp.broadcast_to(s13, P1.shape)
    return jnp.stack([P1, P2, P3], axis=-1)


def flavour_affine(osc: OscillationParams):
    r"""The flavour probabilities are affine in :math:`c = \overline{\cos 2\theta_{12}^m}(E)`:
    :math:`\bar P_{e\alpha}(E) = a_\alpha + b_\alpha c(E)` (:func:`mass_state_weights` times
    :func:`pmns_abs2`), with :math:`a_\alpha = \tfrac{c^2_{13}}{2}(|U_{\alpha1}|^2 + |U_{\alpha2}|^2)
    + s^2_{13}|U_{\alpha3}|^2`, :math:`b_\alpha = \tfrac{c^2_{13}}{2}(|U_{\alpha1}|^2 - |U_{\alpha2}|^2)`.
    Returns ``(a, b)``, each (3,) (flavours e, μ, τ)."""
    U2 = pmns_abs2(osc)
    s13 = jnp.asarray(osc.sin2_theta13)
    c13 = 1.0 - s13
    return 0.5 * c13 * (U2[:, 0] + U2[:, 1]) + s13 * U2[:, 2], 0.5 * c13 * (U2[:, 0] - U2[:, 1])


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


# -- the flavour state arriving at the Earth: density matrix, NSI in propagation -----------------
def pmns_matrix(osc: OscillationParams):
    r"""The PMNS matrix :math:`U = R_{23}\,U_{13}(\delta)\,R_{12}` (PDG convention), complex (3, 3).

    :math:`U_{13} = \begin{pmatrix} c_{13} & 0 & s_{13}e^{-i\delta}\\ 0 & 1 & 0\\
    -s_{13}e^{i\delta} & 0 & c_{13}\end{pmatrix}`; rows :math:`e, \mu, \tau`, columns 1, 2, 3
    (R. L. Workman et al. (PDG), Prog. Theor. Exp. Phys. 2022, 083C01, Eq. 14.33).
    A complex off-diagonal NSI coupling is defined relative to this phase convention.
    """
    return _rotation_23(osc) @ _u13(osc) @ rotation_12(osc)


def _sc(s2):
    s2 = jnp.asarray(s2)
    return jnp.sqrt(s2), jnp.sqrt(1.0 - s2)


def rotation_12(osc):
    s, c = _sc(osc.sin2_theta12)
    o, z = jnp.ones_like(s), jnp.zeros_like(s)
    return jnp.array([[c, s, z], [-s, c, z], [z, z, o]]).astype(_complex(s))


def _rotation_23(osc):
    s, c = _sc(osc.sin2_theta23)
    o, z = jnp.ones_like(s), jnp.zeros_like(s)
    return jnp.array([[o, z, z], [z, c, s], [z, -s, c]]).astype(_complex(s))


def _u13(osc):
    s, c = _sc(osc.sin2_theta13)
    ph = jnp.exp(-1j * jnp.asarray(osc.delta_cp, dtype=_complex(s)))
    o, z = jnp.ones_like(s).astype(ph.dtype), jnp.zeros_like(s).astype(ph.dtype)
    return jnp.array([[c + z, z, s * ph], [z, o, z], [-s * jnp.conj(ph), z, c + z]])


def _complex(x):
    return jnp.result_type(x, 1j)


def propagation_basis(osc):
    r""":math:`O = R_{23}U_{13}`: :math:`U = O R_{12}`; in the basis :math:`\nu' = O^\dagger\nu` the
    heavy state :math:`\nu_3` decouples and :math:`(\nu'_1, \nu'_2)` mix through :math:`\theta_{12}`."""
    return _rotation_23(osc) @ _u13(osc)


def nsi_matter_block(eps_V, osc: OscillationParams):
    r"""The (1', 2') block of :math:`O^\dagger\varepsilon^V O`: ``(d11, d22, b12)``, the real diagonal
    entries and the complex off-diagonal one.

    In the propagation basis :math:`\nu' = O^\dagger\nu` (:math:`O = R_{23}U_{13}`) the matter
    term :math:`V[\mathrm{diag}(1,0,0) + \varepsilon^V]` has the (1', 2') block
    :math:`V\begin{pmatrix}c_{13}^2 + \varepsilon'_{11} & \varepsilon'_{12}\\ \varepsilon'^*_{12} &
    \varepsilon'_{22}\end{pmatrix}` (M. C. Gonzalez-Garcia and M. Maltoni, JHEP 09 (2013) 152,
    arXiv:1307.3092, Sec. 2: their :math:`\varepsilon_D, \varepsilon_N` are
    :math:`(\varepsilon'_{22} - \varepsilon'_{11})/2` and :math:`\varepsilon'_{12}` up to their phase
    convention).
    """
    eps_V = jnp.asarray(eps_V)
    if eps_V.shape != (3, 3):
        raise ValueError(f"eps_V must be one (3, 3) Hermitian matrix, got shape {eps_V.shape} (vmap over points)")
    O = propagation_basis(osc)
    e = jnp.conj(O).T @ eps_V @ O
    return jnp.real(e[0, 0]), jnp.real(e[1, 1]), e[0, 1]


def mass_state_weights_nsi(E, osc: OscillationParams, profile: ProductionProfile, eps_V):
    r"""Production-averaged mass-state weights :math:`\bar P_i(E)` with NSI in propagation, ``E.shape + (3,)``.

    One-mass-scale dominance as in :func:`mass_state_weights`, with the effective two-state
    Hamiltonian of :func:`nsi_matter_block` (times :math:`2E`, in eV²)

    .. math::
        H = \frac{\Delta m^2_{21}}{2}\begin{pmatrix}-\cos2\theta_{12} & \sin2\theta_{12}\\
        \sin2\theta_{12} & \cos2\theta_{12}\end{pmatrix}
        + A_0\begin{pmatrix}c_{13}^2 + \varepsilon'_{11} & \varepsilon'_{12}\\
        \varepsilon'^*_{12} & \varepsilon'_{22}\end{pmatrix},\quad A_0 = 2\sqrt2 G_F n_e E,

    whose lower eigenvector (the state that becomes :math:`\nu_1` at the surface, adiabatically)
    has :math:`|v_{1'}|^2 = \tfrac12[1 - (a - d)/\sqrt{(a-d)^2 + 4|b|^2}]` for
    :math:`H = \begin{pmatrix}a & b\\ b^* & d\end{pmatrix}`; :math:`P_1 = c_{13}^2|v_{1'}|^2`,
    :math:`P_2 = c_{13}^2 - P_1`, :math:`P_3 = s_{13}^2`. ``eps_V`` = :math:`\varepsilon^L +
    \varepsilon^R` (3, 3), Hermitian, NSI with electrons. At :math:`\varepsilon^V = 0` this is
    :func:`mass_state_weights` (test: 1e-15). Differentiable by plain autodiff.
    """
    E = jnp.asarray(E)
    dt = jnp.result_type(E, profile.n_e)
    s12, s13 = jnp.asarray(osc.sin2_theta12, dt), jnp.asarray(osc.sin2_theta13, dt)
    dm2 = jnp.asarray(osc.dm2_21, dt)
    c13 = 1.0 - s13
    d11, d22, b12 = nsi_matter_block(eps_V, osc)
    A0 = 2.0 * (E.astype(dt)[..., None] * 1e6) * V_CC_EV_PER_MOL_CM3 * profile.n_e.astype(dt)
    a_minus_d = -dm2 * (1.0 - 2.0 * s12) + A0 * (c13 + d11 - d22)
    b = dm2 * jnp.sqrt(s12 * (1.0 - s12)) + A0 * b12  # Δm² sin2θ/2 + A0 ε'12
    R = jnp.sqrt(a_minus_d**2 + 4.0 * jnp.abs(b) ** 2)
    v1 = 0.5 * (1.0 - a_minus_d / R)
    P1 = c13 * _zone_sum(profile.weight.astype(dt), v1)
    return jnp.stack([P1, c13 - P1, jnp.broadcast_to(s13, P1.shape)], axis=-1)


def density_from_weights(P, osc: OscillationParams):
    r""":math:`\rho = U\,\mathrm{diag}(P)\,U^\dagger`, i.e. :math:`\rho_{\alpha\beta} = \sum_i P_i U_{\alpha i}U^*_{\beta i}`:
    the incoherent mixture of mass states with weights ``P`` (..., 3) in the flavour basis, (..., 3, 3) complex."""
    U = pmns_matrix(osc)
    return jnp.einsum("ai,...i,bi->...ab", U, P.astype(U.dtype), jnp.conj(U))


def solar_mass_weights(E, osc: OscillationParams, profile: ProductionProfile, eps_V=None):
    """:func:`mass_state_weights` (``eps_V=None``: no NSI in propagation) or :func:`mass_state_weights_nsi`."""
    return (mass_state_weights(E, osc, profile) if eps_V is None
            else mass_state_weights_nsi(E, osc, profile, eps_V))


def density_matrix(E, osc: OscillationParams, profile: ProductionProfile, eps_V=None):
    r"""Flavour density matrix of the solar neutrinos of energy ``E`` arriving at the Earth (day), (..., 3, 3).

    :math:`\rho_{\alpha\beta}(E) = \sum_i \bar P_i(E)\,U_{\alpha i}U^*_{\beta i}`, production-averaged
    mass-state weights from :func:`mass_state_weights` (``eps_V=None``: no NSI in propagation) or
    :func:`mass_state_weights_nsi`. Its diagonal is :func:`flavour_probabilities`.
    """
    return density_from_weights(solar_mass_weights(E, osc, profile, eps_V), osc)


def mass_state_weights_three_flavour(E, osc: OscillationParams, profile: ProductionProfile, eps_V=None, *,
                                     dm2_31: float = 2.513e-3):
    r"""Production-averaged adiabatic weights :math:`\bar P_i = \sum_r w_r|U^m_{ei}(r)|^2` from the full
    three-flavour Hamiltonian :math:`U\mathrm{diag}(0, \Delta m^2_{21}, \Delta m^2_{31})U^\dagger/2E +
    V[\mathrm{diag}(1,0,0) + \varepsilon^V]` (eigenvectors by ``eigh``, ordered by eigenvalue, which
    for normal ordering and no level crossing follow the vacuum states 1, 2, 3), ``E.shape + (3,)``.

    The reference for the one-mass-scale approximation of :func:`mass_state_weights` and
    :func:`mass_state_weights_nsi`, which neglects the matter correction to
    :math:`\theta_{13}` (:math:`\sim 2s_{13}^2 A/\Delta m^2_{31}`: 1e-4 in :math:`P_{ee}` at ⁷Be,
    1e-3 for ⁸B at 15 MeV; docs/physics.md). ``dm2_31`` in eV² (NuFIT 6.0, normal ordering).
    Not used by the models: it costs a 3×3 ``eigh`` per energy and zone.
    """
    E = jnp.asarray(E)
    U = pmns_matrix(osc)
    dm2 = jnp.stack([jnp.zeros(()), jnp.asarray(osc.dm2_21), jnp.asarray(dm2_31)]).astype(U.dtype)
    eps = jnp.zeros((3, 3), U.dtype) if eps_V is None else jnp.asarray(eps_V, U.dtype)
    pot = jnp.zeros((3, 3), U.dtype).at[0, 0].set(1.0) + eps
    # in eV^2 (x 2E): vacuum + 2 E V(r) [diag(1,0,0) + eps]
    vac = U @ jnp.diag(dm2) @ jnp.conj(U).T
    A = 2.0 * (E[..., None] * 1e6) * V_CC_EV_PER_MOL_CM3 * profile.n_e  # (..., zones)
    H = vac + A[..., None, None] * pot
    _, vecs = jnp.linalg.eigh(H)  # ascending eigenvalues
    pe = jnp.abs(vecs[..., 0, :]) ** 2  # |<nu_e | nu_i^m>|^2
    return jnp.einsum("...ri,r->...i", pe, profile.weight.astype(pe.dtype))
