r"""Recoil-electron spectra and event rates of the solar components.

The recoil spectrum of component :math:`k` per unit flux, paper Eq. (fT) with the flavour sum of
Eq. (rate_sm),

.. math::
    f_T^{(k)}(T) = \sum_\alpha \int dE_\nu\, \lambda_k(E_\nu)\, \bar P_{e\alpha}^{(k)}(E_\nu)\,
                   \frac{d\sigma_\alpha}{dT}(E_\nu, T; \boldsymbol\varepsilon)
    \quad [\mathrm{cm^2/MeV}],

with :math:`\lambda_k` the unit-normalised spectrum and :math:`\bar P_{e\alpha}` the
production-averaged flavour probabilities. For lines the integral is a sum over the lines
weighted by their branching ratios (exact). For continua :math:`\lambda_k \bar P_{e\alpha}` is
tabulated on a uniform neutrino-energy grid (``n_E`` points, default 1000, recomputed per call
because :math:`\bar P` depends on the oscillation parameters) and the integral, for each ``T``,
runs over the kinematically allowed range :math:`[E_{min}(T), E_{end}]` with an end-point
regularised Gauss-Legendre rule on the linearly interpolated product. (A fixed-grid sum, as
written in Eq. fT, has an O(ΔE) error from the step at :math:`E_{min}(T)`; the per-T rule does not.)

The differential rate is :math:`dR/dT = N_e\,\Phi_k\,f_T^{(k)}(T)` (paper Eq. rate_sm), reported in
counts/(day·100 t·MeV) with :math:`N_e = 3.307\times10^{31}` electrons per 100 t by default.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field, replace

import jax
import jax.numpy as jnp
import numpy as np

from ..constants import N_E_PER_100T, SECONDS_PER_DAY, SIGMA0_PER_MEV
from ..precision import resolve_dtype
from .general_nsi import GeneralPhysics, dsigma_dT_state
from .cross_section import (
    NewPhysics,
    gauss_legendre_regularised,
    dsigma_dT,
    e_min,
    sigma_total,
    t_max,
)
from .oscillation import OscillationParams, ProductionProfile, flavour_probabilities, production_profile
from .solar import flux as solar_flux, get_component, spectrum_on_grid, split_subcomponent

__all__ = [
    "SolarSource",
    "build_source",
    "recoil_spectrum",
    "binned_recoil_spectrum",
    "energy_nodes",
    "recoil_bin_quadrature",
    "uniform_recoil_edges",
    "differential_rate",
    "event_rate",
    "rate_per_day_factor",
    "state_table",
    "recoil_spectrum_general",
    "event_rate_general",
    "day_night_asymmetry",
]


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SolarSource:
    """Fixed, device-resident description of one solar component (a PyTree).

    For a continuum, ``energies`` is the uniform neutrino-energy grid [MeV] and ``weights`` the
    unit-normalised spectrum on it; for lines, ``energies`` are the line energies and ``weights``
    their branching ratios. ``flux`` is the total flux [cm^-2 s^-1] of the chosen solar model and
    ``flux_uncertainty`` its fractional 1σ uncertainty.
    """

    energies: jax.Array
    weights: jax.Array
    profile: ProductionProfile
    flux: jax.Array
    flux_uncertainty: float = field(metadata=dict(static=True))
    name: str = field(metadata=dict(static=True))
    is_line: bool = field(metadata=dict(static=True))
    solar_model: str = field(metadata=dict(static=True))

    @property
    def t_end(self):
        """Largest recoil energy this component can produce [MeV]."""
        return t_max(jnp.max(self.energies))


def shape_only(source: SolarSource) -> SolarSource:
    """``source`` without its static labels (name, solar model, flux uncertainty), which the
    arrays do not depend on: a function ``jax.jit``-ted over sources then compiles once per array
    shape and kind (line or continuum), not once per component."""
    return replace(source, name="", solar_model="", flux_uncertainty=0.0)


def build_source(name: str, *, solar_model: str = "gs98", n_E: int = 1000, shape_source: str = "table",
                 dtype=None) -> SolarSource:
    """Build the fixed tensors of component ``name`` (``pp``, ``pep``, ``hep``, ``7Be``, ``8B``,
    ``13N``, ``15O``, ``17F``) for ``solar_model`` (``gs98`` or ``agss09``). A single ⁷Be line is
    ``7Be_862`` or ``7Be_384``: its flux is the ⁷Be flux times the line's branching ratio.

    ``n_E`` is the size of the uniform neutrino-energy grid of a continuum (ignored for lines);
    ``shape_source`` chooses the tabulated spectrum (default) or, for pp and CNO, the analytic
    allowed β⁺ shape. ``dtype`` defaults to float64 (see :mod:`nuejax.precision`).
    """
    dt = resolve_dtype(dtype)
    parent, line = split_subcomponent(name)
    comp = get_component(parent)
    phi, dphi = solar_flux(parent, solar_model)
    if comp.is_line:
        energies = np.array([e for e, _ in comp.lines])
        weights = np.array([b for _, b in comp.lines])
        if line is not None:
            phi *= weights[line]
            energies, weights = energies[line:line + 1], np.ones(1)
    else:
        if n_E < 16:
            raise ValueError(f"n_E={n_E} is too small for the neutrino-energy grid of {name} (need >= 16)")
        energies = np.linspace(0.0, comp.endpoint, n_E)
        weights = spectrum_on_grid(name, energies, source=shape_source)
    return SolarSource(
        energies=jnp.asarray(energies, dtype=dt),
        weights=jnp.asarray(weights, dtype=dt),
        profile=production_profile(parent, solar_model, dtype=dt),
        flux=jnp.asarray(phi, dtype=dt),
        flux_uncertainty=dphi,
        name=name,
        is_line=comp.is_line,
        solar_model=solar_model.lower(),
    )


def grid_position(x, grid, xp=jnp):
    """Interpolation index, fraction and inside-mask of ``x`` in the uniform ``grid`` (n,).

    Index arithmetic instead of a search. ``xp`` is ``jax.numpy`` (traced) or ``numpy`` (for
    positions fixed at build time, :mod:`nuejax.physics.precomputed`)."""
    n = grid.shape[0]
    step = (grid[-1] - grid[0]) / (n - 1)
    pos = (x - grid[0]) / step
    i = xp.clip(xp.floor(pos).astype(xp.int32), 0, n - 2)
    return i, pos - i, (x >= grid[0]) & (x <= grid[-1])


def _interp_uniform(x, grid, values):
    """Linear interpolation of ``values`` (n, ...) tabulated on the uniform ``grid`` (n,); zero outside.

    Cheap on every backend and differentiable in ``values``.
    """
    i, frac, inside = grid_position(x, grid)
    frac = frac[..., None]
    out = values[i] * (1.0 - frac) + values[i + 1] * frac
    return jnp.where(inside[..., None], out, 0.0)


def energy_nodes(source: SolarSource, T, n_quad: int):
    """Neutrino-energy nodes and weights of Eq. (fT) for a continuum: an end-point regularised
    ``n_quad``-node Gauss-Legendre rule on [E_min(T), E_end] for each ``T``; shapes ``T.shape + (q,)``."""
    x, w = gauss_legendre_regularised(n_quad)
    e_end = source.energies[-1]
    lo = jnp.minimum(e_min(T), e_end)
    width = (e_end - lo)[..., None]
    return lo[..., None] + width * x, width * w


def _flavour_table(energies, weights, profile, osc: OscillationParams):
    """:math:`w(E) \\bar P_{e\\alpha}(E)` on a table of energies, shape (n, 3)."""
    return weights[:, None] * flavour_probabilities(energies, osc, profile)


def _weighted_flavour_table(source: SolarSource, osc: OscillationParams):
    """:func:`_flavour_table` on the source's own energies."""
    return _flavour_table(source.energies, source.weights, source.profile, osc)


def recoil_spectrum(source: SolarSource, T, physics: NewPhysics = NewPhysics(),
                    osc: OscillationParams = OscillationParams(), *, radiative: bool = True, n_quad: int = 48,
                    in_sigma0_units: bool = False):
    r"""Recoil spectrum per unit flux :math:`f_T^{(k)}(T)` [cm^2/MeV], paper Eq. (fT).

    ``T`` [MeV] may have any shape; the result has the same shape. Pure in ``physics`` and ``osc``
    (``jit``/``vmap``/``grad``-safe). ``n_quad`` is the number of Gauss-Legendre nodes of the
    neutrino-energy integral of a continuum. ``in_sigma0_units=True`` gives the result in units of
    :math:`2G_F^2m_e/\pi` = 1.72e-44 cm^2/MeV instead of cm^2/MeV (required in float32).
    """
    kw = dict(radiative=radiative, in_sigma0_units=in_sigma0_units)
    T = jnp.asarray(T, dtype=source.energies.dtype)
    table = _weighted_flavour_table(source, osc)
    if source.is_line:
        xs = dsigma_dT(T[..., None], source.energies, physics, **kw)  # (..., L, 3)
        return jnp.einsum("...lf,lf->...", xs, table)
    E, W = energy_nodes(source, T, n_quad)  # (..., q)
    g = _interp_uniform(E, source.energies, table)  # (..., q, 3)
    xs = dsigma_dT(T[..., None], E, physics, **kw)  # (..., q, 3)
    return jnp.einsum("...q,...qf,...qf->...", W, g, xs)


def uniform_recoil_edges(t_hi: float, n_T: int = 2000, t_lo: float = 0.0, dtype=None):
    """Edges of ``n_T`` uniform recoil bins on [t_lo, t_hi] [MeV] (the paper's default is 2000)."""
    if not (t_hi > t_lo >= 0.0):
        raise ValueError(f"recoil range must satisfy 0 <= t_lo < t_hi, got [{t_lo}, {t_hi}]")
    if n_T < 1:
        raise ValueError(f"n_T must be >= 1, got {n_T}")
    return jnp.asarray(np.linspace(t_lo, t_hi, n_T + 1), dtype=resolve_dtype(dtype))


def recoil_bin_quadrature(source: SolarSource, edges, physics: NewPhysics = NewPhysics(),
                          osc: OscillationParams = OscillationParams(), *, radiative: bool = True,
                          n_quad: int = 48, n_bin_quad: int = 6, n_sub: int = 1,
                          in_sigma0_units: bool = False):
    r"""Quadrature nodes of every recoil bin, weighted by the recoil spectrum.

    Returns ``(T, wf)``, both of shape ``(L, n_T, n_sub * n_bin_quad)`` (``L`` = number of lines,
    1 for a continuum), such that for any function ``g``
    :math:`\int_{bin\ i} f_T(T)\,g(T)\,dT \approx \sum_{l,q} wf[l,i,q]\,g(T[l,i,q])`.
    Each bin is split into ``n_sub`` equal panels with an ``n_bin_quad``-node end-point
    regularised Gauss-Legendre rule; a line's bins are cut at its :math:`T_{max}` (and a
    continuum's at :math:`T_{max}(E_{end})`) so the kinematic step is integrated exactly. This is
    how the joint response :math:`\int_{bin} f_T P(N_p|T) dT` of paper Eq. (Rij) is formed.
    """
    kw = dict(radiative=radiative, in_sigma0_units=in_sigma0_units)
    edges = jnp.asarray(edges, dtype=source.energies.dtype)
    lo, hi = edges[:-1], edges[1:]
    x, w = gauss_legendre_regularised(n_bin_quad)
    k = np.arange(n_sub)[:, None]
    x = ((k + x) / n_sub).ravel()
    w = np.broadcast_to(w / n_sub, (n_sub, n_bin_quad)).ravel()
    ends = t_max(source.energies) if source.is_line else source.t_end[None]
    width = jnp.clip(ends[:, None], lo, hi) - lo  # (L, n_T)
    T = lo[:, None] + width[..., None] * x  # (L, n_T, q)
    W = width[..., None] * w
    if source.is_line:
        table = _weighted_flavour_table(source, osc)
        xs = dsigma_dT(T, source.energies[:, None, None], physics, **kw)  # (L, n_T, q, 3)
        f = jnp.einsum("lnqf,lf->lnq", xs, table)
    else:
        f = recoil_spectrum(source, T, physics, osc, n_quad=n_quad, **kw)
    return T, W * f


def binned_recoil_spectrum(source: SolarSource, edges, physics: NewPhysics = NewPhysics(),
                           osc: OscillationParams = OscillationParams(), *, mode: str = "integral",
                           radiative: bool = True, n_quad: int = 48, n_bin_quad: int = 6,
                           in_sigma0_units: bool = False):
    r"""Recoil spectrum on the bins ``edges`` (n_T + 1,).

    ``mode='midpoint'``: :math:`f_T(T_l)` at the bin centres [cm^2/MeV], the representative value
    of paper Eqs. (fT)-(reweight_factor). ``mode='integral'``: :math:`\int_{bin} f_T\,dT` [cm^2],
    by :func:`recoil_bin_quadrature` (``n_bin_quad`` nodes per bin, lines cut at their end
    points). ``in_sigma0_units`` as in :func:`recoil_spectrum`.
    """
    kw = dict(radiative=radiative, in_sigma0_units=in_sigma0_units, n_quad=n_quad)
    if mode == "midpoint":
        edges = jnp.asarray(edges, dtype=source.energies.dtype)
        return recoil_spectrum(source, 0.5 * (edges[:-1] + edges[1:]), physics, osc, **kw)
    if mode != "integral":
        raise ValueError(f"mode must be 'midpoint' or 'integral', not {mode!r}")
    _, wf = recoil_bin_quadrature(source, edges, physics, osc, n_bin_quad=n_bin_quad, **kw)
    return jnp.sum(wf, axis=(0, 2))


def rate_per_day_factor(source: SolarSource, n_electrons: float = N_E_PER_100T, *, in_sigma0_units: bool = False):
    """:math:`N_e\\,\\Phi_k\\,\\times 86400` s/day: multiplies a cross section [cm^2] into counts/day.

    With ``in_sigma0_units`` it multiplies a cross section in units of ``SIGMA0_PER_MEV`` x MeV
    (the combined prefactor is O(1e2): safe in float32).
    """
    unit = n_electrons * SECONDS_PER_DAY * (SIGMA0_PER_MEV if in_sigma0_units else 1.0)
    return unit * source.flux


def differential_rate(source: SolarSource, T, physics: NewPhysics = NewPhysics(),
                      osc: OscillationParams = OscillationParams(), *, n_electrons: float = N_E_PER_100T,
                      radiative: bool = True, n_quad: int = 48):
    """:math:`dR/dT` [counts/(day·MeV)] for ``n_electrons`` targets (default: per 100 t), Eq. (rate_sm)."""
    f = recoil_spectrum(source, T, physics, osc, radiative=radiative, n_quad=n_quad, in_sigma0_units=True)
    return rate_per_day_factor(source, n_electrons, in_sigma0_units=True) * f


def event_rate(source: SolarSource, physics: NewPhysics = NewPhysics(),
               osc: OscillationParams = OscillationParams(), *, threshold=0.0,
               n_electrons: float = N_E_PER_100T, radiative: bool = True, n_quad: int = 256):
    r"""Event rate above the recoil ``threshold`` [MeV] in counts/day for ``n_electrons`` targets
    (default 3.307e31, i.e. counts/(day·100 t)).

    :math:`R = N_e \Phi_k \sum_\alpha \int dE\,\lambda_k \bar P_{e\alpha}\,\sigma_\alpha(E; T > T_{th})`,
    with :math:`\sigma_\alpha` from :func:`~nuejax.physics.cross_section.sigma_total` — a route
    independent of :func:`binned_recoil_spectrum` (the tests compare the two). ``n_quad`` nodes
    for the neutrino-energy integral (the recoil integral uses 64, converged to 1e-9). A non-zero
    magnetic moment needs ``threshold > 0`` (its :math:`1/T` rate diverges at zero threshold).
    """
    check_rate_threshold(physics, threshold)
    dtype = source.energies.dtype
    th = jnp.asarray(threshold, dtype=dtype)
    table = _weighted_flavour_table(source, osc)
    if source.is_line:
        sig = sigma_total(source.energies, physics, T_min=th, radiative=radiative, in_sigma0_units=True)
        cross = jnp.sum(sig * table)
    else:
        E, W = energy_nodes(source, th, n_quad)
        g = _interp_uniform(E, source.energies, table)
        sig = sigma_total(E, physics, T_min=th, radiative=radiative, in_sigma0_units=True)
        cross = jnp.sum(W[:, None] * g * sig)
    return rate_per_day_factor(source, n_electrons, in_sigma0_units=True) * cross


# -- the general case: a flavour state, general NSI, light mediators, day and night ---------------
def state_table(source: SolarSource, osc: OscillationParams = OscillationParams(), *, eps_V=None,
                exposure=None, period: str = "day"):
    r""":math:`\lambda(E)\,\rho(E)` on the source's table, (n, 3, 3) complex: the unit-normalised
    spectrum times the flavour density matrix at the detector
    (:func:`~nuejax.physics.earth.arrival_density_matrix`; ``eps_V``: NSI in propagation)."""
    from .earth import arrival_density_matrix

    rho = arrival_density_matrix(source.energies, osc, source.profile, eps_V=eps_V, exposure=exposure, period=period)
    return source.weights[:, None, None] * rho


def _interp_matrix(x, grid, table):
    """Linear interpolation of a (n, 3, 3) complex table at ``x``; zero outside the grid."""
    return _interp_uniform(x, grid, table.reshape(table.shape[0], -1)).reshape(x.shape + (3, 3))


def recoil_spectrum_general(source: SolarSource, T, physics=None, osc: OscillationParams = OscillationParams(), *,
                            propagation: bool = False, exposure=None, period: str = "day", radiative: bool = True,
                            n_quad: int = 48, in_sigma0_units: bool = False):
    r"""Recoil spectrum per unit flux of the general case [cm^2/MeV]:
    :math:`f_T(T) = \int dE\,\lambda(E)\,\mathrm{Re\,Tr}[\rho(E)\,Q(T, E)]` with the cross-section
    matrix :math:`Q` of :func:`~nuejax.physics.general_nsi.dsigma_dT_matrix` (general Hermitian NSI,
    magnetic moment, light mediators) and the state :math:`\rho` at the detector
    (:func:`state_table`). ``physics`` is a :class:`~nuejax.physics.general_nsi.GeneralPhysics`
    (or a flavour-diagonal :class:`NewPhysics`); ``propagation=True`` puts its
    :math:`\varepsilon^V = \varepsilon^L + \varepsilon^R` into the matter potential as well;
    ``period`` and ``exposure`` as in :func:`~nuejax.physics.earth.arrival_density_matrix`.
    Same quadrature as :func:`recoil_spectrum`, which it equals for diagonal couplings (tests)."""
    physics = GeneralPhysics() if physics is None else physics
    if isinstance(physics, NewPhysics):
        physics = GeneralPhysics.from_new_physics(physics)
    kw = dict(radiative=radiative, in_sigma0_units=in_sigma0_units)
    T = jnp.asarray(T, dtype=source.energies.dtype)
    table = state_table(source, osc, eps_V=physics.eps_V if propagation else None, exposure=exposure, period=period)
    if source.is_line:
        xs = dsigma_dT_state(T[..., None], source.energies, table, physics, **kw)  # (..., L)
        return jnp.sum(xs, axis=-1)
    E, W = energy_nodes(source, T, n_quad)
    rho = _interp_matrix(E, source.energies, table)  # (..., q, 3, 3)
    return jnp.sum(W * dsigma_dT_state(T[..., None], E, rho, physics, **kw), axis=-1)


def event_rate_general(source: SolarSource, physics=None, osc: OscillationParams = OscillationParams(), *,
                       threshold=0.0, n_electrons: float = N_E_PER_100T, n_T_quad: int = 96, **kw):
    r"""Event rate above the recoil ``threshold`` [MeV] in counts/day for ``n_electrons`` targets, of
    the general case: :math:`N_e\Phi\int_{T_{th}}^{T_{end}} f_T\,dT` with :func:`recoil_spectrum_general`
    (keywords ``propagation``, ``exposure``, ``period``, ``radiative``, ``n_quad`` passed on),
    an end-point regularised Gauss-Legendre rule of ``n_T_quad`` nodes per line or continuum
    (each line integrated up to its own :math:`T_{max}`). A non-zero magnetic moment or a massless
    mediator needs ``threshold > 0`` (their rates diverge at T = 0; checked for concrete values)."""
    check_rate_threshold(physics, threshold)
    x, w = gauss_legendre_regularised(n_T_quad)
    th = jnp.asarray(threshold, dtype=source.energies.dtype)
    ends = t_max(source.energies) if source.is_line else source.t_end[None]
    total = 0.0
    for l in range(ends.shape[0]):
        hi = jnp.maximum(ends[l], th)
        T = th + (hi - th) * x
        if source.is_line:
            sub = replace(source, energies=source.energies[l:l + 1], weights=source.weights[l:l + 1])
        else:
            sub = source
        f = recoil_spectrum_general(sub, T, physics, osc, in_sigma0_units=True, **kw)
        total = total + (hi - th) * jnp.sum(w * f)
    return rate_per_day_factor(source, n_electrons, in_sigma0_units=True) * total


def check_rate_threshold(physics, threshold) -> None:
    """ValueError for a concrete threshold that is negative or not finite, or zero with a magnetic
    moment or a massless mediator."""
    try:
        th = float(threshold)
        if not math.isfinite(th) or th < 0:
            raise ValueError(f"the recoil threshold must be finite and >= 0 MeV, got {threshold!r}")
        if th > 0:
            return
        mu = np.asarray(getattr(physics, "mu_nu", 0.0), dtype=float)
        massless = [bool(np.any(np.asarray(c) != 0) and np.any(np.asarray(m) == 0))
                    for c, m in ((getattr(physics, "zprime_coupling", 0.0), getattr(physics, "zprime_mass", 1.0)),
                                 (getattr(physics, "phi_coupling", 0.0), getattr(physics, "phi_mass", 1.0)))]
    except (TypeError, jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return  # traced: not checked
    if np.any(mu != 0):
        raise ValueError("a non-zero magnetic moment gives an infinite rate at zero threshold (the 1/T cross "
                         "section); set a recoil threshold > 0")
    if any(massless):
        raise ValueError("a massless mediator gives an infinite rate at zero threshold; set a threshold > 0")


def day_night_asymmetry(source: SolarSource, exposure, osc: OscillationParams = OscillationParams(), *,
                        threshold=0.0, t_upper=None, physics=None, **kw):
    r"""Day–night asymmetry of the ν–e scattering rate in the recoil window [``threshold``, ``t_upper``]
    [MeV], :math:`A_{DN} = 2(R_N - R_D)/(R_N + R_D)` (Borexino's sign; Super-Kamiokande quotes
    :math:`-A_{DN}`), with the night rate averaged over the nadir angles of ``exposure``
    (:func:`~nuejax.physics.earth.earth_exposure`). Keywords as in :func:`event_rate_general`.
    The window must start below the spectrum's end point (else no events: ``ValueError``)."""
    try:
        above = float(threshold) >= float(source.t_end)
    except (TypeError, jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        above = False
    if above:
        raise ValueError(f"threshold {float(threshold):g} MeV is at or above the end point "
                         f"{float(source.t_end):g} MeV of {source.name or 'the spectrum'}: no events")

    def rate(period):
        r = event_rate_general(source, physics, osc, threshold=threshold, exposure=exposure, period=period, **kw)
        if t_upper is not None:
            r = r - event_rate_general(source, physics, osc, threshold=t_upper, exposure=exposure, period=period, **kw)
        return r

    day, night = rate("day"), rate("night")
    return 2.0 * (night - day) / (night + day)
