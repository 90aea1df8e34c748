r"""2-D response histograms :math:`N_{ij}^{(k)}` (true recoil T × observable N_p).

Two routes to the histogram of paper Sec. III.B:

* :func:`joint_response` -- the expectation of the histogram under the analytic response,
  :math:`J_{ij} = \int_{T_i} f_T^{SM}(T)\,P(j\mid T)\,dT` (per unit flux, in units of
  :math:`\sigma_0` = 2G_F²m_e/π), computed by quadrature: what an infinitely large MC sample gives.
* :func:`toy_mc_histogram` -- a finite toy Monte Carlo of (T, N_p) pairs drawn from the SM recoil
  spectrum and the analytic response, filled into :math:`N_{ij}`; optionally importance-sampled
  from a flatter recoil spectrum :math:`g \propto (f_T^{SM})^\alpha` with weights
  :math:`f_T^{SM}/g`, and with the effective sample size
  :math:`N_{eff} = (\sum_e w_e)^2 / \sum_e w_e^2` per recoil bin, for the SM or for a target
  hypothesis whose per-event weights include the reweighting factor (paper Sec. VI.A caveat).

Both return :class:`ResponseHistogram`, the input of :mod:`nuejax.reweighting`.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .._internal.build_jit import build_jit
from ..errors import InputError
from ..physics.cross_section import NewPhysics
from ..physics.oscillation import OscillationParams
from ..physics.spectra import (SolarSource, binned_recoil_spectrum, recoil_bin_quadrature, recoil_spectrum,
                               shape_only)
from .checks import check_edges, check_entries, describe_edges
from .response import QuenchingTable, ResponseParams, bin_probabilities, mean_photoelectrons, photoelectron_variance

__all__ = ["ResponseHistogram", "joint_response", "toy_mc_histogram"]


@dataclass(frozen=True)
class ResponseHistogram:
    """A 2-D (recoil × observable) histogram with the bookkeeping the reweighting needs.

    ``counts`` (n_T, n_obs): weighted entries N_ij. ``t_edges`` (n_T + 1,): true recoil energy T
    [MeV], starting at or above 0; ``obs_edges`` (n_obs + 1,): the observable. ``total`` is the sum
    of weights of all generated events, including those outside the observable window, so that
    ``counts / total`` is the joint probability per generated event. ``sumw2`` (n_T, n_obs) holds
    the sum of squared weights (None for an exact expectation); ``n_eff`` (n_T,) the effective
    sample size per recoil bin, or None.

    The arrays are stored as read-only float64 copies and checked once, at construction
    (:meth:`validate`): a bad histogram raises :class:`~nuejax.errors.InputError` naming it.
    """

    counts: np.ndarray
    t_edges: np.ndarray
    obs_edges: np.ndarray
    total: float
    sumw2: np.ndarray | None = None
    n_eff: np.ndarray | None = None
    name: str = ""

    def __post_init__(self):
        what = self._what()
        for field_name in ("counts", "t_edges", "obs_edges", "sumw2", "n_eff"):
            value = getattr(self, field_name)
            if value is None and field_name in ("sumw2", "n_eff"):
                continue
            try:
                arr = np.array(value, dtype=float)
            except (TypeError, ValueError) as err:
                raise InputError(f"{what}: {field_name} is not an array of numbers: {err}") from err
            arr.flags.writeable = False
            object.__setattr__(self, field_name, arr)
        try:
            object.__setattr__(self, "total", float(self.total))
        except (TypeError, ValueError) as err:
            raise InputError(f"{what}: total must be a number, got {self.total!r}") from err
        self.validate()

    def _what(self) -> str:
        return f"response histogram {self.name!r}" if self.name else "response histogram (unnamed)"

    @property
    def efficiency(self) -> float:
        """Fraction of generated events inside the observable window."""
        return float(np.sum(self.counts) / self.total)

    def validate(self, *, obs_edges=None, t_end: float | None = None, component: str | None = None) -> None:
        """Check the histogram; called at construction, and by the model builder with the
        component's observable binning ``obs_edges`` and recoil end point ``t_end`` [MeV].

        Always: edges 1-D, finite and strictly increasing, the recoil axis starting at >= 0;
        ``counts`` of shape (n_T, n_obs) matching the edges, finite and >= 0, not all zero;
        ``total`` finite and > 0, and not below the sum of entries (efficiency <= 1, up to a
        relative 1e-6 for quadrature rounding); ``sumw2`` and ``n_eff`` (if set) of matching
        shapes, finite and >= 0. With ``obs_edges``: the observable binning equals it. With
        ``t_end``: the recoil axis covers the spectrum, [0, t_end] (a first edge above 0 or a last
        edge below ``t_end`` would silently drop part of it).

        Raises:
            InputError: naming the histogram (and ``component``), the bin or edge and the problem.
        """
        what = self._what() + (f" of component {component!r}" if component else "")
        t_edges = check_edges(self.t_edges, what, "recoil (T)")
        o_edges = check_edges(self.obs_edges, what, "observable")
        if t_edges[0] < 0:
            raise InputError(f"{what}: recoil axis starts at {t_edges[0]:g} MeV < 0")
        shape = (t_edges.size - 1, o_edges.size - 1)
        if self.counts.shape != shape:
            raise InputError(f"{what}: counts have shape {self.counts.shape}, but the edges give "
                             f"(n_T, n_obs) = {shape}")
        counts = check_entries(self.counts, what)
        if not (np.isfinite(self.total) and self.total > 0):
            raise InputError(f"{what}: total (sum of weights of all generated events) is {self.total:g}; "
                             "it must be finite and > 0")
        entries = float(counts.sum())
        if entries > self.total * (1.0 + 1e-6):
            raise InputError(f"{what}: the entries sum to {entries:g}, more than the total {self.total:g} of "
                             f"generated events (efficiency {entries / self.total:.6g} > 1)")
        if self.sumw2 is not None:
            if self.sumw2.shape != shape:
                raise InputError(f"{what}: sumw2 has shape {self.sumw2.shape}, expected {shape}")
            check_entries(self.sumw2, f"{what}, sumw2", allow_empty=True)
        if self.n_eff is not None:
            if self.n_eff.shape != (shape[0],):
                raise InputError(f"{what}: n_eff has shape {self.n_eff.shape}, expected ({shape[0]},)")
            check_entries(self.n_eff, f"{what}, n_eff", allow_empty=True)
        if obs_edges is not None:
            want = np.asarray(obs_edges, dtype=float)
            if want.shape != o_edges.shape or not np.allclose(o_edges, want, rtol=1e-9, atol=1e-12):
                raise InputError(f"{what}: observable binning {describe_edges(o_edges)} does not match the "
                                 f"model's {describe_edges(want)}")
        if t_end is not None:
            t_end = float(t_end)
            if t_edges[0] > 0:
                raise InputError(f"{what}: recoil axis starts at {t_edges[0]:g} MeV > 0; the spectrum below "
                                 "it would be lost (the axis must start at 0)")
            # relative 1e-6: an axis built from a float32 end point still counts as covering it
            if t_edges[-1] < t_end * (1.0 - 1e-6):
                raise InputError(f"{what}: recoil axis ends at {t_edges[-1]:g} MeV, below the component's end "
                                 f"point {t_end:g} MeV; the spectrum above it would be lost")


def joint_response(source: SolarSource, t_edges, obs_edges, params: ResponseParams, table: QuenchingTable,
                   osc: OscillationParams = OscillationParams(), *, physics: NewPhysics = NewPhysics(),
                   radiative: bool = True, n_bin_quad: int = 4, n_sub: int = 1):
    r""":math:`J_{ij} = \int_{T_i} f_T(T) P(j\mid T) dT` in :math:`\sigma_0` units (a jax array).

    ``f_T`` is the SM spectrum unless ``physics`` says otherwise (the closure test folds a modified
    spectrum directly). Differentiable in the response ``params`` (light yield, kB, resolution)
    and in ``osc``. ``n_bin_quad`` x ``n_sub`` quadrature nodes per recoil bin (see
    :func:`~nuejax.physics.spectra.recoil_bin_quadrature`).
    """
    T, wf = recoil_bin_quadrature(source, t_edges, physics, osc, radiative=radiative,
                                  n_bin_quad=n_bin_quad, n_sub=n_sub, in_sigma0_units=True)
    P = bin_probabilities(T, obs_edges, params, table)  # (L, n_T, q, n_obs)
    return jnp.einsum("lnq,lnqj->nj", wf, P)


@build_jit(static_argnums=(6, 7, 8))
def _sm_joint_response_and_total(source, t_edges, obs_edges, params, table, osc, radiative, n_bin_quad, n_sub):
    # One compiled program per shape instead of the dozens of small ones that eager dispatch
    # compiles per component (most of a model's build time on CPU).
    J = joint_response(source, t_edges, obs_edges, params, table, osc, radiative=radiative,
                       n_bin_quad=n_bin_quad, n_sub=n_sub)
    total = binned_recoil_spectrum(source, t_edges, NewPhysics(), osc, radiative=radiative,
                                   in_sigma0_units=True).sum()
    return J, total


def expected_histogram(source: SolarSource, t_edges, obs_edges, params: ResponseParams, table: QuenchingTable,
                       osc: OscillationParams = OscillationParams(), *, radiative: bool = True,
                       n_bin_quad: int = 4, n_sub: int = 1) -> ResponseHistogram:
    """:func:`joint_response` packed as a :class:`ResponseHistogram` whose ``total`` is the full
    SM recoil integral (so ``counts/total`` is the joint probability per event).

    Raises:
        InputError: bad edges (not finite, not increasing, recoil axis below 0), or a histogram
            that fails :meth:`ResponseHistogram.validate` (e.g. empty in the observable window).
    """
    what = f"response histogram {source.name!r}"
    check_edges(t_edges, what, "recoil (T)")
    check_edges(obs_edges, what, "observable")
    J, total = _sm_joint_response_and_total(shape_only(source), jnp.asarray(t_edges), jnp.asarray(obs_edges),
                                            params, table, osc, radiative, n_bin_quad, n_sub)
    return ResponseHistogram(np.asarray(J), np.asarray(t_edges), np.asarray(obs_edges), float(total),
                             name=source.name)


def toy_mc_histogram(source: SolarSource, t_edges, obs_edges, n_events: int, *, seed: int = 0,
                     params: ResponseParams = ResponseParams(), table: QuenchingTable,
                     osc: OscillationParams = OscillationParams(), radiative: bool = True,
                     importance_alpha: float = 1.0, target: NewPhysics | None = None,
                     chunk: int = 1_000_000) -> ResponseHistogram:
    r"""Toy-MC response histogram of ``n_events`` SM events of ``source``.

    Recoil energies are drawn bin by bin from :math:`g_i \propto b_i^\alpha` (:math:`b_i` the SM
    bin integral; ``importance_alpha=1`` is plain SM sampling, 0 is flat over the populated bins),
    uniformly inside the bin, with weight :math:`w = (b_i/\sum b)/g_i`; N_p is Gaussian with the
    analytic mean and variance. ``n_eff`` is computed for the SM weights, or, with ``target``,
    for the weights :math:`w\,f_T(T;\text{target})/f_T^{SM}(T)` that reweight the sample to that
    hypothesis. Uses numpy's PCG64 generator seeded with ``seed``.

    Raises:
        InputError: ``n_events`` < 1, ``importance_alpha`` outside [0, 1], bad edges, an SM
            spectrum that is empty on ``t_edges``, or a histogram that fails
            :meth:`ResponseHistogram.validate` (e.g. no event inside the observable window).
    """
    what = f"toy-MC response histogram {source.name!r}"
    if not n_events >= 1:
        raise InputError(f"{what}: n_events must be >= 1, got {n_events}")
    if not 0.0 <= importance_alpha <= 1.0:
        raise InputError(f"{what}: importance_alpha must lie in [0, 1], got {importance_alpha}")
    t_edges = check_edges(t_edges, what, "recoil (T)")
    obs_edges = check_edges(obs_edges, what, "observable")
    if t_edges[0] < 0:
        raise InputError(f"{what}: recoil axis starts at {t_edges[0]:g} MeV < 0")
    b = np.asarray(binned_recoil_spectrum(source, t_edges, NewPhysics(), osc, radiative=radiative,
                                          in_sigma0_units=True))
    if np.any(b < 0) or not np.any(b > 0):
        raise InputError(f"{what}: the SM recoil spectrum on the recoil axis {describe_edges(t_edges)} MeV "
                         "is empty or negative")
    p_true = b / b.sum()
    g = np.where(b > 0, b ** importance_alpha, 0.0)
    g = g / g.sum()
    w_bin = np.where(g > 0, p_true / np.where(g > 0, g, 1.0), 0.0)
    # Line components: sample only below the line's end point inside the last populated bin.
    t_hi = np.minimum(t_edges[1:], float(source.t_end))

    rng = np.random.default_rng(seed)
    n_T, n_obs = len(t_edges) - 1, len(obs_edges) - 1
    counts = np.zeros((n_T, n_obs))
    sumw2 = np.zeros((n_T, n_obs))
    sw_t = np.zeros(n_T)
    sw2_t = np.zeros(n_T)
    mean_np = jax.jit(lambda t: mean_photoelectrons(t, params, table))
    var_np = jax.jit(lambda m: photoelectron_variance(m, params))
    if target is not None:
        ratio = jax.jit(lambda t: recoil_spectrum(source, t, target, osc, radiative=radiative, in_sigma0_units=True)
                        / recoil_spectrum(source, t, NewPhysics(), osc, radiative=radiative, in_sigma0_units=True))
    total = 0.0
    done = 0
    while done < n_events:
        n = min(chunk, n_events - done)
        i = rng.choice(n_T, size=n, p=g)
        T = t_edges[i] + rng.random(n) * (t_hi[i] - t_edges[i])
        mu = np.asarray(mean_np(jnp.asarray(T)))
        sig = np.sqrt(np.maximum(np.asarray(var_np(jnp.asarray(mu))), 1e-12))
        Np = mu + sig * rng.standard_normal(n)
        w = w_bin[i]
        total += w.sum()
        j = np.searchsorted(obs_edges, Np, side="right") - 1
        inside = (j >= 0) & (j < n_obs)
        np.add.at(counts, (i[inside], j[inside]), w[inside])
        np.add.at(sumw2, (i[inside], j[inside]), w[inside] ** 2)
        wt = w * np.asarray(ratio(jnp.asarray(T))) if target is not None else w
        np.add.at(sw_t, i, wt)
        np.add.at(sw2_t, i, wt**2)
        done += n
    n_eff = np.where(sw2_t > 0, sw_t**2 / np.where(sw2_t > 0, sw2_t, 1.0), 0.0)
    return ResponseHistogram(counts, t_edges, obs_edges, float(total), sumw2, n_eff, name=source.name)
