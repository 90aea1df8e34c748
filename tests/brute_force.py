"""A brute-force reference for global minima, independent of nuejax's solver and start design.

Many starts (uniform random over the box of the parameters of interest, every nuisance drawn
uniformly within ±``spread`` of its relative scale about its start), each minimised by scipy's
L-BFGS-B (a quasi-Newton method with its own bound handling: Byrd, Lu, Nocedal & Zhu 1995) on the
same −2 ln L, then polished by a second L-BFGS-B run from the end point (fresh curvature memory,
tight tolerances); the lowest end point is the reference. Coordinates are scaled by the parameters'
standard deviations (from the Hessian at the start) so that one tolerance fits all. The only thing
shared with nuejax is −2 ln L itself (``negative_log_likelihood`` and its JAX gradient).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import minimize

from nuejax.model.protocol import as_pytree, negative_log_likelihood


class Objective:
    """−2 ln L of ``model`` over ``names`` (other parameters at ``base``), with its gradient,
    for one data set and auxiliary measurements (set with :meth:`bind`)."""

    def __init__(self, model, names, base):
        self.names = tuple(names)
        self.base = dict(base)
        pm = as_pytree(model)

        def f(x, fixed, data, aux):
            p = {**fixed, **{n: x[i] for i, n in enumerate(self.names)}}
            return negative_log_likelihood(pm, p, data, aux)

        self._vg = jax.jit(jax.value_and_grad(f))
        self._h = jax.jit(jax.hessian(f))
        lo, hi = model.parameters.bounds(self.names)
        self.lower, self.upper = lo.astype(float), hi.astype(float)
        self.fixed = {k: jnp.asarray(v) for k, v in self.base.items() if k not in self.names}

    def bind(self, data, aux=None, fixed: dict | None = None):
        self.data = jnp.asarray(data)
        self.aux = aux
        self.cur_fixed = {**self.fixed, **{k: jnp.asarray(v) for k, v in (fixed or {}).items()}}
        return self

    def value_grad(self, x):
        v, g = self._vg(jnp.asarray(x), self.cur_fixed, self.data, self.aux)
        return float(v), np.asarray(g, dtype=float)

    def hessian(self, x):
        return np.asarray(self._h(jnp.asarray(x), self.cur_fixed, self.data, self.aux), dtype=float)


def _scales(obj: Objective, x0):
    h = obj.hessian(x0)
    try:
        cov = np.linalg.inv(0.5 * h)
        s = np.sqrt(np.abs(np.diag(cov)))
    except np.linalg.LinAlgError:
        s = np.ones(len(x0))
    return np.where(np.isfinite(s) & (s > 0), s, 1.0)


def lbfgsb(obj: Objective, x0, scale):
    """One start: L-BFGS-B in scaled coordinates, then a polishing run; returns (fun, x)."""
    lo, hi = obj.lower / scale, obj.upper / scale
    bounds = [(a if np.isfinite(a) else None, b if np.isfinite(b) else None) for a, b in zip(lo, hi)]

    def fg(z):
        v, g = obj.value_grad(z * scale)
        if not np.isfinite(v):
            return 1e300, np.zeros_like(z)
        return v, g * scale

    z = np.clip(np.asarray(x0, float) / scale, lo, hi)
    r = minimize(fg, z, jac=True, method="L-BFGS-B", bounds=bounds, options=dict(maxiter=3000, ftol=1e-13, gtol=1e-8))
    r = minimize(fg, r.x, jac=True, method="L-BFGS-B", bounds=bounds,
                 options=dict(maxiter=3000, ftol=1e-15, gtol=1e-10, maxcor=30))
    return float(r.fun), r.x * scale


def brute_force(obj: Objective, x_start, poi_index, n_starts: int = 64, seed: int = 0, spread: float = 0.5):
    """The lowest of ``n_starts`` polished L-BFGS-B minima: (fun, x, every end point's fun)."""
    rng = np.random.default_rng(seed)
    x_start = np.asarray(x_start, dtype=float)
    scale = _scales(obj, x_start)
    starts = np.repeat(x_start[None], n_starts, axis=0)
    nuis = np.setdiff1d(np.arange(len(x_start)), poi_index)
    starts[:, nuis] += rng.uniform(-spread, spread, (n_starts, nuis.size)) * scale[nuis] * 4
    starts[:, poi_index] = rng.uniform(obj.lower[poi_index], obj.upper[poi_index], (n_starts, len(poi_index)))
    starts[0] = x_start
    starts = np.clip(starts, obj.lower, obj.upper)
    ends = [lbfgsb(obj, s, scale) for s in starts]
    funs = np.array([f for f, _ in ends])
    k = int(np.argmin(funs))
    return funs[k], ends[k][1], funs
