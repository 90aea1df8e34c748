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
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .cross_section import NewPhysics, dsigma_dT
from .oscillation import OscillationParams, ProductionProfile, _is_zero
from .spectra import SolarSource, _flavour_table, _grid_position, energy_nodes

__all__ = ["PrecomputedSpectrum", "precompute_spectrum", "precomputed_recoil_spectrum", "nsi_coefficients",
           "probe_points", "coefficients_from_probes", "SpectrumGroup", "group_spectra", "group_recoil_spectra"]


def probe_points(mu_unit: float = 1.0) -> NewPhysics:
    """17 probe points: 0; per flavour (ε_L=+1, ε_L=−1, ε_R=+1, ε_R=−1, ε_L=ε_R=+1); μ_ν = ``mu_unit``
    (in units of :data:`~nuejax.physics.cross_section.MU_NU_UNIT` = 1e-11 μ_B, like every μ_ν)."""
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

    ``energies`` (n_T, q) neutrino-energy nodes (for lines: the line energies); ``weights``
    (n_T, q) quadrature weights, zero where a node lies outside the source's table (lines: ones);
    ``index``/``frac`` (n_T, q) the linear-interpolation position of every node in the source
    table (fixed, so a call gathers instead of searching; lines: the line index and 0);
    ``sm`` (3, n_T, q), ``nsi`` (five arrays (3, n_T, q): the terms ε_L, ε_R, ε_L², ε_R²,
    ε_L ε_R of each flavour) and ``mm`` (3, n_T, q) the cross-section coefficients in σ0 units
    (``mm`` per ``mu_unit``², ``mu_unit`` the probe μ_ν in units of 1e-11 μ_B, by default 1),
    flavour axis first.
    """

    energies: jax.Array
    weights: jax.Array
    index: jax.Array
    frac: jax.Array
    sm: jax.Array
    nsi: tuple
    mm: jax.Array
    mu_unit: float = field(metadata=dict(static=True))


def _node_positions(source: SolarSource, E):
    """Interpolation index, fraction and inside-mask of nodes ``E`` in the source's uniform grid."""
    grid = np.asarray(source.energies, dtype=np.float64)
    E = np.asarray(E, dtype=np.float64)
    if source.is_line:
        index = np.broadcast_to(np.arange(grid.shape[0]), E.shape)
        return index, np.zeros(E.shape), np.ones(E.shape, dtype=bool)
    return _grid_position(E, grid, np)


@partial(jax.jit, static_argnums=(2, 3))
def _probe_coefficients(T, E, mu_unit, radiative):
    # One compiled program per shape: evaluated eagerly, the probes' cross sections dispatched
    # dozens of small XLA compilations per component (most of a model's build time).
    probes = probe_points(mu_unit)
    xs = jax.vmap(lambda p: dsigma_dT(T[:, None], E, p, radiative=radiative, in_sigma0_units=True))(probes)
    return jnp.moveaxis(coefficients_from_probes(xs), -1, 1)


def precompute_spectrum(source: SolarSource, T, *, radiative: bool = True, n_quad: int = 48,
                        mu_unit: float = 1.0) -> PrecomputedSpectrum:
    """Precompute the cross-section coefficients of ``source`` at the recoil energies ``T`` (n_T,).

    ``mu_unit`` is the μ_ν probe point in units of 1e-11 μ_B (the unit of ``NewPhysics.mu_nu``);
    the result does not depend on it beyond rounding."""
    T = jnp.asarray(T, dtype=source.energies.dtype)
    if source.is_line:
        E = jnp.broadcast_to(source.energies, T.shape + source.energies.shape)
        W = jnp.ones_like(E)
    else:
        E, W = energy_nodes(source, T, n_quad)
    c = _probe_coefficients(T, E, float(mu_unit), radiative)  # (17, 3, n_T, q): flavour-major
    nsi = tuple(jnp.stack([c[1 + 5 * a + k, a] for a in range(3)]) for k in range(5))
    index, frac, inside = _node_positions(source, E)
    dt = source.energies.dtype
    return PrecomputedSpectrum(E, jnp.where(jnp.asarray(inside), W, 0.0), jnp.asarray(index, dtype=jnp.int32),
                               jnp.asarray(frac, dtype=dt), c[0], nsi, c[16], float(mu_unit))


def _node_values(table, pre: PrecomputedSpectrum):
    """The table (n, 3) linearly interpolated at the nodes, times the quadrature weights: (3, n_T, q).

    A zero row is appended so that a line's ``index + 1`` stays in range (its ``frac`` is 0)."""
    t = jnp.concatenate([table, jnp.zeros_like(table[:1])]).T
    return pre.weights * (t[:, pre.index] * (1.0 - pre.frac) + t[:, pre.index + 1] * pre.frac)


def _contract(wg, pre: PrecomputedSpectrum, physics: NewPhysics):
    """f(T_i) = sum over nodes and flavours of the weighted table times the cross section.

    The cross section at the nodes is assembled elementwise from coefficient arrays that share
    the flavour-major layout (3, n_T, q) of ``wg``, one array per NSI term, so that XLA fuses the
    contraction into one multiply-and-reduce pass (einsums, a flavour-minor layout or slices of
    one stacked NSI array each made XLA:CPU several times slower; docs/benchmarks.md)."""
    c = nsi_coefficients(physics.eps_L, physics.eps_R)  # (3, 5)
    mu = jnp.broadcast_to(jnp.asarray(physics.mu_nu), (3,)) / pre.mu_unit
    xs = pre.sm + (mu**2)[:, None, None] * pre.mm
    for k in range(5):
        xs = xs + c[:, k, None, None] * pre.nsi[k]
    return jnp.sum(wg * xs, axis=(0, 2))


def _spectrum(energies, weights, profile, pre, physics, osc):
    return _contract(_node_values(_flavour_table(energies, weights, profile, osc), pre), pre, physics)


def precomputed_recoil_spectrum(source: SolarSource, pre: PrecomputedSpectrum, physics: NewPhysics,
                                osc: OscillationParams):
    r""":math:`f_T(T_i)` in σ0 units at the precomputed recoil energies; equals
    :func:`~nuejax.physics.spectra.recoil_spectrum` (``in_sigma0_units=True``) to rounding."""
    return _spectrum(source.energies, source.weights, source.profile, pre, physics, osc)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SpectrumGroup:
    """Several spectra of equal shapes stacked on a leading axis (a PyTree), so that one
    vectorised evaluation (:func:`group_recoil_spectra`) replaces a loop over components: on a
    GPU a loop costs a kernel launch per operation and component.

    ``energies``/``weights`` (g, n) the sources' tables; ``profile`` their production zones
    (g, n_r), padded with zero-weight zones to a common n_r (exact); ``pre`` the stacked
    :class:`PrecomputedSpectrum`.
    """

    energies: jax.Array
    weights: jax.Array
    profile: ProductionProfile
    pre: PrecomputedSpectrum


def _shape_key(source: SolarSource, pre: PrecomputedSpectrum):
    return (source.is_line, source.energies.shape, pre.energies.shape, pre.sm.shape, pre.mu_unit)


def group_spectra(sources, pres) -> tuple:
    """Stack ``(source, pre)`` pairs of equal shapes into :class:`SpectrumGroup` s.

    Returns ``(groups, members)``: ``members[g]`` lists the input positions stacked in group g."""
    keys, members = [], []
    for i, (s, p) in enumerate(zip(sources, pres)):
        k = _shape_key(s, p)
        if k not in keys:
            keys.append(k)
            members.append([])
        members[keys.index(k)].append(i)
    groups = []
    for idx in members:
        n_r = max(int(sources[i].profile.n_e.shape[0]) for i in idx)

        def pad(a, fill, n=n_r):
            a = np.asarray(a)
            return np.concatenate([a, np.full(n - a.shape[0], fill, dtype=a.dtype)])

        n_e = np.stack([pad(sources[i].profile.n_e, np.asarray(sources[i].profile.n_e)[-1]) for i in idx])
        zw = np.stack([pad(sources[i].profile.weight, 0.0) for i in idx])
        dt = sources[idx[0]].energies.dtype
        pre = jax.tree.map(lambda *a: jnp.stack(a), *[pres[i] for i in idx])
        groups.append(SpectrumGroup(jnp.stack([sources[i].energies for i in idx]),
                                    jnp.stack([sources[i].weights for i in idx]),
                                    ProductionProfile(jnp.asarray(n_e, dtype=dt), jnp.asarray(zw, dtype=dt)), pre))
    return tuple(groups), tuple(tuple(m) for m in members)


def _group_tables(group: SpectrumGroup, osc: OscillationParams):
    """λ(E) P_eα(E) on every source table of the group: (g, n, 3)."""
    return jax.vmap(lambda e, w, prof: _flavour_table(e, w, prof, osc))(group.energies, group.weights, group.profile)


def _group_nodes(group: SpectrumGroup, tables):
    return jax.vmap(_node_values)(tables, group.pre)


@jax.custom_jvp
def group_weighted_nodes(group: SpectrumGroup, osc: OscillationParams):
    r"""The oscillated source tables of a group at its quadrature nodes, times the weights: (g, 3, n_T, q).

    Its JVP is :math:`\sum_k \dot	heta_k\, N(\partial_k 	ext{table})`, with the node values
    :math:`N(\partial_k 	ext{table})` of one tangent table per perturbed oscillation parameter
    computed from the primal alone. Reverse mode then contracts the cotangent with those node
    values instead of transposing the node gather into a scatter-add, which on a GPU is a
    contended atomic add of 10^6 nodes into a few thousand table entries. Forward mode and
    higher derivatives work; equal to plain autodiff to rounding (tests)."""
    return _group_nodes(group, _group_tables(group, osc))


def _group_weighted_nodes_jvp(primals, tangents):
    group, osc = primals
    dgroup, dosc = tangents
    if not all(_is_zero(t) for t in jax.tree.leaves(dgroup, is_leaf=_is_zero)):
        raise NotImplementedError("derivatives with respect to a spectrum group's fixed tables are not supported")
    free = tuple(k for k in osc._fields if not _is_zero(getattr(dosc, k)))
    if not free:
        out = group_weighted_nodes(group, osc)
        return out, jnp.zeros_like(out)

    def tables(*vals):
        return _group_tables(group, osc._replace(**dict(zip(free, vals))))

    vals = tuple(jnp.asarray(getattr(osc, k)) for k in free)
    # linearize once, then one linear map per parameter (a vmap over the basis was 3x slower on CPU)
    tab, lin = jax.linearize(tables, *vals)
    out = _group_nodes(group, tab)
    tangent = jnp.zeros_like(out)
    for i, k in enumerate(free):
        unit = tuple(jnp.ones_like(v) if j == i else jnp.zeros_like(v) for j, v in enumerate(vals))
        tangent = tangent + jnp.asarray(getattr(dosc, k)) * _group_nodes(group, lin(*unit))
    return out, tangent


group_weighted_nodes.defjvp(_group_weighted_nodes_jvp, symbolic_zeros=True)


def group_recoil_spectra(group: SpectrumGroup, physics: NewPhysics, osc: OscillationParams, *,
                         forward_nodes: bool | None = None):
    """:func:`precomputed_recoil_spectrum` of every spectrum of ``group`` at once: (g, n_T).

    ``forward_nodes`` chooses how derivatives pass the node interpolation: through
    :func:`group_weighted_nodes` (tangent tables pushed forward; default on accelerators) or by
    plain reverse mode (a scatter-add; default on CPU, where it measured faster). Both are exact."""
    if forward_nodes is None:
        forward_nodes = jax.default_backend() != "cpu"
    if not forward_nodes:
        return jax.vmap(lambda e, w, prof, pre: _spectrum(e, w, prof, pre, physics, osc))(
            group.energies, group.weights, group.profile, group.pre)
    wg = group_weighted_nodes(group, osc)
    return jax.vmap(lambda w, pre: _contract(w, pre, physics))(wg, group.pre)
