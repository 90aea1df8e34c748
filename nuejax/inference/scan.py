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
   along the grid. A pass starts a point only from end points that no earlier pass started it
   from (the same start would end where it ended).

``ScanResult.passes`` says how many passes ran and ``ScanResult.refitted`` how many points a
neighbour's start lowered.

A point may also come with *seeds* and a *lower bound* of its profile (:func:`profile_points`):
the profile of a combination of independent experiments that share only scanned or pinned
parameters and one profiled parameter is at least the sum of the experiments' own profiles there,
since the minimum of a sum is at least the sum of the minima. A fit from the seeds (the experiments'
end points) that converges to the bound has found the global minimum of that point (as far as the
experiments' own profiles are their global minima), which needs neither branch starts nor
neighbours; the other points run steps 1 and 2 (``certified`` counts the first kind).
"""

from __future__ import annotations

import time
from typing import Callable, Mapping, Sequence

import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError
from .fitting import (best_of_starts, newton_fit, newton_result, prepare_solver, profile_starts, solve_continued,
                      solve_rows, value_grad_hess)
from .problem import FitProblem, Pins
from .results import FitResult, Scan2DResult, ScanResult
from .starts import DEFAULT_STARTS

__all__ = ["CERTIFY_TOL", "ENVELOPE_PASSES", "MAX_BRANCHES", "SCAN_MAX_ITER", "grid_neighbours", "grid_values",
           "pinned_refits", "prepare_profile_scans", "profile_points", "profile_scan", "profile_scan_2d", "profile_scans",
           "refine_scan", "scan_problem",
           "scans_global_fits"]


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


def scan_problem(s: FitProblem) -> FitProblem:
    """The one problem of every scan of ``s``'s model (:meth:`~nuejax.inference.problem.FitProblem.full`):
    its free parameters and the problem's fitted and per-point ones, the per-point ones pinned per
    row and the free ones ``s`` does not fit pinned at their values. A scan of eps_ee_L, one of
    eps_ee_R, a 2-D scan of both and their global fits then run the same compiled programs, and so
    do scans of a model's two mediator couplings, each holding the other at zero
    (:func:`profile_scans`)."""
    return s.full()


def _branch_starts(wide: FitProblem, s: FitProblem, global_fit: FitResult, points) -> np.ndarray:
    """Starts (n, branches, 2, len(s.names)) of the profile fits at ``points``: per branch of
    ``global_fit`` (its distinct minima, at most :data:`MAX_BRANCHES`) its profile tangent and the
    minimum itself (:func:`~nuejax.inference.fitting.profile_starts`)."""
    branches = [m["values"] for m in (global_fit.minima or [])[:MAX_BRANCHES]] or [global_fit.values]
    # the coordinates the scan moves (fitted or per point); the others of ``wide`` are held
    sub = tuple(v for v in wide.names if v in set(s.names) | set(s.fixed_names))
    hessians = global_fit.minima_hessians if set(global_fit.names) == set(sub) else ()
    order = [global_fit.names.index(n) for n in sub] if hessians else []
    starts = []
    for i, b in enumerate(branches):
        if b is global_fit.values or all(abs(b[k] - global_fit.values[k]) <= 1e-12 for k in b):
            ref = global_fit
        else:  # the branch's own curvature for its tangent: the Newton fit's exact Hessian there,
            # else from the problem of the global fit (every parameter free, in the model's order)
            if i < len(hessians):
                H = np.asarray(hessians[i])[np.ix_(order, order)]
            else:
                at = {**wide.host_params(), **b}
                _, _, H = value_grad_hess(wide.with_values(at), np.array([at[k] for k in wide.names]))
                keep = [wide.names.index(n) for n in sub]
                H = np.asarray(H)[np.ix_(keep, keep)]
            ref = FitResult(names=sub, values=dict(b), errors={}, covariance=2.0 * np.linalg.pinv(H),
                            fval=0.0, valid=True, nfcn=0, ngrad=0, edm=0.0, params={})
        starts.append(profile_starts(ref, s.fixed_names, s.names, points, s.lower, s.upper))
    return np.stack(starts, axis=1)


#: A seeded point is certified where its fit ends within this of its lower bound in −2 ln L (both
#: sides: a fit below the bound by more means the bound's own fits missed their minima)
CERTIFY_TOL = 1e-6


def profile_points(s: FitProblem, points, global_fit, neighbours, *, n_iter: int = SCAN_MAX_ITER,
                   chunk=None, progress=None, label: str = "scan", groups=None, seeds=None, lower_bound=None):
    """The profile at ``points`` (n, k) of ``s.fixed_names`` with ``s.names`` profiled, on the
    lower envelope of the branches (module docstring): ``(NewtonResult of numpy arrays, passes,
    refitted)``, ``refitted`` (n,) whether a neighbour's start lowered the point. ``neighbours``
    (n, m): each point's neighbours on the grid (-1: none). ``global_fit``: the fit whose minima
    start every point; or a sequence of fits and ``groups`` (n,), the index of each point's fit
    (scans at several values of a parameter held fixed: :func:`profile_scans`).

    ``seeds`` (n, c ≤ 2, len(s.names)) and ``lower_bound`` (n,): each point is first fitted from its
    seeds (the lower of the two candidates), and a converged fit within :data:`CERTIFY_TOL` of the
    point's lower bound of −2 ln L is its global minimum (module docstring); only the other points
    run the branch starts and the envelope passes, among themselves. Returns ``(NewtonResult,
    passes, refitted, certified)`` then, ``certified`` (n,) the points settled by their seeds."""
    if seeds is not None:
        return _seeded_points(s, points, global_fit, neighbours, seeds, lower_bound, n_iter=n_iter, chunk=chunk,
                              progress=progress, label=label, groups=groups)
    points = np.asarray(points, dtype=float)
    n = len(points)
    wide, i_fit, mask, pinned, widen = _point_rows(s, points)

    fits, groups = ([global_fit], np.zeros(n, dtype=int)) if groups is None else (list(global_fit), np.asarray(groups))
    per_fit = [_branch_starts(wide, s, f, points[groups == j]) for j, f in enumerate(fits)]
    n_branch = max(b.shape[1] for b in per_fit)
    starts = np.zeros((n, n_branch, 2, len(s.names)))
    for j, b in enumerate(per_fit):  # a fit with fewer branches repeats its last one (a row fitted once: solve_rows)
        starts[groups == j] = np.concatenate([b, np.repeat(b[:, -1:], n_branch - b.shape[1], axis=1)], axis=1)
    neighbours = np.asarray(neighbours)
    # Every start of every point is a row of the problem's one solver program (solve_rows: the
    # global fit's too, and the scans of one model whatever their dimension; a solver program
    # compiles in 4-7 s on 2 cores), the points' pins repeated over their starts.
    def solve(x0, idx, report=None):  # x0 (len(idx), S, 2, D) -> the best start of each of the points idx
        k, n_s = x0.shape[:2]
        rows = solve_rows(wide, x0.reshape((k * n_s,) + x0.shape[2:]),
                          Pins(np.repeat(mask[idx], n_s, axis=0), np.repeat(pinned[idx], n_s, axis=0)),
                          max_iter=n_iter, chunk=chunk, group=n_s, progress=report, label=label)
        return best_of_starts(type(rows)(*(a.reshape((k, n_s) + a.shape[1:]) for a in rows)), axis=1)[0]

    res = solve(widen(starts), np.arange(n), progress)  # (n, branches, 2, D): per branch its tangent and its minimum
    refitted, passes = np.zeros(n, dtype=bool), 0
    changed = np.ones(n, dtype=bool)  # points whose end point no pass has started from yet
    for passes in range(1, ENVELOPE_PASSES + 1):
        ok = res.converged & np.isfinite(res.fun)
        nb = np.where((neighbours >= 0) & ok[np.clip(neighbours, 0, None)], neighbours, -1)
        if not np.any(nb >= 0):
            break
        # a point without a (converged) neighbour in some direction starts there from its own end point
        src = np.where(nb >= 0, nb, np.arange(n)[:, None])
        # A start from an end point that an earlier pass started from ends where it ended then (a
        # row's fit depends on its start and pins alone, up to rounding) and did not lower the
        # point by the 1e-6 `better` asks for: only fresh starts run. (Leaving it out can change
        # which of two end points within START_TIE of each other best_of_starts keeps.)
        # Without this the points that never converge (far above a limit, where -2 ln L is steep)
        # ran every pass to the iteration limit (nuejax combine's mediator curves: 15 of 47 launches).
        fresh = changed[src]
        todo = np.nonzero(fresh.any(axis=1))[0]
        if todo.size == 0:
            break
        x_nb = res.x[src[todo]]  # (t, m, D); a start tried before is replaced by the point's first
        # fresh one, which solve_rows then fits once
        x_nb = np.where(fresh[todo][..., None], x_nb,
                        x_nb[np.arange(todo.size), np.argmax(fresh[todo], axis=1)][:, None, :])
        res, better = _lowered(res, solve(x_nb[:, :, None, :], todo), todo)
        if not np.any(better):
            break
        refitted |= better
        changed = better
    return _profiled_only(res, i_fit), passes, refitted


def _point_rows(s: FitProblem, points) -> tuple:
    """The rows of ``s``'s profile at ``points`` (n, k): the scan's problem (:func:`scan_problem`),
    the profiled coordinates' indices in it, the pins (mask and values: the held coordinates, and
    ``s.fixed_names`` at the points) and ``widen``, which turns starts (n, ..., d) of the profiled
    parameters into rows (n, ..., D) pinned at the points."""
    n = len(points)
    wide = scan_problem(s)
    i_fit = np.array([wide.names.index(v) for v in s.names], dtype=int)
    i_pin = np.array([wide.names.index(v) for v in s.fixed_names], dtype=int)
    mask, pinned = s.held_pins(n)
    mask[:, i_pin] = True
    pinned[:, i_pin] = points

    def widen(x):
        out = np.broadcast_to(pinned.reshape((n,) + (1,) * (np.ndim(x) - 2) + (-1,)),
                              np.shape(x)[:-1] + (len(wide.names),)).copy()
        out[..., i_fit] = x
        out[..., i_pin] = points.reshape((n,) + (1,) * (np.ndim(x) - 2) + (-1,))
        return out

    return wide, i_fit, mask, pinned, widen


def _profiled_only(res, i_fit):
    """``res`` (rows of the scan's problem) back to the profiled parameters alone."""
    return res._replace(x=res.x[:, i_fit], grad=res.grad[:, i_fit], hess=res.hess[:, i_fit][:, :, i_fit],
                        at_lower=res.at_lower[:, i_fit], at_upper=res.at_upper[:, i_fit])


def _seeded_points(s: FitProblem, points, global_fit, neighbours, seeds, lower_bound, *, n_iter, chunk, progress,
                   label, groups):
    """:func:`profile_points` with ``seeds`` and ``lower_bound`` (its docstring)."""
    points = np.asarray(points, dtype=float)
    n = len(points)
    seeds = np.asarray(seeds, dtype=float)
    seeds = seeds[:, None] if seeds.ndim == 2 else seeds
    bound = np.asarray(lower_bound, dtype=float)
    if seeds.ndim != 3 or seeds.shape[0] != n or seeds.shape[1] > 2 or seeds.shape[2] != len(s.names):
        raise ValueError(f"seeds must be (n, c <= 2, {len(s.names)}) for {n} points, got shape {seeds.shape}")
    if bound.shape != (n,):
        raise ValueError(f"lower_bound must hold one value per point ({n}), got shape {bound.shape}")
    wide, i_fit, mask, pinned, widen = _point_rows(s, points)
    res = _profiled_only(solve_rows(wide, widen(seeds), Pins(mask, pinned), max_iter=n_iter, chunk=chunk,
                                    progress=progress, label=label), i_fit)
    fun = np.asarray(res.fun, dtype=float)
    certified = np.asarray(res.converged, dtype=bool) & np.isfinite(fun) & (np.abs(fun - bound) <= CERTIFY_TOL)
    refitted, passes = np.zeros(n, dtype=bool), 0
    rest = np.nonzero(~certified)[0]
    if rest.size:
        # the others as profile_points has them, their neighbours among themselves
        where = np.full(n, -1)
        where[rest] = np.arange(rest.size)
        nb = np.asarray(neighbours)[rest]
        nb = np.where(nb >= 0, where[np.clip(nb, 0, None)], -1)
        sub, passes, sub_refitted = profile_points(s, points[rest], global_fit, nb, n_iter=n_iter, chunk=chunk,
                                                   progress=progress, label=label,
                                                   groups=None if groups is None else np.asarray(groups)[rest])
        merged = []
        for a, b in zip(res, sub):
            a = np.asarray(a).copy()
            a[rest] = np.asarray(b)
            merged.append(a)
        res = type(res)(*merged)
        refitted[rest] = sub_refitted
    return res, passes, refitted, certified


def _lowered(res, new, idx) -> tuple:
    """``res`` (NewtonResult of arrays, one row per point) with the refits ``new`` of its points
    ``idx`` where they lower them, and a mask of those points: a converged, finite refit replaces a
    point's fit that it lowers by more than 1e-6 in −2 ln L, or one that had not converged (the
    envelope passes; the waves' boundary point, :func:`profile_scans`)."""
    ok = np.asarray(res.converged, dtype=bool)[idx] & np.isfinite(res.fun[idx])
    lower = np.asarray(new.converged, dtype=bool) & np.isfinite(new.fun) & ((new.fun < res.fun[idx] - 1e-6) | ~ok)
    mask = np.zeros(len(res.fun), dtype=bool)
    mask[idx] = lower
    if lower.any():
        res = type(res)(*(np.array(a, copy=True) for a in res))
        for a, b in zip(res, new):
            a[idx[lower]] = np.asarray(b)[lower]
    return res, mask


def _bounds(p):
    return (None if not np.isfinite(p.lower) else float(p.lower), None if not np.isfinite(p.upper) else float(p.upper))


def _scan_minimum(name, values, fun, conv, g: FitResult) -> tuple:
    """(nll_min, best) of scan points ``fun`` at ``values`` of ``name``: the lower of the global fit
    ``g`` and the lowest converged (finite) point, the global fit's on a tie and the point's where
    the global fit's −2 ln L is not a number."""
    fun, ok = np.asarray(fun, dtype=float), np.asarray(conv, dtype=bool) & np.isfinite(fun)
    g_f = float(g.fval)
    if ok.any():
        i = int(np.flatnonzero(ok)[np.argmin(fun[ok])])
        if not g_f <= fun[i]:
            return float(fun[i]), float(values[i])
    return g_f, float(g.params[name])


def _scan_result(name, values, res, g: FitResult, s: FitProblem, seconds: float, passes: int, refitted) -> ScanResult:
    """The :class:`ScanResult` of the profile ``res`` at ``values`` of ``name``, Δχ² measured from
    the lower of the global fit ``g`` and the scan's own lowest converged point."""
    ps = s.model.parameters
    nll = np.asarray(res.fun)
    conv = np.asarray(res.converged, dtype=bool)
    nll_min, best = _scan_minimum(name, values, nll, conv, g)
    return ScanResult(name, values, nll, nll_min, best, s.names, np.asarray(res.x), conv, seconds, ps[name].unit,
                      _bounds(ps[name]), passes=passes, refitted=int(np.sum(refitted)))


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
    values = grid_values(s.model.parameters, name, values)
    g = _global(s, (name, *s.names), global_fit, starts)
    res, passes, refitted = profile_points(s, np.asarray(values)[:, None], g, grid_neighbours((len(values),)),
                                           n_iter=n_iter, chunk=chunk, progress=progress, label=f"scan {name}")
    return _scan_result(name, values, res, g, s, time.perf_counter() - t0, passes, refitted)


def _scans_problem(model, data, scanned: tuple, held: tuple, profile, init=None, aux=None) -> FitProblem:
    """The problem of :func:`profile_scans`: ``profile`` fitted, the scanned and held parameters per point."""
    if not held or set(scanned) & set(held):
        raise ParameterError(f"profile_scans: give the held parameters' values per case (not the scanned {scanned} "
                             f"themselves), got {held}")
    return FitProblem.create(model, data, names=profile, fixed_names=(*scanned, *held), init=init, aux=aux)


def prepare_profile_scans(model, data, name, held, *, profile=None) -> None:
    """Load or compile ahead the solver program that :func:`profile_scans` of ``model`` and
    ``data`` with these scanned names (a name or one per case) and ``held`` parameters (the keys
    of its ``given``) runs (:func:`~nuejax.inference.fitting.prepare_solver`): a warm-up for a
    thread beside other work."""
    scanned = (name,) if isinstance(name, str) else tuple(dict.fromkeys(name))
    prepare_solver(_scans_problem(model, data, scanned, tuple(held), profile))


def _scan_cases(model, data, name, grids, given, profile, init, aux) -> tuple:
    """The checked set-up of :func:`profile_scans`: its problem, each case's scanned name and grid,
    the held values per case (cases, held), which scanned parameter each case scans (cases,
    scanned) and the other scanned ones' values."""
    grids = list(grids)
    names = (name,) * len(grids) if isinstance(name, str) else tuple(name)
    if len(names) != len(grids):
        raise ParameterError(f"profile_scans: {len(names)} scanned names for {len(grids)} grids: give one per grid")
    scanned, held = tuple(dict.fromkeys(names)), tuple(given)
    s = _scans_problem(model, data, scanned, held, profile, init, aux)
    ps = s.model.parameters
    held_values = np.zeros((len(grids), len(held)))
    for j, p in enumerate(held):
        v = np.asarray(given[p], dtype=float)
        if v.shape != (len(grids),):
            raise ParameterError(f"profile_scans: {p} has {v.shape} values for {len(grids)} grids: give one per grid")
        bad = ~np.isfinite(v) | (v < ps[p].lower) | (v > ps[p].upper)
        if bad.any():
            i = int(np.nonzero(bad)[0][0])
            raise ParameterError(f"profile_scans: value {v[i]} of {p} (case {i}) is not finite or outside its bounds "
                                 f"[{ps[p].lower}, {ps[p].upper}]")
        held_values[:, j] = v
    checked = []
    for k, (n, grid) in enumerate(zip(names, grids)):
        try:
            checked.append(grid_values(ps, n, grid))
        except ParameterError as err:
            raise ParameterError(f"profile_scans, case {k}: {err}") from err
    host = s.host_params()
    others = np.array([host[v] for v in scanned])
    own = np.array([[v == n for v in scanned] for n in names])
    return s, names, checked, held_values, own, others


def _case_fits(s: FitProblem, held_values, own, others, max_iter: int) -> list:
    """The cases' global fits: the scan problem with the held parameters (and the other scanned
    ones) pinned, one row per case, in one launch (rows at the iteration limit continued)."""
    n = len(held_values)
    wide = scan_problem(s)
    i_fixed = np.array([wide.names.index(p) for p in s.fixed_names], dtype=int)
    mask, pinned = s.held_pins(n)
    mask[:, i_fixed] = np.column_stack([~own, np.ones((n, held_values.shape[1]), dtype=bool)])
    pinned[:, i_fixed] = np.column_stack([np.where(own, 0.0, others), held_values])
    x0 = np.where(mask, pinned, np.asarray(wide.start(), dtype=float)[None])
    t_fit = time.perf_counter()
    r = solve_continued(wide, x0, Pins(mask, pinned), max_iter=max_iter)
    seconds = time.perf_counter() - t_fit
    return [newton_result(wide, type(r)(*(np.asarray(a)[k] for a in r)), seconds, one_sided=False) for k in range(n)]


def scans_global_fits(model, data, name, grids: Sequence[Sequence[float]], given: Mapping[str, Sequence[float]], *,
                      profile=None, init: Mapping | None = None, aux=None, max_iter: int = 100) -> list:
    """The global fits that :func:`profile_scans` with these arguments measures each case's Δχ²
    from (a :class:`~nuejax.inference.FitResult` per case): made once, they can be handed to
    several calls on the same cases (``global_fits``: a coarse scan and its refinement). Raises
    as :func:`profile_scans`."""
    s, _, _, held_values, own, others = _scan_cases(model, data, name, grids, given, profile, init, aux)
    return _case_fits(s, held_values, own, others, max_iter)


def _crossed(res, fit: FitResult, name: str, values, level: float) -> bool:
    """Whether a converged point of the scan points ``res`` (at ``values`` of ``name``) to the
    right of the best fit (``ScanResult.best``) lies above ``level`` in Δχ² and has a fitted point
    to its right (whose end point started it in the envelope passes): the profile has crossed the
    level there, or its minimum is narrower than the grid's step (no point below the level at all;
    a refinement between the best fit and that point finds the crossing)."""
    fun, conv = np.asarray(res.fun, dtype=float), np.asarray(res.converged, dtype=bool)
    f_min, best = _scan_minimum(name, values, fun, conv, fit)
    x = np.asarray(values)
    above = conv & np.isfinite(fun) & (x > best) & (fun - f_min > level)
    return bool(np.any(above[:-1]))


def _wave_sizes(waves) -> list:
    """``waves`` (a positive integer, or a non-empty sequence of them) as a list of ints."""
    sizes = [waves] if np.ndim(waves) == 0 else list(waves)
    if not sizes or not all(isinstance(w, (int, np.integer)) and not isinstance(w, bool) and w >= 1 for w in sizes):
        raise ParameterError(f"profile_scans: waves must be a positive integer or a non-empty sequence of them "
                             f"(points per case per wave), got {waves!r}")
    return [int(w) for w in sizes]


def profile_scans(model, data, name, grids: Sequence[Sequence[float]], given: Mapping[str, Sequence[float]], *,
                  profile=None, init: Mapping | None = None, aux=None, n_iter: int = SCAN_MAX_ITER,
                  chunk: int | None = None, max_iter: int = 100, global_fits: Sequence[FitResult] | None = None,
                  stop_above: float | None = None, waves: Sequence[int] | int = 4) -> list:
    """1-D profile scans of ``name``, one per case: case k holds each parameter of ``given`` at
    ``given[p][k]`` (held, not profiled: a mediator's mass) and scans ``name`` over ``grids[k]``
    (grids may differ in length), every other free parameter (or ``profile``) minimised; the same
    as :func:`profile_scan` at each case's values with ``starts=1``, but every case's points run in
    the same batched launches of the model's one scan program (:func:`scan_problem`; the held
    parameters pinned per row), and so do the cases' global fits. ``name`` may also give one
    scanned parameter per case (a sequence as long as ``grids``): case k then scans ``name[k]`` and
    holds the other scanned parameters at their values (the model's, or ``init``'s; not profiled,
    and not in ``given``), so that the scans of a model's two mediator couplings, each holding the
    other at zero, share their launches too; each case is then :func:`profile_scan` with those
    held too (``init``), where ``profile`` leaves them out.

    Each case's Δχ² is measured from its own minimum: the lower of the fit with its scanned
    parameter free at that case's values (from the problem's start, every case in one launch, rows
    at the iteration limit continued: :func:`~nuejax.inference.fitting.solve_continued`; or
    ``global_fits``, one per case, from :func:`scans_global_fits`) and the case's lowest converged
    point. Returns a :class:`ScanResult` per case (its ``seconds``: of the whole call).

    ``stop_above`` (a Δχ² level > 0, e.g. a one-sided limit's threshold): the grids' points are
    fitted in ascending waves, ``waves`` points of each case at a time (a sequence: the sizes of
    the first waves, the last one repeated), and a case stops once a converged point right of its
    best fit (``ScanResult.best``) lies above the level and has a fitted point to its right: its
    result holds the points fitted (a prefix of its grid; nothing else marks a stopped case),
    enough for :meth:`ScanResult.upper_limit` at that level or for a refinement between the best
    fit and that point. The envelope passes (:func:`profile_points`) run within a wave; the
    previous wave's last point is fitted again beside the next wave's, so that each starts from
    the other's end point across the boundary, and keeps the lower of its fits. The points far
    above a limit, where −2 ln L is steep and a fit crawls, are then not fitted (``nuejax
    combine``'s mediator curves: 51 % of their solver iterations went to points more than 1000
    above their minimum; benchmarks/NOTES.md); nor is anything beyond the crossing, a second
    region below the level or a deeper minimum there, as a grid that ended there would not see it.

    Raises:
        ParameterError: a held value outside its parameter's bounds or not finite, ``given``
            arrays of different lengths or not one per grid, scanned names not one per grid or
            among the held ones, a bad grid (names the case), ``global_fits`` not one per case
            or not holding the cases' held values (before any fit), a ``stop_above`` that is not a
            finite level > 0 or ``waves`` that are not positive integers.
    """
    t0 = time.perf_counter()
    s, names, checked, held_values, own, others = _scan_cases(model, data, name, grids, given, profile, init, aux)
    n_cases = len(checked)
    sizes = np.array([g.size for g in checked])
    if stop_above is None:
        widths = [int(sizes.max())]
    else:
        if not (np.ndim(stop_above) == 0 and np.isfinite(stop_above) and stop_above > 0):
            raise ParameterError(f"profile_scans: stop_above must be a finite Δχ² level > 0, got {stop_above!r}")
        widths = _wave_sizes(waves)
    if global_fits is None:
        fits = _case_fits(s, held_values, own, others, max_iter)
    else:
        fits = _checked_fits(global_fits, names, given, held_values)
    acc = [None] * n_cases  # per case: its fitted points' results and refitted flags so far
    pending, start, passes, w = np.arange(n_cases), 0, 0, 0
    while pending.size:
        stop = start + widths[min(w, len(widths) - 1)]
        # after the first wave, each case's last fitted point is fitted again beside the new ones, so
        # that the envelope passes start it from its right neighbour and the new first point from it
        lo = max(start - 1, 0)
        sub = [checked[k][lo:stop] for k in pending]
        n_sub = np.array([g.size for g in sub])
        offsets = np.concatenate([[0], np.cumsum(n_sub)[:-1]])
        groups = np.repeat(np.arange(pending.size), n_sub)
        # per case: its grid in its scanned parameter's column, the other scanned ones at their values
        points = np.column_stack([np.where(own[pending][groups], np.concatenate(sub)[:, None], others),
                                  held_values[pending][groups]])
        neighbours = np.concatenate([np.where(grid_neighbours((int(m),)) >= 0, grid_neighbours((int(m),)) + o, -1)
                                     for m, o in zip(n_sub, offsets)])
        res, p, refitted = profile_points(s, points, [fits[k] for k in pending], neighbours, n_iter=n_iter,
                                          chunk=chunk, label=f"scans {'/'.join(dict.fromkeys(names))}", groups=groups)
        passes = max(passes, p)
        for j, k in enumerate(pending):
            sel = slice(int(offsets[j]), int(offsets[j] + n_sub[j]))
            acc[k] = _extended(acc[k], type(res)(*(np.asarray(a)[sel] for a in res)), refitted[sel], lo)
        more = sizes[pending] > stop
        if stop_above is not None:
            more &= np.array([not _crossed(acc[k][0], fits[k], names[k], checked[k][:stop], stop_above)
                              for k in pending], dtype=bool)
        pending, start, w = pending[more], stop, w + 1
    seconds = time.perf_counter() - t0
    return [_scan_result(names[k], checked[k][:len(acc[k][1])], acc[k][0], fits[k], s, seconds, passes, acc[k][1])
            for k in range(n_cases)]


def _checked_fits(global_fits, names, given, held_values) -> list:
    """``global_fits`` of :func:`profile_scans`, checked: one per case, each holding the case's
    held values (a list of fits in another order would measure Δχ² from another case's minimum)."""
    fits = list(global_fits)
    if len(fits) != len(names):
        raise ParameterError(f"profile_scans: {len(fits)} global fits for {len(names)} grids: give one per grid")
    for k, f in enumerate(fits):
        if names[k] not in f.params:
            raise ParameterError(f"profile_scans: global fit {k} has no parameter {names[k]}")
        for j, p in enumerate(given):
            v = float(f.params.get(p, np.nan))
            if not np.isclose(v, held_values[k, j], rtol=1e-12, atol=0.0):
                raise ParameterError(f"profile_scans: global fit {k} holds {p} = {v:g}, not case {k}'s "
                                     f"{held_values[k, j]:g}: give the fits in the grids' order")
    return fits


def _extended(acc, res, refitted, lo: int) -> tuple:
    """A case's results so far ``acc`` (NewtonResult of arrays, refitted flags; None before the
    first wave) extended by a wave's ``res`` from grid index ``lo`` on: a point fitted again (the
    previous wave's last) keeps the lower converged of its two fits, as an envelope pass does."""
    if acc is None:
        return res, np.asarray(refitted, dtype=bool)
    old, old_ref = acc
    new_at = len(old_ref) - lo  # how many of the wave's points were fitted before (0 or 1)
    keep, lowered = _lowered(old, type(res)(*(np.asarray(a)[:new_at] for a in res)), np.arange(lo, len(old_ref)))
    ref = old_ref | lowered
    rest = type(res)(*(np.asarray(a)[new_at:] for a in res))
    joined = type(res)(*(np.concatenate([a, b]) for a, b in zip(keep, rest)))
    return joined, np.concatenate([ref, np.asarray(refitted, dtype=bool)[new_at:]])


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
                    progress=None, global_fit: FitResult | None = None, seeds=None,
                    lower_bound=None) -> Scan2DResult:
    """2-D profile scan on the grid ``values_x`` × ``values_y`` (batched launches), on the lower
    envelope of −2 ln L's branches as :func:`profile_scan` (four neighbours per point). The result
    keeps each point's profiled end point (``profiled_values``).

    ``seeds`` ((n_x, n_y, c ≤ 2, d) or (n_x, n_y, d), in the order of the result's ``profiled``)
    and ``lower_bound`` ((n_x, n_y), a lower bound of −2 ln L's profile at each point): the
    points a fit from their seeds settles at the bound need no other start
    (:func:`profile_points`; the result's ``certified`` counts them). For a combination of
    experiments: the seeds from the experiments' own scans
    (:meth:`~nuejax.model.combine.CombinedModel.joined_values` of their ``profiled_values``), the
    bound the sum of their −2 ln L (``nll``)."""
    t0 = time.perf_counter()
    names = tuple(names)
    if len(names) != 2 or names[0] == names[1]:
        raise ParameterError(f"profile_scan_2d scans two different parameters, got {names!r}")
    s = FitProblem.create(model, data, names=profile, fixed_names=names, init=init, aux=aux)
    ps = s.model.parameters
    vx, vy = grid_values(ps, names[0], values_x), grid_values(ps, names[1], values_y)
    grid = jnp.asarray(np.stack(np.meshgrid(vx, vy, indexing="ij"), -1).reshape(-1, 2))
    g = _global(s, (*names, *s.names), global_fit, starts)
    n_x, n_y = len(vx), len(vy)
    seeded = {}
    if (seeds is None) != (lower_bound is None):
        raise ParameterError("profile_scan_2d: seeds and lower_bound go together (a seeded point is settled only by "
                             "reaching its lower bound)")
    if seeds is not None:
        seeds = np.asarray(seeds, dtype=float)
        if seeds.shape[:2] != (n_x, n_y) or seeds.shape[-1] != len(s.names) or seeds.ndim not in (3, 4):
            raise ParameterError(f"profile_scan_2d: seeds must be ({n_x}, {n_y}, [c,] {len(s.names)}) (the grid, "
                                 f"then the profiled {list(s.names)}), got shape {seeds.shape}")
        bound = np.asarray(lower_bound, dtype=float)
        if bound.shape != (n_x, n_y):
            raise ParameterError(f"profile_scan_2d: lower_bound must be ({n_x}, {n_y}), got shape {bound.shape}")
        seeded = dict(seeds=seeds.reshape((n_x * n_y,) + seeds.shape[2:]), lower_bound=bound.reshape(-1))
    out = profile_points(s, np.asarray(grid), g, grid_neighbours((n_x, n_y)), n_iter=n_iter, chunk=chunk,
                         progress=progress, label=f"scan {names[0]} x {names[1]}", **seeded)
    res, passes, refitted = out[:3]
    certified = int(np.sum(out[3])) if seeded else 0
    refitted = int(np.sum(refitted))
    nll = np.asarray(res.fun).reshape(n_x, n_y)
    conv = np.asarray(res.converged).reshape(n_x, n_y)
    lowest = float(np.min(np.where(conv, nll, np.inf)))
    return Scan2DResult(names, vx, vy, nll, min(float(g.fval), lowest), s.names, conv, time.perf_counter() - t0,
                        best=(float(g.params[names[0]]), float(g.params[names[1]])), passes=passes, refitted=refitted,
                        profiled_values=np.asarray(res.x, dtype=float).reshape(n_x, n_y, -1), certified=certified)
