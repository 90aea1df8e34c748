r"""Fold stages: from the signals' recoil spectra to expected counts in observable bins.

* :class:`KernelFold` -- the paper's fold through fixed 2-D kernels (Eqs. Rij, fT_norm,
  reweight_factor, fNp_reweight multiplied out into :math:`G^{(k)}`, :mod:`nuejax.reweighting`):
  :math:`x_j = \sum_k a_k \sum_i f^{(k)}_i G^{(k)}_{ij}`.
* :class:`DiagonalFold` -- the same with diagonal kernels, an element-wise product.
* :class:`FloatingFold` -- the analytic scintillator response recomputed in every call from the
  response parameters (light yield, Birks :math:`k_B`, resolution):
  :math:`x_j = \sum_k a_k C_k \sum_i f^{(k)}_i \sum_q w^{(k)}_{iq} P(j \mid T^{(k)}_{iq}; Y, k_B, v_0, v_1)`
  (:mod:`nuejax.model.floating` derives the nodes and weights and says how the two agree).

A fold takes what the signal stage returns (a list of (n_T_k,) spectra, or one (n_sig, n_T)
array) and applies each signal's flux normalisation :math:`a_k` (the parameter ``norms[k]``).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .._internal.pytree import static_field
from ..detector.kernel_blocks import KernelBlocks, use_blocks
from ..detector.mean_grid import MeanGrid, grid_fold, mean_grid
from ..detector.response import (QuenchingTable, ResponseParams, bin_probabilities, gaussian_fold, mean_photoelectrons,
                                 photoelectron_variance)
from ..errors import InputError
from .parameters import ParameterSet
from .stages import ComponentScales

__all__ = ["DiagonalFold", "KernelFold", "FloatingFold", "NormalisedSignals", "RESPONSE_TERMS", "response_grid"]

#: The response parameters of a floating fold, named like the fields of
#: :class:`~nuejax.detector.response.ResponseParams`.
RESPONSE_TERMS = ("light_yield", "kB", "var_const", "var_rel")



class NormalisedSignals(ComponentScales):
    """A stage that applies the signals' flux normalisations ``norms`` (one per signal; signals may
    share one): :class:`~nuejax.model.stages.ComponentScales` in them."""

    @property
    def scale_names(self) -> tuple:
        return tuple(dict.fromkeys(self.norms))


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class KernelFold(NormalisedSignals):
    """The fold through fixed kernels (module docstring). ``kernels``: (n_sig, n_T, n_obs) stacked,
    or a tuple where the signals' recoil binnings differ; ``kernel_blocks``: the same kernels cut
    into blocks covering their nonzero entries, the fold's route where they live on a CPU device
    (:mod:`nuejax.detector.kernel_blocks`), None elsewhere (one dense product); ``norms`` (static)
    each signal's normalisation parameter. Build with :meth:`create`."""

    kernels: jax.Array | tuple
    kernel_blocks: KernelBlocks | None
    norms: tuple = static_field()

    @classmethod
    def create(cls, signals) -> "KernelFold":
        """From signal components (:class:`~nuejax.model.signals.SignalComponent`, each with its kernel)."""
        kernels = [s.kernel for s in signals]
        same = len({k.shape for k in kernels}) == 1
        blocks = KernelBlocks.from_kernels(kernels) if use_blocks(kernels) else None
        return cls(jnp.stack(kernels) if same else tuple(kernels), blocks, tuple(s.norm for s in signals))

    def kernel_list(self) -> list:
        """The kernels, one (n_T_k, n_obs) array per signal."""
        return list(self.kernels)

    def __call__(self, p, f) -> jax.Array:
        if self.kernel_blocks is not None:  # the CPU route: only the blocks holding nonzero entries
            return self.kernel_blocks.fold([p[n] * fk for n, fk in zip(self.norms, f)])
        if isinstance(self.kernels, tuple):  # kernels of different shapes: fold one by one
            return sum(p[n] * (fk @ k) for n, fk, k in zip(self.norms, f, self.kernels))
        # one matrix-vector product over all signals; flat: no transpose
        a = jnp.stack([p[n] for n in self.norms])
        return (a[:, None] * jnp.stack(f)).reshape(-1) @ self.kernels.reshape(-1, self.kernels.shape[-1])


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class DiagonalFold(NormalisedSignals):
    r"""The fold through fixed diagonal kernels, :math:`x_i = \sum_k a_k f^{(k)}_i d^{(k)}_i`: a
    recoil bin's counts, with no response yet (the liquid-xenon model: :mod:`nuejax.model.xenon`,
    whose keV response is a later stage). The same numbers as :class:`KernelFold` with the
    kernels :math:`G^{(k)} = \mathrm{diag}(d^{(k)})`, at the cost of an element-wise product:
    XENONnT's 9 dense 462 × 462 kernels were 15 MB read by every evaluation, 94 % of −2 ln L's
    bytes and most of its time on 2 CPU cores (benchmarks/NOTES.md). ``scales`` (n_sig, n_T) the
    diagonals; ``norms`` (static) each signal's normalisation parameter. Build with :meth:`create`."""

    scales: jax.Array
    norms: tuple = static_field()

    @classmethod
    def create(cls, signals) -> "DiagonalFold":
        """From signal components whose kernels are square and diagonal, on one recoil binning.

        Raises:
            InputError: a kernel that is not square, has a nonzero entry off its diagonal (names
                the signal and the entry), or a recoil binning that differs from the first signal's.
        """
        diag = []
        for s in signals:
            k = np.asarray(s.kernel)
            if k.ndim != 2 or k.shape[0] != k.shape[1]:
                raise InputError(f"DiagonalFold: the kernel of {s.name} has shape {k.shape}, not square")
            off = k - np.diag(np.diag(k))
            if np.any(off != 0):
                i, j = (int(v[0]) for v in np.nonzero(off))
                raise InputError(f"DiagonalFold: the kernel of {s.name} has the entry {k[i, j]} at ({i}, {j}), off its "
                                 "diagonal: use KernelFold")
            diag.append(np.diag(k))
        if len({d.shape for d in diag}) > 1:
            raise InputError(f"DiagonalFold: the signals' recoil binnings differ ({[d.shape[0] for d in diag]} bins)")
        dt = jnp.result_type(*[s.kernel for s in signals])
        return cls(jnp.asarray(np.stack(diag), dtype=dt), tuple(s.norm for s in signals))

    def kernel_list(self) -> list:
        """The kernels as dense matrices, one (n_T, n_T) per signal (for build steps that multiply
        them out: :func:`~nuejax.model.fast.fast_model`)."""
        return [jnp.diag(d) for d in self.scales]

    def __call__(self, p, f) -> jax.Array:
        a = jnp.stack([p[n] for n in self.norms])
        return jnp.sum(a[:, None] * jnp.stack(f) * self.scales, axis=0)


def response_grid(nodes, edges, parameters: ParameterSet, table: QuenchingTable, step: float, dtype) -> MeanGrid:
    """The grid of means of the interpolated fold (:mod:`~nuejax.detector.mean_grid`), up to the
    largest node mean that the bounds of ``parameters`` allow: the highest light yield and the
    lowest k_B (the quenched energy falls as k_B grows)."""
    lo_v0 = parameters["var_const"].lower
    if lo_v0 < 0:
        raise InputError(f"the grid fold needs var_const >= 0 (its grid spacing assumes the width is at least the "
                         f"photoelectron statistics), but its lower bound is {lo_v0}; use fold='exact'")
    top = ResponseParams(parameters["light_yield"].upper, parameters["kB"].lower)
    mu_max = float(mean_photoelectrons(jnp.asarray(float(np.max(nodes))), top, table))
    return mean_grid(mu_max, float(np.max(edges)), float(step), dtype=dtype)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class FloatingFold(NormalisedSignals):
    """The fold through the analytic response recomputed per call (module docstring).

    ``nodes``/``weights`` (n_sig, n_T, n_q): recoil quadrature nodes [MeV] and weights (times
    C_k; zero-padded where signals differ in n_T or n_q); ``table`` the stopping-power table of
    the Birks integral; ``grid`` the grid of means of the interpolated fold (None: the exact fold,
    one Gaussian integral per node and edge); ``obs_edges`` the fold's output bins; ``norms``
    (static) each signal's normalisation parameter; ``quadrature`` (static) how the nodes were
    made (``'bin'`` or ``'midpoint'``, :func:`~nuejax.model.floating.floating_response_model`).
    """

    nodes: jax.Array
    weights: jax.Array
    table: QuenchingTable
    grid: MeanGrid | None
    obs_edges: jax.Array
    norms: tuple = static_field()
    quadrature: str = static_field(default="bin")

    @property
    def reads(self) -> tuple:
        return self.scale_names + RESPONSE_TERMS

    def with_parameters(self, parameters: ParameterSet) -> "FloatingFold":
        """The grid of means follows new bounds of the light yield, k_B and var_const."""
        if self.grid is None:
            return self
        grid = response_grid(np.asarray(self.nodes), np.asarray(self.obs_edges), parameters, self.table,
                             self.grid.step, self.nodes.dtype)
        return type(self)(self.nodes, self.weights, self.table, grid, self.obs_edges, self.norms, self.quadrature)

    @staticmethod
    def response(p) -> ResponseParams:
        return ResponseParams(*(p[n] for n in RESPONSE_TERMS))

    def stacked(self, f) -> jax.Array:
        """The signals' spectra as one (n_sig, n_T) array, zero-padded to the nodes' n_T."""
        if isinstance(f, (list, tuple)):
            n = self.nodes.shape[1]
            return jnp.stack([jnp.pad(fk, (0, n - fk.shape[0])) for fk in f])
        return f

    def kernels(self, p) -> jax.Array:
        r"""The floating kernels :math:`K_{kij} = C_k \sum_q w_{iq} P(j\mid T_{iq}; p)` (n_sig,
        n_T, n_obs): at the nominal response, the fixed model's kernels :math:`G^{(k)}` (for
        inspection; a call contracts the same sum directly)."""
        P = bin_probabilities(self.nodes, self.obs_edges, self.response(p), self.table)
        return jnp.sum(self.weights[..., None] * P, axis=2)

    def __call__(self, p, f) -> jax.Array:
        a = jnp.stack([p[n] for n in self.norms])
        w = (a[:, None] * self.stacked(f))[..., None] * self.weights  # (n_sig, n_T, n_q)
        resp = self.response(p)
        mean = mean_photoelectrons(self.nodes, resp, self.table)
        if self.grid is not None:
            return grid_fold(w, mean, resp, self.obs_edges, self.grid)
        return gaussian_fold(w, mean, photoelectron_variance(mean, resp), self.obs_edges)
