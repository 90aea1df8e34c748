r"""Recoil spectra at fixed recoil energies with the cross section precomputed on its quadrature nodes.

For a fixed set of recoil energies :math:`T_i` (a model's recoil-bin centres) the neutrino-energy
nodes :math:`E_{iq}` of Eq. (fT) (see :func:`~nuejax.physics.spectra.recoil_spectrum`) and their
weights are fixed. The weak cross section factorises into flavour-independent kinematic factors
and flavour-dependent couplings (BKS Eq. A1; tree level with :math:`f = 0`; the NSI shift the
couplings, :math:`\tilde g = g + \varepsilon`):

.. math::
    \frac{d\sigma_\alpha}{dT} = \sigma_0\big[\tilde g_{L\alpha}^2(T) K_A(T,E) + \tilde g_{R\alpha}^2(T) K_B(T,E)
        + \tilde g_{L\alpha}\tilde g_{R\alpha}(T) K_C(T,E)\big] + \mu_\alpha^2 K_\mu(T,E),

where only the couplings depend on the flavour (with BKS also on :math:`T`, never on :math:`E`;
:func:`~nuejax.physics.cross_section.weak_kinematics`), and :math:`K_\mu = \pi r_e^2(1/T - 1/E)`
(paper Eq. xs_mm). So the recoil spectrum is

.. math::
    f_T(T_i) = \sum_\alpha \big[\tilde g_{L\alpha}^2 S_{A\alpha} + \tilde g_{R\alpha}^2 S_{B\alpha}
        + \tilde g_{L\alpha}\tilde g_{R\alpha} S_{C\alpha} + \mu_\alpha^2 S_{\mu\alpha}\big](T_i),\qquad
    S_{k\alpha}(T_i) = \sum_q w_{iq} K_k(T_i, E_{iq})\, \lambda\bar P_{e\alpha}(E_{iq}),

:class:`PrecomputedSpectrum` stores the four weighted kinematic arrays :math:`w K_k` (n_T, q) and
the couplings (3, n_T). A call interpolates :math:`\lambda\bar P` onto the nodes, makes the four
sums :math:`S` per flavour (one pass over 4 fixed arrays instead of 21 per-flavour coefficient
arrays), and combines them with the couplings. The new physics enters only that last, small step,
so the derivatives in ε and μ_ν never touch the node arrays. The tests compare this route with
:func:`~nuejax.physics.spectra.recoil_spectrum`, which evaluates :func:`dsigma_dT` itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import jax
import jax.numpy as jnp
import numpy as np

from .._internal.build_jit import build_jit
from .cross_section import NewPhysics, MM_SCALE_SIGMA0, as_float, mm_shape, bks_couplings, tree_couplings, weak_kinematics
from .oscillation import (PRODUCTION_NODES, OscillationParams, ProductionProfile, is_zero, flavour_affine, mean_cos2m,
                          pad_profile, production_quadrature)
from .spectra import SolarSource, energy_nodes, grid_position, shape_only

__all__ = ["PrecomputedSpectrum", "precompute_spectrum", "precomputed_recoil_spectrum", "nsi_coefficients",
           "probe_points", "coefficients_from_probes", "SpectrumGroup", "group_spectra", "group_recoil_spectra",
           "oscillated_sums", "combine_sums", "group_cos_sums", "group_probe_coefficients"]


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
    ``kin`` (4, n_T, q) the weighted kinematic factors :math:`w K_A, w K_B, w K_C, w K_\\mu` in σ0
    units (:math:`K_\\mu` per (10⁻¹¹ μ_B)²), zero outside the physical region; ``gL``, ``gR``
    (3, n_T) the SM couplings of ν_e, ν_μ, ν_τ at each recoil energy; ``base`` (4, n_T) the sums
    :math:`\\sum_q w K_k\\, \\lambda(E_q)` of the unoscillated spectrum (module docstring).
    """

    energies: jax.Array
    weights: jax.Array
    index: jax.Array
    frac: jax.Array
    kin: jax.Array
    gL: jax.Array
    gR: jax.Array
    base: jax.Array


def _node_positions(source: SolarSource, E):
    """Interpolation index, fraction and inside-mask of nodes ``E`` in the source's uniform grid."""
    grid = np.asarray(source.energies, dtype=np.float64)
    E = np.asarray(E, dtype=np.float64)
    if source.is_line:
        index = np.broadcast_to(np.arange(grid.shape[0]), E.shape)
        return index, np.zeros(E.shape), np.ones(E.shape, dtype=bool)
    return grid_position(E, grid, np)


@build_jit(static_argnums=2)
def _continuum_nodes(source, T, n_quad):
    # one compiled program instead of a dozen eager steps (each a small XLA compilation)
    return energy_nodes(source, T, n_quad)


@build_jit(static_argnums=(6, 7))
def _fixed_tensors(T, E, W, index, frac, values, radiative, dtype):
    # One compiled program per shape: evaluated eagerly, the elementwise steps dispatched dozens
    # of small XLA compilations per component (most of a model's build time).
    valid, K, _, _ = weak_kinematics(T[:, None], E, radiative=radiative)
    K = jnp.where(valid[..., None], K, 0.0)
    mm = mm_shape(T[:, None], E) * MM_SCALE_SIGMA0**2
    kin = W * jnp.concatenate([jnp.moveaxis(K, -1, 0), mm[None]])
    if radiative:
        gL, gR = bks_couplings(T)  # (n_T, 3); bks_couplings guards T below 1e-7 MeV
    else:
        gL, gR = (jnp.broadcast_to(g, T.shape + (3,)) for g in tree_couplings())
    base = _interp_sums(values, index, frac, kin)
    return tuple(a.astype(dtype) for a in (kin, gL.T, gR.T, base))


def precompute_spectrum(source: SolarSource, T, *, radiative: bool = True, n_quad: int = 48) -> PrecomputedSpectrum:
    """Precompute the weighted kinematic factors and couplings of ``source`` at the recoil energies ``T`` (n_T,)."""
    T = jnp.asarray(T, dtype=source.energies.dtype)
    if source.is_line:
        E = np.broadcast_to(np.asarray(source.energies), T.shape + source.energies.shape)
        W = np.ones(E.shape)
    else:
        # the nodes read the energy grid alone: the compiled program is shared by every continuum
        E, W = _continuum_nodes(replace(shape_only(source), weights=None, profile=None, flux=None), T, n_quad)
    index, frac, inside = _node_positions(source, E)
    dt = source.energies.dtype
    # The fixed tensors are computed in float64 when JAX allows it and then stored in the source's
    # dtype: the BKS loop function cancels at small T in float32 (3.5e-4 at T = 0 for pp).
    hi = jnp.float64 if jax.config.jax_enable_x64 else dt
    W = np.where(inside, np.asarray(W), 0.0)
    kin, gL, gR, base = _fixed_tensors(T.astype(hi), jnp.asarray(E, dtype=hi), jnp.asarray(W, dtype=hi),
                                       jnp.asarray(index, dtype=jnp.int32), jnp.asarray(frac, dtype=hi),
                                       source.weights.astype(hi), radiative, np.dtype(dt))
    return PrecomputedSpectrum(jnp.asarray(E, dtype=dt), jnp.asarray(W, dtype=dt), jnp.asarray(index, dtype=jnp.int32),
                               jnp.asarray(frac, dtype=dt), kin, gL, gR, base)


def _stack(arrays):
    """``jnp.stack(arrays)``, done by numpy where no array is traced: eager stacks compile one small
    XLA program per shape (ten of them, 1.5 s of a Phase-III build's first run on 2 cores)."""
    if any(isinstance(a, jax.core.Tracer) for a in arrays):
        return jnp.stack(arrays)
    return jnp.asarray(np.stack([np.asarray(a) for a in arrays]))


def _interp_at(t, index, frac):
    """``t`` (..., n) linearly interpolated at the nodes ``index``/``frac``: (..., n_T, q).

    A zero entry is appended so that a line's ``index + 1`` stays in range (its ``frac`` is 0)."""
    t = jnp.concatenate([t, jnp.zeros_like(t[..., :1])], axis=-1)
    return t[..., index] * (1.0 - frac) + t[..., index + 1] * frac


def node_values(table, pre: PrecomputedSpectrum):
    """The table (n, 3) interpolated at the nodes times the quadrature weights: (3, n_T, q)."""
    return pre.weights * _interp_at(table.T, pre.index, pre.frac)


def _interp_sums(values, index, frac, kin):
    """(4, n_T): :math:`\\sum_q` kin × (``values`` (n,) interpolated at the nodes)."""
    return jnp.sum(_interp_at(values, index, frac)[None] * kin, axis=-1)


def oscillated_sums(C, pre: PrecomputedSpectrum, osc: OscillationParams):
    r"""The sums :math:`S_{k\alpha} = \sum_q w K_k\, \lambda\bar P_{e\alpha}` (4, 3, n_T) from the sums of :math:`\lambda\,\overline{\cos 2\theta_m}`,
    ``C`` (4, n_T): the flavour probabilities are affine in :math:`\overline{\cos 2\theta_m}(E)`
    (:func:`~nuejax.physics.oscillation.flavour_affine`), so :math:`S_{k\alpha} = a_\alpha
    B_k + b_\alpha C_k` with the fixed sums :math:`B_k` of the unoscillated spectrum
    (``pre.base``). One interpolated table per call instead of three."""
    a, b = flavour_affine(osc)
    return pre.base[:, None, :] * a[None, :, None] + C[:, None, :] * b[None, :, None]


def combine_sums(S, pre: PrecomputedSpectrum, physics: NewPhysics):
    r""":math:`f_T(T_i) = \sum_\alpha [\tilde g_L^2 S_A + \tilde g_R^2 S_B + \tilde g_L\tilde g_R S_C
    + \mu^2 S_\mu]` with :math:`\tilde g = g + \varepsilon` (module docstring); ``S`` (4, 3, n_T)."""
    gL = pre.gL + as_float(physics.eps_L)[:, None]
    gR = pre.gR + as_float(physics.eps_R)[:, None]
    mu2 = jnp.broadcast_to(as_float(physics.mu_nu), (3,))[:, None] ** 2
    return jnp.sum(gL * gL * S[0] + gR * gR * S[1] + gL * gR * S[2] + mu2 * S[3], axis=0)


def _spectrum(energies, weights, profile, pre, physics, osc):
    C = _interp_sums(weights * mean_cos2m(energies, osc, profile), pre.index, pre.frac, pre.kin)
    return combine_sums(oscillated_sums(C, pre, osc), pre, physics)


def precomputed_recoil_spectrum(source: SolarSource, pre: PrecomputedSpectrum, physics: NewPhysics,
                                osc: OscillationParams):
    r""":math:`f_T(T_i)` in σ0 units at the precomputed recoil energies; equals
    :func:`~nuejax.physics.spectra.recoil_spectrum` (``in_sigma0_units=True``) to rounding.
    ``pre`` belongs to ``source``: it holds sums over the source's spectrum (``pre.base``)."""
    return _spectrum(source.energies, source.weights, source.profile, pre, physics, osc)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SpectrumGroup:
    """Several spectra of equal shapes stacked on a leading axis (a PyTree), so that one
    vectorised evaluation (:func:`group_recoil_spectra`) replaces a loop over components: on a
    GPU a loop costs a kernel launch per operation and component.

    ``energies``/``weights`` (g, n) the sources' tables; ``profile`` their production zones or
    the Gauss rule replacing them (g, n_r; :func:`group_spectra`), padded with zero-weight zones
    to a common n_r (exact); ``pre`` the stacked
    :class:`PrecomputedSpectrum`.
    """

    energies: jax.Array
    weights: jax.Array
    profile: ProductionProfile
    pre: PrecomputedSpectrum


def _shape_key(source: SolarSource, pre: PrecomputedSpectrum):
    return (source.is_line, source.energies.shape, pre.energies.shape)


def group_spectra(sources, pres, production_nodes: int | None = PRODUCTION_NODES) -> tuple:
    """Stack ``(source, pre)`` pairs of equal shapes into :class:`SpectrumGroup` s.

    Each source's production zones are replaced by the Gauss rule of ``production_nodes`` nodes
    of its production distribution (:func:`~nuejax.physics.oscillation.production_quadrature`;
    equal to the zone sum to rounding for the flavour-diagonal MSW average, 25x fewer terms;
    ``None`` keeps every zone).

    Returns ``(groups, members)``: ``members[g]`` lists the input positions stacked in group g."""
    keys, members = [], []
    for i, (s, p) in enumerate(zip(sources, pres)):
        k = _shape_key(s, p)
        if k not in keys:
            keys.append(k)
            members.append([])
        members[keys.index(k)].append(i)

    def zones(src):
        n_e, w = np.asarray(src.profile.n_e), np.asarray(src.profile.weight)
        if production_nodes is None or np.count_nonzero(w) <= production_nodes:
            return ProductionProfile(n_e, w)
        return ProductionProfile(*production_quadrature(n_e, w, production_nodes))

    groups = []
    for idx in members:
        prof = [zones(sources[i]) for i in idx]
        n_r = max(p.n_e.shape[0] for p in prof)
        prof = [pad_profile(p, n_r) for p in prof]
        n_e = np.stack([p.n_e for p in prof])
        zw = np.stack([p.weight for p in prof])
        dt = sources[idx[0]].energies.dtype
        pre = jax.tree.map(lambda *a: _stack(a), *[pres[i] for i in idx])
        groups.append(SpectrumGroup(_stack([sources[i].energies for i in idx]),
                                    _stack([sources[i].weights for i in idx]),
                                    ProductionProfile(jnp.asarray(n_e, dtype=dt), jnp.asarray(zw, dtype=dt)), pre))
    return tuple(groups), tuple(tuple(m) for m in members)


def _group_cos_tables(group: SpectrumGroup, osc: OscillationParams):
    """λ(E) times the production average of cos 2θ_m on every source table of the group: (g, n)."""
    return jax.vmap(lambda e, w, prof: w * mean_cos2m(e, osc, prof))(group.energies, group.weights, group.profile)


def _group_sums(group: SpectrumGroup, tables):
    return jax.vmap(lambda t, pre: _interp_sums(t, pre.index, pre.frac, pre.kin))(tables, group.pre)


@jax.custom_jvp
def group_cos_sums(group: SpectrumGroup, osc: OscillationParams):
    r"""The sums :math:`C_k = \sum_q w K_k\, \lambda\overline{\cos 2\theta_m}` of every spectrum
    of a group: (g, 4, n_T) (:func:`oscillated_sums`).

    :math:`C` is linear in the table, so its JVP is :math:`\sum_j \dot\theta_j\, C(\partial_j
    \text{table})`, with one tangent table per perturbed oscillation parameter computed from the
    primal alone. The tangent sums are small (g, 4, n_T) arrays, so reverse mode contracts the
    cotangent with them instead of transposing the node interpolation into a scatter-add over
    the (g, n_T, q) nodes (slow on every backend: on a GPU a contended atomic add of 10⁵ nodes
    into a thousand table entries). Forward mode and higher derivatives work; equal to plain
    autodiff to rounding (tests)."""
    return _group_sums(group, _group_cos_tables(group, osc))


def _group_cos_sums_jvp(primals, tangents):
    group, osc = primals
    dgroup, dosc = tangents
    if not all(is_zero(t) for t in jax.tree.leaves(dgroup, is_leaf=is_zero)):
        raise NotImplementedError("derivatives with respect to a spectrum group's fixed tables are not supported")
    free = tuple(k for k in osc._fields if not is_zero(getattr(dosc, k)))
    if not free:
        out = group_cos_sums(group, osc)
        return out, jnp.zeros_like(out)

    def tables(*vals):
        return _group_cos_tables(group, osc._replace(**dict(zip(free, vals))))

    vals = tuple(jnp.asarray(getattr(osc, k)) for k in free)
    # linearize once, then one linear map per parameter; the value and tangent tables go through
    # the node sums together, one pass over the fixed node arrays
    tab, lin = jax.linearize(tables, *vals)
    units = [tuple(jnp.ones_like(v) if j == i else jnp.zeros_like(v) for j, v in enumerate(vals))
             for i in range(len(free))]
    stacked = jnp.stack([tab] + [lin(*u) for u in units], axis=-1)  # (g, n, 1 + n_free)
    sums = jax.vmap(lambda t, pre: jax.vmap(lambda c: _interp_sums(c, pre.index, pre.frac, pre.kin),
                                            in_axes=1)(t))(stacked, group.pre)  # (g, 1 + n_free, 4, n_T)
    out = sums[:, 0]
    tangent = jnp.zeros_like(out)
    for i, k in enumerate(free):
        tangent = tangent + jnp.asarray(getattr(dosc, k)) * sums[:, i + 1]
    return out, tangent


group_cos_sums.defjvp(_group_cos_sums_jvp, symbolic_zeros=True)


def group_recoil_spectra(group: SpectrumGroup, physics: NewPhysics, osc: OscillationParams, *,
                         forward_nodes: bool = True):
    """:func:`precomputed_recoil_spectrum` of every spectrum of ``group`` at once: (g, n_T).

    ``forward_nodes`` chooses how derivatives in the oscillation parameters pass the node
    interpolation: through :func:`group_cos_sums` (tangent tables pushed forward to the small
    sums; the default) or by plain reverse mode (a scatter-add over the nodes). Both are exact;
    derivatives in ε and μ_ν never reach the nodes."""
    if not isinstance(forward_nodes, bool):
        raise TypeError(f"forward_nodes must be True or False, got {forward_nodes!r}")
    C = group_cos_sums(group, osc) if forward_nodes else _group_sums(group, _group_cos_tables(group, osc))
    return jax.vmap(lambda c, pre: combine_sums(oscillated_sums(c, pre, osc), pre, physics))(C, group.pre)


@build_jit
def group_probe_coefficients(group: SpectrumGroup, osc: OscillationParams):
    """The polynomial coefficients (17, g, n_T) of the recoil spectra of a group in the new
    physics (:func:`coefficients_from_probes` of the spectra at the 17 :func:`probe_points`,
    μ_ν probe 1, the unit of the parameter), at fixed oscillations: the basis of the fast path
    and of the floating-response fast path. One compilation per group shape."""
    return coefficients_from_probes(jax.vmap(lambda p: group_recoil_spectra(group, p, osc))(probe_points(1.0)))
