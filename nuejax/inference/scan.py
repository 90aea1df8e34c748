"""Batched profile-likelihood scans on the lower envelope of −2 ln L's branches.

Every scan point is a fit of the profiled (nuisance) parameters with the scanned ones fixed; all
points run as ``vmap``-ped launches of the bound-constrained Newton solver
(:func:`~nuejax.inference.newton.minimize_bounded`; in chunks, with progress, for long scans),
with no Python loop over points. ``converged`` per point is the solver's KKT test. Δχ² is measured
from the global minimum, found by a multi-start fit with the scanned parameters free as well (the
same solver, or a given :class:`~nuejax.inference.FitResult`).

Where −2 ln L has several minima (mirror branches of an NSI coupling), a profile that follows one
branch lies above the true profile wherever another is lower. :func:`profile_points` therefore
keeps the lower envelope:

1. every point starts from the tangent of the profile at *each* minimum the global fit found (its
   ``minima``; :func:`~nuejax.inference.fitting.profile_starts`), one batched fit per branch,
   and keeps the lowest end point that passes the KKT test;
2. every point is fitted again from the end points of its converged neighbours on the grid (both
   directions; four in 2-D), and a lower converged end point replaces it; this repeats until no
   point moves (at most :data:`ENVELOPE_PASSES` passes), so a branch found at one point spreads
   along the grid.

``ScanResult.passes`` says how many passes ran and ``ScanResult.refitted`` how many points a
neighbour's start lowered.
"""

from __future__ import annotations

import time
from typing import Callable, Mapping, Sequence

import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError
from .fitting import best_of_starts, newton_fit, profile_starts, solve_rows, value_grad_hess
from .problem import FitProblem, Pins
from .results import FitResult, Scan2DResult, ScanResult
from .starts import DEFAULT_STARTS

__all__ = ["ENVELOPE_PASSES", "MAX_BRANCHES", "SCAN_MAX_ITER", "grid_neighbours", "grid_values",
           "pinned_refits", "profile_points", "profile_scan", "profile_scan_2d", "refine_scan"]


def grid_values(ps, name, values) -> np.ndarray:
    """Scan values of ``name``: a non-empty 1-D array of finite numbers inside its bounds."""
    try:
        v = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as err:
        raise ParameterError(f"scan values of {name} are not numbers: {err}") from err
    if v.ndim != 1 or v.size == 0:
        raise ParameterError(f"scan values of {name} must be a non-empty 1-D sequence, got shape {v.shape}")
    p = ps[name]
    if v.size > 1 and np.any(np.diff(v) <= 0):
        i = int(np.nonzero(np.diff(v) <= 0)[0][0])
        raise ParameterError(f"scan values of {name} must be strictly increasing: value {v[i + 1]} at index {i + 1} "
                             f"follows {v[i]}")
    bad = ~np.isfinite(v) | (v < p.lower) | (v > p.upper)
    if bad.any():
        i = int(np.nonzero(bad)[0][0])
        raise ParameterError(f"scan value {v[i]} of {name} (index {i}) is not finite or outside its bounds "
                             f"[{p.lower}, {p.upper}]")
    return v


def _global(s: FitProblem, names, global_fit, starts=DEFAULT_STARTS):
    # in the model's order: the global fits of scans of different parameters of one model are
    # the same problem (one compiled program)
    names = tuple(v for v in s.value_names if v in set(names))
    if global_fit is None:
        return newton_fit(s.with_names(names), None, one_sided=False, starts=starts, warn_delta=None)
    if not isinstance(global_fit, FitResult):
        raise TypeError(f"global_fit must be a FitResult, got {type(global_fit).__name__}")
    missing = [n for n in names if n not in global_fit.names]
    if missing:
        raise ParameterError(f"global_fit did not fit {missing}: the global minimum needs the scanned and profiled "
                             "parameters free")
    if not global_fit.valid:
        import warnings

        warnings.warn(f"global_fit is not valid ({global_fit.reason}); Δχ² is measured from the lower of it and the "
                      "scan's own minimum", RuntimeWarning, stacklevel=3)
    return global_fit


def pinned_refits(s: FitProblem, fit: FitResult, idx, values, *, x_prev=None, max_iter: int = 100, chunk=None):
    """Refits of the problem ``s`` (every free parameter fitted) with one coordinate pinned per
    row: row r holds ``s.names[idx[r]]`` at ``values[r]``, one batched launch of the problem's
    solver program (:func:`~nuejax.inference.fitting.solve_rows`, with
    :class:`~nuejax.inference.problem.Pins`: the same program whichever parameter is pinned). Each row starts from the better of the fit's tangent
    (the conditional mean of its Gaussian approximation, clipped to the bounds) and ``x_prev[r]``
    (default: the best fit). Returns the NewtonResult (numpy arrays)."""
    idx = np.asarray(idx, dtype=int)
    values = np.asarray(values, dtype=float)
    k, d = idx.size, len(s.names)
    lo, hi = (np.asarray(b, dtype=float) for b in s.bounds)
    xhat = np.array([fit.values[n] for n in s.names])
    order = [fit.names.index(n) for n in s.names]
    C = np.asarray(fit.covariance, dtype=float)[np.ix_(order, order)]
    cii = C[idx, idx]
    slope = np.where(cii[:, None] > 0, C[:, idx].T / np.where(cii > 0, cii, 1.0)[:, None], 0.0)
    tangent = np.clip(xhat[None] + slope * (values - xhat[idx])[:, None], lo, hi)
    prev = np.repeat(xhat[None], k, axis=0) if x_prev is None else np.asarray(x_prev, dtype=float)
    mask = np.zeros((k, d), dtype=bool)
    mask[np.arange(k), idx] = True
    pinned = np.zeros((k, d))
    pinned[np.arange(k), idx] = values
    return solve_rows(s, np.stack([tangent, prev], axis=1), Pins(mask, pinned), max_iter=max_iter, chunk=chunk)


#: Newton iterations allowed per scan point. A batched launch costs its slowest point's count
#: whatever the limit, so a generous one costs only where a point needs it: on the paper
#: workload's 200-point scan of eps_ee_L the slowest point took 93 iterations on 2 CPU cores, and
#: on an H100 (all points in one launch) one point was still unconverged at 100 (2026-11-25).
SCAN_MAX_ITER = 200

#: Branches (distinct minima of the global fit, lowest first) whose profile tangents start every point.
MAX_BRANCHES = 4
#: Passes of neighbour-started refits at most (:func:`profile_points`).
ENVELOPE_PASSES = 20


def grid_neighbours(shape: tuple) -> np.ndarray:
    """The neighbours of every point of a grid of ``shape`` (1-D or 2-D, x-major): (n, 2 or 4)
    flat indices, -1 where there is none."""
    idx = np.arange(int(np.prod(shape))).reshape(shape)
    out = []
    for axis in range(len(shape)):
        for step in (-1, 1):
            nb = np.full(shape, -1)
            src = [slice(None)] * len(shape)
            dst = [slice(None)] * len(shape)
            src[axis] = slice(max(0, step), shape[axis] + min(0, step))
            dst[axis] = slice(max(0, -step), shape[axis] + min(0, -step))
            nb[tuple(dst)] = idx[tuple(src)]
            out.append(nb.ravel())
    return np.stack(out, axis=1)


def profile_points(s: FitProblem, points, global_fit: FitResult, neighbours, *, n_iter: int = SCAN_MAX_ITER,
                   chunk=None, progress=None, label: str = "scan"):
    """The profile at ``points`` (n, k) of ``s.fixed_names`` with ``s.names`` profiled, on the
    lower envelope of the branches (module docstring): ``(NewtonResult of numpy arrays, passes,
    refitted)``. ``neighbours`` (n, m): each point's neighbours on the grid (-1: none)."""
    points = np.asarray(points, dtype=float)
    n = len(points)
    # One problem for every scan of the model: the scanned and the profiled parameters fitted
    # together, in the model's order, the scanned ones pinned per point (Pins), so that a scan of
    # eps_ee_L, one of eps_ee_R and a 2-D scan of both run the same compiled programs.
    wide = s.with_names(tuple(v for v in s.value_names if v in set(s.names) | set(s.fixed_names)))
    i_fit = np.array([wide.names.index(v) for v in s.names], dtype=int)
    i_pin = np.array([wide.names.index(v) for v in s.fixed_names], dtype=int)
    mask = np.zeros((n, len(wide.names)), dtype=bool)
    mask[:, i_pin] = True
    pinned = np.zeros((n, len(wide.names)))
    pinned[:, i_pin] = points

    def widen(x):  # starts (n, ..., d) of the profiled parameters -> (n, ..., D), pinned at the points
        out = np.zeros(np.shape(x)[:-1] + (len(wide.names),))
        out[..., i_fit] = x
        out[..., i_pin] = points.reshape((n,) + (1,) * (np.ndim(x) - 2) + (-1,))
        return out

    branches = [m["values"] for m in (global_fit.minima or [])[:MAX_BRANCHES]] or [global_fit.values]
    hessians = global_fit.minima_hessians if set(global_fit.names) == set(wide.names) else ()
    order = [global_fit.names.index(n) for n in wide.names] if hessians else []
    starts = []
    for i, b in enumerate(branches):
        if b is global_fit.values or all(abs(b[k] - global_fit.values[k]) <= 1e-12 for k in b):
            ref = global_fit
        else:  # the branch's own curvature for its tangent: the Newton fit's exact Hessian there,
            # else from the problem of the global fit (every parameter free, in the model's order)
            if i < len(hessians):
                H = np.asarray(hessians[i])[np.ix_(order, order)]
            else:
                _, _, H = value_grad_hess(wide.with_values(b), np.array([b[k] for k in wide.names]))
            ref = FitResult(names=wide.names, values=dict(b), errors={}, covariance=2.0 * np.linalg.pinv(H),
                            fval=0.0, valid=True, nfcn=0, ngrad=0, edm=0.0, params={})
        starts.append(profile_starts(ref, s.fixed_names, s.names, points, s.lower, s.upper))
    neighbours = np.asarray(neighbours)
    # Every start of every point is a row of the problem's one solver program (solve_rows: the
    # global fit's too, and the scans of one model whatever their dimension; a solver program
    # compiles in 4-7 s on 2 cores), the points' pins repeated over their starts.
    def solve(x0, report=None):  # x0 (n, S, 2, D) -> the best start of every point
        n_s = x0.shape[1]
        rows = solve_rows(wide, x0.reshape((n * n_s,) + x0.shape[2:]),
                          Pins(np.repeat(mask, n_s, axis=0), np.repeat(pinned, n_s, axis=0)), max_iter=n_iter,
                          chunk=chunk, group=n_s, progress=report, label=label)
        return best_of_starts(type(rows)(*(a.reshape((n, n_s) + a.shape[1:]) for a in rows)), axis=1)[0]

    res = solve(widen(np.stack(starts, axis=1)), progress)  # (n, branches, 2, D): per branch its tangent and its minimum
    refitted, passes = np.zeros(n, dtype=bool), 0
    for passes in range(1, ENVELOPE_PASSES + 1):
        ok = res.converged & np.isfinite(res.fun)
        nb = np.where((neighbours >= 0) & ok[np.clip(neighbours, 0, None)], neighbours, -1)
        if not np.any(nb >= 0):
            break
        # a point without a (converged) neighbour in some direction starts there from its own end point
        x_nb = np.where((nb >= 0)[..., None], res.x[np.clip(nb, 0, None)], res.x[:, None, :])
        new = solve(x_nb[:, :, None, :])
        better = new.converged & np.isfinite(new.fun) & ((new.fun < res.fun - 1e-6) | ~ok)
        if not np.any(better):
            break
        refitted |= better
        res = type(res)(*(np.where(better.reshape((n,) + (1,) * (np.ndim(a) - 1)), b, a) for a, b in zip(res, new)))
    # back to the profiled parameters alone
    res = res._replace(x=res.x[:, i_fit], grad=res.grad[:, i_fit], hess=res.hess[:, i_fit][:, :, i_fit],
                       at_lower=res.at_lower[:, i_fit], at_upper=res.at_upper[:, i_fit])
    return res, passes, int(refitted.sum())



def _bounds(p):
    return (None if not np.isfinite(p.lower) else float(p.lower), None if not np.isfinite(p.upper) else float(p.upper))


def profile_scan(model, data, name: str, values: Sequence[float], *, profile=None, init: Mapping | None = None,
                 aux=None, starts=DEFAULT_STARTS, n_iter: int = SCAN_MAX_ITER, chunk: int | None = None,
                 progress: Callable[[str], None] | None = None, global_fit: FitResult | None = None) -> ScanResult:
    """1-D profile scan of ``name`` over ``values``; ``profile`` (default: every other free
    parameter) is minimised at each point, all points in batched launches, on the lower envelope
    of −2 ln L's branches (module docstring).

    The global minimum comes from ``global_fit`` if given (e.g. a MINUIT fit; its ``minima`` are
    the branches), else from the bounded Newton fit with ``name`` free from the multi-start design
    ``starts`` (:mod:`~nuejax.inference.starts`); Δχ² is measured from the lower of it and the
    scan's own minimum. ``aux``: the auxiliary measurements (default: nominal).
    """
    t0 = time.perf_counter()
    s = FitProblem.create(model, data, names=profile, fixed_names=(name,), init=init, aux=aux)
    ps = s.model.parameters
    values = grid_values(ps, name, values)
    g = _global(s, (name, *s.names), global_fit, starts)
    res, passes, refitted = profile_points(s, np.asarray(values)[:, None], g, grid_neighbours((len(values),)),
                                           n_iter=n_iter, chunk=chunk, progress=progress, label=f"scan {name}")
    nll = np.asarray(res.fun)
    lowest = np.nanmin(np.where(res.converged, nll, np.nan)) if np.any(res.converged) else np.inf
    nll_min = min(float(g.fval), float(lowest))
    best = float(g.params[name]) if float(g.fval) <= lowest else float(values[int(np.nanargmin(
        np.where(res.converged, nll, np.nan)))])
    return ScanResult(name, values, nll, nll_min, best, s.names, np.asarray(res.x),
                      np.asarray(res.converged), time.perf_counter() - t0, ps[name].unit, _bounds(ps[name]),
                      passes=passes, refitted=refitted)


def refine_scan(model, data, scan: ScanResult, levels=(1.0,), *, points: int = 4, global_fit: FitResult | None = None,
                **kw) -> ScanResult:
    """``scan`` with ``points`` more profile points, evenly spaced, inside every grid step where
    its Δχ² crosses one of ``levels`` (e.g. the interval's threshold): an interval read off a
    coarse grid by interpolation is then read off a fine one where it matters. The new points are
    one :func:`profile_scan` (``global_fit`` and ``kw`` passed on; give the scan's global fit so
    that both measure Δχ² from one minimum); the result merges both, sorted. Returns ``scan``
    itself where nothing crosses."""
    if int(points) < 1:
        raise ParameterError(f"refine_scan: points must be >= 1, got {points}")
    x = np.asarray(scan.values, dtype=float)
    ok = np.asarray(scan.converged, dtype=bool) & np.isfinite(np.asarray(scan.nll))
    d = np.asarray(scan.delta_chi2, dtype=float)
    idx = np.nonzero(ok)[0]
    new = []
    for level in levels:
        for a, b in zip(idx[:-1], idx[1:]):
            if (d[a] - level) * (d[b] - level) < 0:
                new.extend(np.linspace(x[a], x[b], int(points) + 2)[1:-1])
    new = np.setdiff1d(np.unique(np.round(new, 12)), x)
    if new.size == 0:
        return scan
    sub = profile_scan(model, data, scan.name, new, global_fit=global_fit, **kw)
    if sub.profiled != scan.profiled:
        raise ParameterError(f"refine_scan: the scan profiled {scan.profiled}, the refinement {sub.profiled}: give the "
                             "same model and profile")
    order = np.argsort(np.concatenate([x, sub.values]), kind="stable")

    def cat(a, b):
        return np.concatenate([np.asarray(a), np.asarray(b)])[order]

    first = scan.nll_min <= sub.nll_min
    return ScanResult(scan.name, cat(x, sub.values), cat(scan.nll, sub.nll), min(scan.nll_min, sub.nll_min),
                      scan.best if first else sub.best, scan.profiled, cat(scan.profiled_values, sub.profiled_values),
                      cat(scan.converged, sub.converged), scan.seconds + sub.seconds, scan.unit, scan.bounds,
                      passes=max(scan.passes, sub.passes), refitted=scan.refitted + sub.refitted)


def profile_scan_2d(model, data, names: tuple, values_x, values_y, *, profile=None, init: Mapping | None = None,
                    aux=None, starts=DEFAULT_STARTS, n_iter: int = SCAN_MAX_ITER, chunk: int | None = None,
                    progress=None, global_fit: FitResult | None = None) -> Scan2DResult:
    """2-D profile scan on the grid ``values_x`` × ``values_y`` (batched launches), on the lower
    envelope of −2 ln L's branches as :func:`profile_scan` (four neighbours per point)."""
    t0 = time.perf_counter()
    names = tuple(names)
    if len(names) != 2 or names[0] == names[1]:
        raise ParameterError(f"profile_scan_2d scans two different parameters, got {names!r}")
    s = FitProblem.create(model, data, names=profile, fixed_names=names, init=init, aux=aux)
    ps = s.model.parameters
    vx, vy = grid_values(ps, names[0], values_x), grid_values(ps, names[1], values_y)
    grid = jnp.asarray(np.stack(np.meshgrid(vx, vy, indexing="ij"), -1).reshape(-1, 2))
    g = _global(s, (*names, *s.names), global_fit, starts)
    res, passes, refitted = profile_points(s, np.asarray(grid), g, grid_neighbours((len(vx), len(vy))), n_iter=n_iter,
                                           chunk=chunk, progress=progress, label=f"scan {names[0]} x {names[1]}")
    nll = np.asarray(res.fun).reshape(len(vx), len(vy))
    conv = np.asarray(res.converged).reshape(len(vx), len(vy))
    lowest = float(np.min(np.where(conv, nll, np.inf)))
    return Scan2DResult(names, vx, vy, nll, min(float(g.fval), lowest), s.names, conv, time.perf_counter() - t0,
                        best=(float(g.params[names[0]]), float(g.params[names[1]])), passes=passes, refitted=refitted)
