r"""Likelihood stages: the binned Poisson likelihood (paper Eq. logL) and the unbinned extended
likelihood (one term per event).

Binned Poisson likelihood, paper Eq. (logL):

.. math::
    -2\ln\mathcal L = 2\sum_j\left[\mu_j - n_j\ln\mu_j + \ln\Gamma(n_j + 1)\right]
                      + \sum_m \frac{(\theta_m - \hat\theta_m)^2}{\sigma_m^2}.

Bins with :math:`n_j = 0` contribute :math:`2\mu_j` (no logarithm, so :math:`\mu_j \to 0` is
fine). A bin with :math:`\mu_j \le 0` and :math:`n_j > 0` has zero likelihood: the jitted
function returns :math:`+\infty` there (no NaN, and a minimizer backs away), and
:func:`check_expected` raises an error naming the bin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from .._internal.pytree import static_field
from ..errors import InputError

__all__ = ["BinnedPoisson", "UnbinnedPoisson", "unbinned_nll", "poisson_nll", "check_expected", "check_counts", "poisson_draw", "poisson_parts",
           "POISSON_PART_MAX"]

#: Largest mean :func:`jax.random.poisson` is asked to draw from. Its draws are wrong for large
#: means (JAX 0.10.2, 4e5 draws per mean: variance/mean 1.013 at 1.4e5, 0.945 at 6.5e5, 0.907 at
#: 3e6, 6-42 standard errors from 1; within 1.6 standard errors at every tested mean up to 1.04e5:
#: ``benchmarks/accuracy/poisson_sampler.py``); :func:`poisson_draw` splits larger means into parts.
POISSON_PART_MAX = 1.0e4


def poisson_parts(mu_max: float) -> int:
    """Number of equal parts that keeps each below :data:`POISSON_PART_MAX` for means up to ``mu_max``."""
    m = float(mu_max)
    if not math.isfinite(m):
        raise ValueError(f"expected counts must be finite to draw toys, the largest is {m}")
    return max(1, math.ceil(m / POISSON_PART_MAX))


def poisson_draw(key, mu, shape=None, parts: int = 1):
    r"""Poisson draws with means ``mu`` (broadcast to ``shape``), exact for any mean: the sum of
    ``parts`` independent draws with mean :math:`\mu/\text{parts}` (a sum of independent Poisson
    variables is Poisson with the summed mean), so no single draw exceeds
    :data:`POISSON_PART_MAX` when ``parts >= poisson_parts(max(mu))``. ``parts`` is static."""
    mu = jnp.asarray(mu)
    shape = mu.shape if shape is None else tuple(shape)
    if parts == 1:
        return jax.random.poisson(key, mu, shape=shape).astype(mu.dtype)
    draws = jax.random.poisson(key, mu / parts, shape=(parts,) + shape)
    return jnp.sum(draws, axis=0).astype(mu.dtype)


def _stirling_remainder(n):
    r""":math:`S(n) = \ln\Gamma(n+1) - n\ln n + n` (S(0) = 0), without cancellation.

    For n >= 20 the Stirling series :math:`\tfrac12\ln(2\pi n) + \tfrac1{12n} - \tfrac1{360n^3}
    + \tfrac1{1260n^5} - \tfrac1{1680n^7}` (truncation < 2e-15); below, the direct difference,
    whose terms are then small.
    """
    big = n >= 20.0
    nb = jnp.where(big, n, 20.0)
    inv = 1.0 / nb
    series = 0.5 * jnp.log(2.0 * jnp.pi * nb) + inv * (1.0 / 12 - inv**2 * (1.0 / 360 - inv**2 * (1.0 / 1260 - inv**2 / 1680)))
    ns = jnp.where(big, 1.0, n)
    direct = gammaln(ns + 1.0) - jnp.where(ns > 0, ns * jnp.log(jnp.where(ns > 0, ns, 1.0)), 0.0) + ns
    return jnp.where(big, series, direct)


def poisson_nll(mu, n):
    """:math:`2\\sum_j[\\mu_j - n_j\\ln\\mu_j + \\ln\\Gamma(n_j+1)]` over the last axis (batched).

    Evaluated in the algebraically identical form
    :math:`2\\sum_j[(\\mu_j - n_j - n_j\\ln(\\mu_j/n_j)) + S(n_j)]` with
    :math:`S(n) = \\ln\\Gamma(n+1) - n\\ln n + n` from :func:`_stirling_remainder`: the literal
    form adds per-bin terms of size :math:`n\\ln n \\sim 10^7` to get O(1), so its value would
    carry ~1e-11 relative rounding that differs between CPU and GPU; this form does not.
    """
    mu = jnp.asarray(mu)
    n = jnp.asarray(n, dtype=mu.dtype)
    impossible = (mu <= 0) & (n > 0)
    safe_mu = jnp.where(mu > 0, mu, 1.0)
    safe_n = jnp.where(n > 0, n, 1.0)
    deviance = mu - n - jnp.where(n > 0, n * jnp.log(safe_mu / safe_n), 0.0)
    total = 2.0 * jnp.sum(deviance + _stirling_remainder(n), axis=-1)
    return jnp.where(jnp.any(impossible, axis=-1), jnp.inf, total)


def check_counts(n, name: str = "data") -> np.ndarray:
    """Validate observed counts: finite, non-negative; errors name the bin."""
    n = np.asarray(n, dtype=float)
    bad = np.nonzero(~np.isfinite(n) | (n < 0))[0]
    if bad.size:
        raise ValueError(f"{name}: invalid count {n[bad[0]]} in bin {bad[0]} (counts must be finite and >= 0)")
    return n


def check_expected(mu, n, edges=None) -> None:
    """Raise ``ValueError`` naming the first bin where the expectation is NaN, or <= 0 with data."""
    mu = np.asarray(mu)
    n = np.asarray(n)
    where = (lambda j: f"bin {j}" + ("" if edges is None else f" [{edges[j]:g}, {edges[j + 1]:g})"))
    nan = np.nonzero(~np.isfinite(mu))[0]
    if nan.size:
        raise ValueError(f"expected spectrum is not finite in {where(nan[0])}")
    bad = np.nonzero((mu <= 0) & (n > 0))[0]
    if bad.size:
        raise ValueError(f"expected count {mu[bad[0]]:g} <= 0 with {n[bad[0]]:g} observed in {where(bad[0])}")


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class BinnedPoisson:
    """The likelihood stage of binned data: −2 ln L of observed counts given the expected counts,
    :func:`poisson_nll` (paper Eq. logL), on the bins ``obs_edges`` (None: bins without edges, a
    user model's); toys draw every bin from its Poisson distribution (:func:`poisson_draw`)."""

    #: Whether −2 ln L of the Asimov data set at any parameters u (:meth:`asimov_data`) is smallest
    #: at u: here the expected counts are the data, so every bin's term is at its minimum there
    #: (the toys' start designs then need no Asimov fit from u, :func:`nuejax.inference.toys.toy_starts`).
    asimov_at_truth = True

    obs_edges: jax.Array | None = None

    @property
    def n_obs(self) -> int | None:
        return None if self.obs_edges is None else int(self.obs_edges.shape[0] - 1)

    def __call__(self, expected, data) -> jax.Array:
        return poisson_nll(expected, data)

    def sample(self, key, expected, lead=(), parts: int = 1) -> jax.Array:
        """Counts drawn from ``expected``, shape ``lead + expected.shape`` (``lead``: toys);
        ``parts`` as in :func:`poisson_draw`."""
        return poisson_draw(key, expected, tuple(lead) + tuple(jnp.shape(expected)), parts=parts)

    def asimov_data(self, expected) -> jax.Array:
        """The Asimov data set of ``expected``: the expected counts themselves."""
        return expected

    def toy_parts(self, expected) -> int:
        """The static ``parts`` of :meth:`sample` for toys whose expectations are ``expected``
        (any leading axes; eager)."""
        return poisson_parts(float(np.max(np.asarray(expected), initial=0.0)))

    def check_data(self, data, *, batch: bool = False, name: str = "data", warn_non_integer: bool = True):
        """Checked counts (:func:`~nuejax.model.checks.check_data`): shape (n_obs,), or (n, n_obs) with ``batch``."""
        from .checks import check_data

        return check_data(data, self.n_obs, batch=batch, name=name, warn_non_integer=warn_non_integer,
                          edges=self.obs_edges)

    def check_expected(self, expected, data) -> None:
        """Raise naming the first bin whose expectation is not finite, or <= 0 with data (:func:`check_expected`)."""
        check_expected(expected, data, None if self.obs_edges is None else np.asarray(self.obs_edges))


def _density_nodes(edges, expected):
    """Nodes and values of the unbinned density: the bin centres with ``expected / width``, and the
    window's edges with the outer values (flat there)."""
    c = 0.5 * (edges[1:] + edges[:-1])
    f = expected / (edges[1:] - edges[:-1])
    x = jnp.concatenate([edges[:1], c, edges[-1:]])
    v = jnp.concatenate([f[..., :1], f, f[..., -1:]], axis=-1)
    return x, v


def unbinned_nll(edges, expected, events, interpolation: str = "linear"):
    r"""The extended unbinned −2 ln L of weighted ``events`` (..., n_max, 2): columns energy and
    weight (1 for an event, 0 for padding, the expected count for an Asimov point) given the
    expected counts ``expected`` (..., K) on the bins ``edges``:

    .. math::
        -2\ln L = 2\Big[
u - \sum_i w_i \ln f(E_i)\Big],\qquad 
u = \int f\,dE,

    the extended maximum-likelihood form (R. Barlow, "Extended maximum likelihood", Nucl.
    Instrum. Meth. A 297 (1990) 496) without its data-only constant. The density :math:`f` is
    ``expected / width`` at the bin centres, joined linearly (``interpolation="linear"``) and flat
    from the outer centres to the window's edges, or constant inside each bin
    (``"constant"``; then −2 ln L equals the binned :func:`poisson_nll` on ``edges`` up to a
    term of the data alone). :math:`
u` is the exact integral of that density (on a uniform grid
    it equals the summed ``expected``). An event where :math:`f \le 0` gives +inf.
    """
    e, w = events[..., 0], events[..., 1]
    if interpolation == "constant":
        j = jnp.clip(jnp.searchsorted(edges, e, side="right") - 1, 0, edges.shape[0] - 2)
        dens = expected / (edges[1:] - edges[:-1])
        fe = jnp.take_along_axis(dens, j, axis=-1) if dens.ndim > 1 else dens[j]
        nu = jnp.sum(expected, axis=-1)
    else:
        x, v = _density_nodes(edges, expected)
        interp = jnp.interp
        for _ in range(v.ndim - 1):
            interp = jax.vmap(interp, in_axes=(0, None, 0))
        fe = interp(e, x, v)
        nu = jnp.sum(0.5 * (v[..., 1:] + v[..., :-1]) * jnp.diff(x), axis=-1)
    used = w > 0
    impossible = jnp.any(used & (fe <= 0), axis=-1)
    logf = jnp.where(used, jnp.log(jnp.where(fe > 0, fe, 1.0)), 0.0)
    return jnp.where(impossible, jnp.inf, 2.0 * (nu - jnp.sum(w * logf, axis=-1)))


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class UnbinnedPoisson:
    """The likelihood stage of event data: the extended unbinned −2 ln L (:func:`unbinned_nll`),
    one term per event, with the model's expected counts on the fine bins ``obs_edges`` made into a
    density.

    Data are weighted events, an array (``n_max``, 2) of (energy, weight): weight 1 for an
    observed event, 0 for the padding rows that fill the array to its fixed length ``n_max`` (so
    that toys with different numbers of events batch; :meth:`events` pads a list of energies),
    and the expected counts at the bin centres for the Asimov data set (:meth:`asimov_data`).
    Toys (:meth:`sample`) draw a Poisson number of events from the total, then their energies
    from the density (exact inverse-CDF draws on each linear piece).
    """

    #: The Asimov data set puts each bin's count at its centre: the minimum lies near the
    #: parameters that made it, not exactly at them (see :class:`BinnedPoisson`).
    asimov_at_truth = False

    obs_edges: jax.Array
    n_max: int = static_field(default=0)
    interpolation: str = static_field(default="linear")

    @classmethod
    def create(cls, obs_edges, capacity: int, interpolation: str = "linear") -> "UnbinnedPoisson":
        """The stage on the fine bins ``obs_edges`` holding up to ``max(capacity, K)`` events
        (K bins: the Asimov data set has one weighted point per bin)."""
        if interpolation not in ("linear", "constant"):
            raise InputError(f"unbinned likelihood: interpolation must be 'linear' or 'constant', got {interpolation!r}")
        e = np.asarray(obs_edges, dtype=float)
        if e.ndim != 1 or e.size < 2 or not np.all(np.isfinite(e)) or np.any(np.diff(e) <= 0):
            raise InputError("unbinned likelihood: obs_edges must be finite and increasing")
        if int(capacity) < 0:
            raise InputError(f"unbinned likelihood: capacity must be >= 0, got {capacity!r}")
        return cls(jnp.asarray(e, dtype=jnp.result_type(float)), max(int(capacity), e.size - 1), interpolation)

    @property
    def n_obs(self) -> int:
        return int(self.obs_edges.shape[0] - 1)

    @property
    def window(self) -> tuple:
        return float(self.obs_edges[0]), float(self.obs_edges[-1])

    def __call__(self, expected, data) -> jax.Array:
        return unbinned_nll(self.obs_edges, expected, data, self.interpolation)

    def events(self, energies) -> np.ndarray:
        """Observed events as this stage's data: ``energies`` (1-D) with weight 1, padded to ``n_max``.

        Raises:
            DataError: energies not 1-D or not finite, outside the window (names the first), more
                than ``n_max`` of them.
        """
        from ..errors import DataError

        x = np.asarray(energies, dtype=float)
        if x.ndim != 1:
            raise DataError(f"unbinned data: energies must be 1-D, got shape {x.shape}")
        lo, hi = self.window
        bad = np.nonzero(~np.isfinite(x) | (x < lo) | (x > hi))[0]
        if bad.size:
            raise DataError(f"unbinned data: event {bad[0]} at {float(x[bad[0]])!r} lies outside the window [{lo:g}, {hi:g}]")
        if x.size > self.n_max:
            raise DataError(f"unbinned data: {x.size} events, the likelihood stage holds at most {self.n_max} "
                            "(build it with a larger capacity)")
        out = np.zeros((self.n_max, 2))
        out[:, 0] = lo
        out[:x.size, 0] = x
        out[:x.size, 1] = 1.0
        return out

    def asimov_data(self, expected) -> jax.Array:
        """The Asimov data set: one point per bin centre weighted with its expected count (padded);
        with it the fit returns the parameters that made ``expected``."""
        e = self.obs_edges
        c = 0.5 * (e[1:] + e[:-1])
        lead = jnp.shape(expected)[:-1]
        pad = self.n_max - c.shape[0]
        ex = jnp.broadcast_to(jnp.concatenate([c, jnp.full((pad,), e[0], c.dtype)]), lead + (self.n_max,))
        w = jnp.concatenate([expected, jnp.zeros(lead + (pad,), jnp.asarray(expected).dtype)], axis=-1)
        return jnp.stack([ex, w], axis=-1)

    def toy_parts(self, expected) -> int:
        """``parts`` for the Poisson draw of the number of events, after checking that ``n_max`` holds
        every toy: at most ν + 10√ν + 10 events for the largest expected total ν (the chance of more is
        below 1e-20); raises :class:`~nuejax.errors.InputError` otherwise."""
        nu = float(np.max(np.sum(np.asarray(expected), axis=-1), initial=0.0))
        need = int(np.ceil(nu + 10.0 * np.sqrt(nu) + 10.0))
        if need > self.n_max:
            raise InputError(f"unbinned likelihood: toys with {nu:.1f} expected events need room for {need} events, "
                             f"the stage holds {self.n_max} (build it with capacity >= {need})")
        return poisson_parts(nu)

    def sample(self, key, expected, lead=(), parts: int = 1) -> jax.Array:
        """Toys ``lead + (n_max, 2)``: a Poisson number N of events (mean ν, :func:`poisson_draw`), then
        N energies drawn from the density (the first N rows, weight 1; the rest padding). ``n_max``
        must hold N (:meth:`toy_parts` checks it for the toys' expectations)."""
        lead = tuple(lead)
        k_n, k_seg, k_u = jax.random.split(key, 3)
        e = self.obs_edges
        if self.interpolation == "constant":
            x, v = e, expected / (e[1:] - e[:-1])
            area = expected
            v0 = v1 = v
        else:
            x, v = _density_nodes(e, expected)
            area = 0.5 * (v[1:] + v[:-1]) * jnp.diff(x)
            v0, v1 = v[:-1], v[1:]
        nu = jnp.sum(area)
        n = poisson_draw(k_n, nu, lead, parts=parts)
        logp = jnp.where(area > 0, jnp.log(jnp.where(area > 0, area, 1.0)), -jnp.inf)
        seg = jax.random.categorical(k_seg, logp, shape=lead + (self.n_max,))
        u = jax.random.uniform(k_u, lead + (self.n_max,), dtype=e.dtype)
        a, b = v0[seg], v1[seg]
        # inverse CDF on a linear piece a + (b - a) t, t in [0, 1]: a t + (b - a) t^2 / 2 = u (a + b) / 2,
        # written without cancellation (t = u where a = b, sqrt(u) where a = 0)
        den = a + jnp.sqrt(a * a + u * (b * b - a * a))
        t = jnp.where(den > 0, u * (a + b) / jnp.where(den > 0, den, 1.0), u)
        energy = x[seg] + t * (x[seg + 1] - x[seg])
        used = jnp.arange(self.n_max) < n[..., None]
        return jnp.stack([jnp.where(used, energy, e[0]), used.astype(e.dtype)], axis=-1)

    def check_data(self, data, *, batch: bool = False, name: str = "data", warn_non_integer: bool = True):
        """Checked events: shape (n_max, 2), or (n, n_max, 2) with ``batch``; energies finite and inside
        the window where the weight is > 0; weights finite and >= 0. Errors name the row and event."""
        from ..errors import DataError
        from .checks import float_array, is_traced

        if is_traced(data):
            return data
        d = float_array(data, name, "weighted events")
        want = (self.n_max, 2)
        if d.shape[-2:] != want or d.ndim != (3 if batch else 2):
            raise DataError(f"{name}: unbinned data are arrays of shape {'(n_sets, ' if batch else '('}{self.n_max}, 2) "
                            f"(energy, weight; pad with likelihood.events(energies)), got shape {d.shape}")
        e, w = d[..., 0], d[..., 1]
        lo, hi = self.window
        bad = ~np.isfinite(w) | (w < 0) | ((w > 0) & (~np.isfinite(e) | (e < lo) | (e > hi)))
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            where = f"event {idx[-1]}" + (f" of row {idx[0]}" if batch else "")
            raise DataError(f"{name}: {where} has energy {float(e[idx])!r} and weight {float(w[idx])!r} (weights must be finite and "
                            f">= 0, energies of weighted events inside the window [{lo:g}, {hi:g}])")
        return d

    def check_expected(self, expected, data) -> None:
        """Raise naming the first bin whose expectation is not finite, or the first event where the
        density is <= 0."""
        mu = np.asarray(expected)
        nan = np.nonzero(~np.isfinite(mu))[0]
        if nan.size:
            raise ValueError(f"expected spectrum is not finite in bin {nan[0]}")
        d = np.asarray(data)
        nll = float(unbinned_nll(self.obs_edges, jnp.asarray(mu), jnp.asarray(d), self.interpolation))
        if not np.isfinite(nll):
            raise ValueError("expected density is <= 0 at an observed event")

