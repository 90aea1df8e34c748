r"""Earth-matter regeneration of solar neutrinos at night (day–night effect).

At night the neutrinos cross the Earth along a chord of nadir angle :math:`\eta` before reaching
the detector. The state arriving at the Earth is the incoherent mixture of mass states of
:func:`~nuejax.physics.oscillation.mass_state_weights` (the coherence is lost on the way from the
Sun), so the state at the detector is

.. math::
    \rho_{night}(E, \eta) = S(E, \eta)\,U\,\mathrm{diag}(P_i)\,U^\dagger\,S^\dagger(E, \eta),

with :math:`S` the evolution operator along the chord. In the propagation basis
:math:`\nu' = O^\dagger\nu` (:math:`O = R_{23}U_{13}`, one-mass-scale dominance, as for the Sun)
the heavy state only picks up a phase, which cancels in :math:`S\rho S^\dagger`, and the
:math:`(\nu'_1, \nu'_2)` block evolves with the effective Hamiltonian of
:func:`~nuejax.physics.oscillation.nsi_matter_block` (NSI in propagation included when asked):

.. math::
    H(x) = \frac{\Delta m^2_{21}}{4E}\begin{pmatrix}-\cos2\theta_{12} & \sin2\theta_{12}\\
    \sin2\theta_{12} & \cos2\theta_{12}\end{pmatrix} + V(x)\begin{pmatrix}c_{13}^2 +
    \varepsilon'_{11} & \varepsilon'_{12}\\ \varepsilon'^*_{12} & \varepsilon'_{22}\end{pmatrix},
    \qquad V = \sqrt2 G_F n_e(x).

The chord is cut at every PREM layer boundary (A. M. Dziewonski and D. L. Anderson, Phys. Earth
Planet. Inter. 25 (1981) 297, Table 1: density polynomials of each layer) and each smooth piece
into steps of at most 50 km (continental version: PREM's top 3 km of ocean taken as crust,
2.6 g/cm³), each a fourth-order Magnus step with the density at two Gauss nodes
(:func:`earth_evolution`). Electron fractions :math:`Y_e` = 0.4656
(core) and 0.4957 (mantle and crust) turn the mass density into :math:`n_e`.

The night-time exposure of a detector at latitude :math:`\lambda` is the distribution of
:math:`\cos\eta` over a year, from the Sun's declination
:math:`\delta = -23.44^\circ\cos[2\pi(d + 10)/365.25]` (day of year :math:`d`; P. I. Cooper,
Solar Energy 12 (1969) 333, in cosine form) and the hour angle :math:`h`:
:math:`\cos\eta = -(\sin\lambda\sin\delta + \cos\lambda\cos\delta\cos h)` when positive (the Sun
below the horizon). The rates are those at 1 AU: the yearly 1/r² flux modulation (±3.4 %,
eccentricity 0.0167), which correlates with the length of the night, is not included (it would
shift the :math:`A_{DN}` of raw rates by +0.7 % at Super-Kamiokande and +0.8 % at Borexino;
experiments correct for it).

Day–night asymmetry: :math:`A_{DN} = 2(R_N - R_D)/(R_N + R_D)` (Borexino's convention,
G. Bellini et al., Phys. Lett. B 707 (2012) 22); Super-Kamiokande quotes
:math:`(R_D - R_N)/[\tfrac12(R_D + R_N)] = -A_{DN}`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from ..constants import HBARC_MEV_CM, V_CC_EV_PER_MOL_CM3
from .oscillation import (OscillationParams, ProductionProfile, propagation_basis, rotation_12, density_from_weights,
                          nsi_matter_block, solar_mass_weights)

__all__ = [
    "EARTH_RADIUS_KM",
    "DETECTOR_LATITUDES",
    "PREM_RADII_KM",
    "prem_density",
    "electron_density",
    "EarthExposure",
    "earth_exposure",
    "chord_steps",
    "earth_evolution",
    "night_density_matrix",
    "arrival_density_matrix",
]

EARTH_RADIUS_KM = 6371.0
#: Latitudes [degrees north] of detectors (Borexino and XENONnT: both at the Gran Sasso laboratory, LNGS).
DETECTOR_LATITUDES = {"borexino": 42.45, "super-kamiokande": 36.43, "xenonnt": 42.45}
#: PREM layer boundaries [km] (Dziewonski & Anderson 1981, Table 1).
PREM_RADII_KM = np.array([0.0, 1221.5, 3480.0, 5701.0, 5771.0, 5971.0, 6151.0, 6346.6, 6356.0, 6368.0, 6371.0])
#: PREM density [g/cm^3] of each layer, polynomial coefficients in x = r / 6371 km (a0, a1, a2, a3).
PREM_DENSITY_COEFFS = np.array([
    [13.0885, 0.0, -8.8381, 0.0],       # inner core
    [12.5815, -1.2638, -3.6426, -5.5281],  # outer core
    [7.9565, -6.4761, 5.5283, -3.0807],  # lower mantle
    [5.3197, -1.4836, 0.0, 0.0],        # transition zone
    [11.2494, -8.0298, 0.0, 0.0],
    [7.1089, -3.8045, 0.0, 0.0],
    [2.6910, 0.6924, 0.0, 0.0],         # LVZ and LID
    [2.900, 0.0, 0.0, 0.0],             # lower crust
    [2.600, 0.0, 0.0, 0.0],             # upper crust
    [2.600, 0.0, 0.0, 0.0],             # PREM's 3 km ocean, as continental crust (detectors sit under rock)
])
#: Electron fraction Y_e of the core (r < 3480 km) and of the mantle and crust.
Y_E_CORE, Y_E_MANTLE = 0.4656, 0.4957
_CORE_RADIUS_KM = 3480.0
#: Solar declination amplitude [degrees] (the obliquity of the ecliptic).
_OBLIQUITY_DEG = 23.44
#: km -> 1/eV: a step length times this is its length in eV^-1 (hbar c in eV cm).
_KM_PER_INV_EV = 1e5 / (HBARC_MEV_CM * 1e6)


def _layer_index(r_km):
    return np.clip(np.searchsorted(PREM_RADII_KM, r_km, side="right") - 1, 0, len(PREM_DENSITY_COEFFS) - 1)


def prem_density(r_km) -> np.ndarray:
    """PREM mass density [g/cm^3] at radius ``r_km`` (numpy; a fixed input, not differentiated)."""
    r = np.asarray(r_km, dtype=np.float64)
    if np.any((r < 0) | (r > EARTH_RADIUS_KM)) or not np.all(np.isfinite(r)):
        raise ValueError(f"radius must lie in [0, {EARTH_RADIUS_KM}] km")
    x = r / EARTH_RADIUS_KM
    a = PREM_DENSITY_COEFFS[_layer_index(r)]
    return a[..., 0] + x * (a[..., 1] + x * (a[..., 2] + x * a[..., 3]))


def electron_density(r_km) -> np.ndarray:
    """Electron density [mol/cm^3] = PREM density × Y_e at radius ``r_km``."""
    r = np.asarray(r_km, dtype=np.float64)
    return prem_density(r) * np.where(r < _CORE_RADIUS_KM, Y_E_CORE, Y_E_MANTLE)


def chord_steps(cos_eta, max_step: float = 50.0):
    """Step lengths [km] and electron densities [mol/cm^3] along the chords of nadir angles ``cos_eta``.

    Each chord (length 2 R cos η) is cut where it crosses a PREM boundary and every piece into
    equal steps of at most ``max_step`` km, with the density at each step's two Gauss-Legendre nodes (for the
    fourth-order Magnus step of :func:`earth_evolution`). Returns arrays of shapes
    ``(len(cos_eta), n_steps)`` and ``(len(cos_eta), n_steps, 2)``, padded with zero-length steps
    to a common length, in the order the neutrino crosses them."""
    cos_eta = np.atleast_1d(np.asarray(cos_eta, dtype=np.float64))
    if np.any((cos_eta <= 0) | (cos_eta > 1)):
        raise ValueError("cos_eta must lie in (0, 1] (night: the Sun below the horizon)")
    R = EARTH_RADIUS_KM
    rows = []
    for c in cos_eta:
        L = 2.0 * R * c
        b2 = R**2 * (1.0 - c**2)  # squared impact parameter
        cuts = [0.0, L]
        for rb in PREM_RADII_KM[1:-1]:
            if rb**2 > b2:
                h = np.sqrt(rb**2 - b2)
                cuts += [R * c - h, R * c + h]
        cuts = np.unique(np.clip(cuts, 0.0, L))
        g = np.array([0.5 - np.sqrt(3.0) / 6.0, 0.5 + np.sqrt(3.0) / 6.0])  # Gauss-Legendre nodes on [0, 1]
        xs, ds = [], []
        for a, b in zip(cuts[:-1], cuts[1:]):
            n_sub = max(1, int(np.ceil((b - a) / max_step)))
            u = (np.arange(n_sub)[:, None] + g) / n_sub  # (n_sub, 2)
            xs.append(a + (b - a) * u)
            ds.append(np.full(n_sub, (b - a) / n_sub))
        x, ds = np.concatenate(xs), np.concatenate(ds)
        r = np.sqrt(np.maximum(R**2 + x**2 - 2.0 * R * x * c, 0.0))
        rows.append((ds, electron_density(np.minimum(r, R))))
    n = max(len(d) for d, _ in rows)
    ds = np.zeros((len(rows), n))
    ne = np.zeros((len(rows), n, 2))
    for i, (d, e) in enumerate(rows):
        ds[i, :len(d)], ne[i, :len(e)] = d, e
    return ds, ne


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class EarthExposure:
    """Night-time exposure of a detector (a PyTree): ``cos_eta`` (n,) bin-mean nadir-angle cosines,
    ``weights`` (n,) the fraction of the year spent in each bin (they sum to the night fraction),
    and the chords' ``steps`` [km] (n, n_steps) and ``n_e`` [mol/cm^3] (n, n_steps, 2) from
    :func:`chord_steps`."""

    cos_eta: jax.Array
    weights: jax.Array
    steps: jax.Array
    n_e: jax.Array
    latitude: float = field(metadata=dict(static=True))

    @property
    def night_fraction(self):
        return jnp.sum(self.weights)


def earth_exposure(latitude, n_bins: int = 100, max_step: float = 50.0, dtype=None) -> EarthExposure:
    """Yearly night-time nadir-angle exposure of a detector at ``latitude`` (degrees north, or a name
    of :data:`DETECTOR_LATITUDES`) in ``n_bins`` equal bins of cos η (module docstring), one chord
    per bin at its mean cos η. Chords of neighbouring bins must not differ by much more than an
    oscillation length in the Earth (~300 km at 10 MeV): the night-minus-day ΔP_ee of ⁸B at
    Super-Kamiokande's latitude, 10 / 15 MeV, is 0.01143 / 0.01061 with 24 bins, 0.01026 / 0.01810
    with 96, 0.01014 / 0.01800 with 400 (rates, averaged over energy, converge much faster)."""
    if isinstance(latitude, str):
        key = latitude.lower()
        if key not in DETECTOR_LATITUDES:
            raise ValueError(f"unknown detector {latitude!r}: known are {sorted(DETECTOR_LATITUDES)}, or give degrees")
        latitude = DETECTOR_LATITUDES[key]
    lat = float(latitude)
    if not -90.0 <= lat <= 90.0:
        raise ValueError(f"latitude must lie in [-90, 90] degrees, got {lat}")
    if n_bins < 1 or not max_step > 0:
        raise ValueError("n_bins must be >= 1 and max_step > 0")
    day = (np.arange(1461) + 0.5) * (365.25 / 1461)  # 4 points a day over a year
    hour = (np.arange(1440) + 0.5) * (2.0 * np.pi / 1440) - np.pi  # one per minute
    dec = np.radians(-_OBLIQUITY_DEG) * np.cos(2.0 * np.pi * (day + 10.0) / 365.25)
    la = np.radians(lat)
    cos_z = np.sin(la) * np.sin(dec)[:, None] + np.cos(la) * np.cos(dec)[:, None] * np.cos(hour)[None, :]
    cos_eta = -cos_z[cos_z < 0]
    total = cos_z.size
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    counts, _ = np.histogram(cos_eta, edges)
    sums, _ = np.histogram(cos_eta, edges, weights=cos_eta)
    keep = counts > 0
    mean = sums[keep] / counts[keep]
    ds, ne = chord_steps(mean, max_step)
    from ..precision import resolve_dtype

    dt = resolve_dtype(dtype)
    return EarthExposure(jnp.asarray(mean, dt), jnp.asarray(counts[keep] / total, dt), jnp.asarray(ds, dt),
                         jnp.asarray(ne, dt), lat)


def earth_evolution(E, osc: OscillationParams, steps, n_e, eps_V=None):
    r"""Evolution operator of the :math:`(\nu'_1, \nu'_2)` block along a chord, (..., 2, 2) complex.

    ``E`` [MeV] (...); ``steps`` [km] (n_steps,) and ``n_e`` [mol/cm^3] (n_steps, 2) from
    :func:`chord_steps` (one chord), in crossing order. Each step is the fourth-order Magnus
    step (S. Blanes, F. Casas, J. A. Oteo, J. Ros, Phys. Rep. 470 (2009) 151, Eq. 253) with the
    Hamiltonian at the step's two Gauss nodes: for traceless :math:`H_k = \vec h_k\cdot\vec\sigma`
    it is :math:`e^{-i\vec c\cdot\vec\sigma} = \cos|c| - i\sin|c|\,\hat c\cdot\vec\sigma` with
    :math:`\vec c = \tfrac{\Delta}{2}(\vec h_1 + \vec h_2) + \tfrac{\sqrt3\Delta^2}{6}\,\vec h_2\times\vec h_1`
    (the trace of :math:`H` is a phase that cancels in :math:`S\rho S^\dagger`).

    Every step matrix is special unitary, :math:`\begin{pmatrix}\alpha & \beta\\ -\beta^* & \alpha^*\end{pmatrix}`
    with :math:`\alpha = \cos|c| - i\sin|c|\,\hat c_z`, :math:`\beta = -i\sin|c|\,(\hat c_x - i\hat c_y)`,
    and so is their product: the loop carries the product's first row (its Cayley–Klein parameters
    p, q) as four real arrays, :math:`p' = \alpha p - \beta q^*`, :math:`q' = \alpha q + \beta p^*`
    (on 2 CPU cores six times faster, value and gradient, than 2 × 2 complex matrix products:
    docs/benchmarks.md)."""
    E = jnp.asarray(E)
    dt = jnp.result_type(E, steps)
    # E = 0 (the first node of a continuum's table) has an infinite vacuum term: evolve at 1 MeV
    # there and return the identity (double where: finite values and gradients)
    positive = E > 0
    E = jnp.where(positive, E, 1.0)
    s12, s13, dm2 = (jnp.asarray(v, dt) for v in (osc.sin2_theta12, osc.sin2_theta13, osc.dm2_21))
    c13 = 1.0 - s13
    if eps_V is None:
        d11 = d22 = jnp.zeros((), dt)
        b12 = jnp.zeros((), jnp.result_type(dt, 1j))
    else:
        d11, d22, b12 = nsi_matter_block(jnp.asarray(eps_V), osc)
    w = dm2 / (4.0 * E.astype(dt) * 1e6)
    off_vac = w * 2.0 * jnp.sqrt(s12 * (1.0 - s12))
    b_re, b_im = jnp.real(b12), jnp.imag(b12)
    h_z_vac = -w * (1.0 - 2.0 * s12)

    def h_vector(ne):
        V = V_CC_EV_PER_MOL_CM3 * ne
        # H_12 = h_x - i h_y = off_vac + V b12
        return off_vac + V * b_re, -(V * b_im), h_z_vac + 0.5 * V * (c13 + d11 - d22)

    def step(S, x):
        # the step is built inside the loop: (E, step) intermediates never fill memory
        ds, ne = x
        L = ds * _KM_PER_INV_EV
        a, b = h_vector(ne[0]), h_vector(ne[1])
        k = math.sqrt(3.0) / 6.0 * L * L  # a Python float: float32 stays float32
        cross = (b[1] * a[2] - b[2] * a[1], b[2] * a[0] - b[0] * a[2], b[0] * a[1] - b[1] * a[0])
        cx, cy, cz = (0.5 * L * (ai + bi) + k * ci for ai, bi, ci in zip(a, b, cross))
        # padded zero-length steps have c = 0: guard the square root (NaN-free gradients)
        n2 = cx**2 + cy**2 + cz**2
        norm = jnp.sqrt(jnp.where(n2 > 0, n2, 1.0))
        cos = jnp.where(n2 > 0, jnp.cos(norm), 1.0)
        sin = jnp.where(n2 > 0, jnp.sin(norm) / norm, 1.0)
        al_re, al_im = cos, -sin * cz  # alpha
        be_re, be_im = -sin * cy, -sin * cx  # beta = -i sin (c_x - i c_y)
        p_re, p_im, q_re, q_im = S
        return (al_re * p_re - al_im * p_im - (be_re * q_re + be_im * q_im),  # alpha p - beta q*
                al_re * p_im + al_im * p_re - (be_im * q_re - be_re * q_im),
                al_re * q_re - al_im * q_im + (be_re * p_re + be_im * p_im),  # alpha q + beta p*
                al_re * q_im + al_im * q_re + (be_im * p_re - be_re * p_im)), None

    one, zero = jnp.ones(E.shape, dt), jnp.zeros(E.shape, dt)
    (p_re, p_im, q_re, q_im), _ = jax.lax.scan(step, (one, zero, zero, zero), (steps.astype(dt), n_e.astype(dt)))
    p, q = jax.lax.complex(p_re, p_im), jax.lax.complex(q_re, q_im)
    S = jnp.stack([jnp.stack([p, q], -1), jnp.stack([-jnp.conj(q), jnp.conj(p)], -1)], -2)
    eye = jnp.broadcast_to(jnp.eye(2, dtype=S.dtype), E.shape + (2, 2))
    return jnp.where(positive[..., None, None], S, eye)


#: Chords per batch of :func:`_chords` on a CPU (on accelerators: all at once).
_CHORD_BLOCK = 10


def _chords(evolve, steps, n_e):
    """``evolve(steps_b, n_e_b)`` for every chord b, stacked on axis -3: (..., n_chords, 2, 2).

    On a CPU the chords run in batches of :data:`_CHORD_BLOCK`, each rematerialised in reverse
    mode (``jax.checkpoint``): the gradient of a yearly-average model with free oscillation
    parameters otherwise keeps every step's intermediates of every chord and energy (37 GB for
    seven spectra of 1000 energies, measured). On an accelerator, one vectorised pass."""
    if jax.default_backend() != "cpu":
        return jax.vmap(evolve, out_axes=-3)(steps, n_e)
    S = jax.lax.map(jax.checkpoint(lambda x: evolve(*x)), (steps, n_e), batch_size=_CHORD_BLOCK)
    return jnp.moveaxis(S, 0, -3)


def night_density_matrix(E, osc: OscillationParams, profile: ProductionProfile, exposure: EarthExposure,
                         eps_V=None, *, mass_weights=None):
    r"""Night-time flavour density matrix averaged over the exposure's nadir angles, (..., 3, 3).

    :math:`\bar\rho_N = \sum_b w_b\,O\,[S_b\,\rho'_{12}\,S_b^\dagger \oplus P_3]\,O^\dagger/\sum_b w_b`
    with :math:`\rho'_{12} = R_{12}\,\mathrm{diag}(P_1, P_2)R_{12}^T` (module docstring). ``eps_V``:
    NSI in propagation, in the Sun and in the Earth alike. ``mass_weights`` may pass precomputed
    mass-state weights (..., 3) (:func:`~nuejax.physics.oscillation.solar_mass_weights`)."""
    E = jnp.asarray(E)
    P = solar_mass_weights(E, osc, profile, eps_V) if mass_weights is None else mass_weights
    R12 = rotation_12(osc)[:2, :2]
    cdt = R12.dtype
    rho12 = jnp.einsum("ai,...i,bi->...ab", R12, P[..., :2].astype(cdt), R12)
    S = _chords(lambda st, ne: earth_evolution(E, osc, st, ne, eps_V), exposure.steps, exposure.n_e)
    w = (exposure.weights / jnp.sum(exposure.weights)).astype(cdt)
    night12 = jnp.einsum("b,...bij,...jk,...blk->...il", w, S, rho12, jnp.conj(S))
    rho_p = jnp.zeros(E.shape + (3, 3), cdt)
    rho_p = rho_p.at[..., :2, :2].set(night12).at[..., 2, 2].set(P[..., 2].astype(cdt))
    O = propagation_basis(osc)
    return O @ rho_p @ jnp.conj(O).T


def arrival_density_matrix(E, osc: OscillationParams, profile: ProductionProfile, *, eps_V=None,
                           exposure: EarthExposure | None = None, period: str = "day"):
    r"""Flavour density matrix at the detector, (..., 3, 3): ``period='day'`` (no Earth crossing),
    ``'night'`` (:func:`night_density_matrix`) or ``'average'`` (the yearly mean,
    :math:`(1 - f_N)\rho_D + f_N\bar\rho_N` with the night fraction :math:`f_N` of ``exposure``)."""
    if period not in ("day", "night", "average"):
        raise ValueError(f"period must be 'day', 'night' or 'average', not {period!r}")
    E = jnp.asarray(E)
    P = solar_mass_weights(E, osc, profile, eps_V)
    day = density_from_weights(P, osc)
    if period == "day":
        return day
    if exposure is None:
        raise ValueError(f"period={period!r} needs an EarthExposure (nuejax.physics.earth.earth_exposure)")
    night = night_density_matrix(E, osc, profile, exposure, eps_V, mass_weights=P)
    if period == "night":
        return night
    f = exposure.night_fraction.astype(day.real.dtype)
    return (1.0 - f) * day + f * night
