"""Batched profile-likelihood scans.

Every scan point is a fit of the profiled (nuisance) parameters with the scanned ones fixed; all
points run as one ``vmap``-ped launch of the bound-constrained Newton solver
(:func:`~nuejax.inference.newton.minimize_bounded`; in chunks, with progress, for long scans),
with no Python loop over points. ``converged`` per point is the solver's KKT test. Δχ² is measured
from the global minimum, found by a fit with the scanned parameters free as well (the same
solver, or a given :class:`~nuejax.inference.FitResult`).
"""

from __future__ import annotations

import time
from typing import Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError
from .fitting import EDM_TOL, compiled_solver, launch_size, newton_fit, profile_starts
from .problem import FitProblem
from .results import FitResult, Scan2DResult, ScanResult

__all__ = ["SCAN_MAX_ITER", "batched_solve", "grid_values", "profile_scan", "profile_scan_2d"]


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


def _global(s: FitProblem, names, global_fit):
    if global_fit is None:
        return newton_fit(s.with_names(names), None, one_sided=False)
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


def batched_solve(solve, grid, s, x0, chunk, progress, label):
    """Run the batched ``solve`` (``compiled_solver(..., 'fixed')``) of the problem ``s`` over the
    rows of ``grid`` in chunks of ``chunk`` (one launch per chunk); ``x0`` is one start (d,) for
    every row or a start per row, (n, d) or (n, c, d)."""
    n = grid.shape[0]
    chunk = launch_size(n, chunk, int(np.shape(x0)[-1]) if np.ndim(x0) else 1)
    x0 = jnp.asarray(x0)
    if x0.ndim == 1:
        x0 = jnp.broadcast_to(x0, (n,) + x0.shape)
    outs = []
    for start in range(0, n, chunk):
        outs.append(solve(s, grid[start:start + chunk], x0[start:start + chunk]))
        if progress is not None and n > chunk:
            jax.block_until_ready(outs[-1].fun)
            progress(f"{label}: {min(start + chunk, n)}/{n} points")
    return jax.tree_util.tree_map(lambda *a: jnp.concatenate(a), *outs)


#: Newton iterations allowed per scan point. A batched launch costs its slowest point's count
#: whatever the limit, so a generous one costs only where a point needs it: on the paper
#: workload's 200-point scan of eps_ee_L the slowest point took 93 iterations on 2 CPU cores, and
#: on an H100 (all points in one launch) one point was still unconverged at 100 (2026-11-25).
SCAN_MAX_ITER = 200


def _bounds(p):
    return (None if not np.isfinite(p.lower) else float(p.lower), None if not np.isfinite(p.upper) else float(p.upper))


def profile_scan(model, data, name: str, values: Sequence[float], *, profile=None, init: Mapping | None = None,
                 aux=None, n_iter: int = SCAN_MAX_ITER, chunk: int | None = None,
                 progress: Callable[[str], None] | None = None, global_fit: FitResult | None = None) -> ScanResult:
    """1-D profile scan of ``name`` over ``values``; ``profile`` (default: every other free
    parameter) is minimised at each point, all points in one batched launch.

    The global minimum comes from ``global_fit`` if given (e.g. a MINUIT fit), else from the
    bounded Newton fit with ``name`` free; Δχ² is measured from the lower of it and the scan's
    own minimum. ``aux``: the auxiliary measurements (default: nominal).
    """
    t0 = time.perf_counter()
    s = FitProblem.create(model, data, names=profile, fixed_names=(name,), init=init, aux=aux)
    ps = s.model.parameters
    values = grid_values(ps, name, values)
    g = _global(s, (name, *s.names), global_fit)
    start = profile_starts(g, (name,), s.names, np.asarray(values)[:, None], s.lower, s.upper)
    solve = compiled_solver(int(n_iter), EDM_TOL, "fixed")
    res = batched_solve(solve, jnp.asarray(values)[:, None], s, start, chunk, progress, f"scan {name}")
    nll = np.asarray(res.fun)
    nll_min = min(float(g.fval), float(nll.min()))
    return ScanResult(name, values, nll, nll_min, float(g.params[name]), s.names, np.asarray(res.x),
                      np.asarray(res.converged), time.perf_counter() - t0, ps[name].unit, _bounds(ps[name]))


def profile_scan_2d(model, data, names: tuple, values_x, values_y, *, profile=None, init: Mapping | None = None,
                    aux=None, n_iter: int = SCAN_MAX_ITER, chunk: int | None = None, progress=None,
                    global_fit: FitResult | None = None) -> Scan2DResult:
    """2-D profile scan on the grid ``values_x`` × ``values_y``, one batched launch (or chunks)."""
    t0 = time.perf_counter()
    names = tuple(names)
    if len(names) != 2 or names[0] == names[1]:
        raise ParameterError(f"profile_scan_2d scans two different parameters, got {names!r}")
    s = FitProblem.create(model, data, names=profile, fixed_names=names, init=init, aux=aux)
    ps = s.model.parameters
    vx, vy = grid_values(ps, names[0], values_x), grid_values(ps, names[1], values_y)
    grid = jnp.asarray(np.stack(np.meshgrid(vx, vy, indexing="ij"), -1).reshape(-1, 2))
    g = _global(s, (*names, *s.names), global_fit)
    start = profile_starts(g, names, s.names, np.asarray(grid), s.lower, s.upper)
    solve = compiled_solver(int(n_iter), EDM_TOL, "fixed")
    res = batched_solve(solve, grid, s, start, chunk, progress, f"scan {names[0]} x {names[1]}")
    nll = np.asarray(res.fun).reshape(len(vx), len(vy))
    return Scan2DResult(names, vx, vy, nll, min(float(g.fval), float(nll.min())), s.names,
                        np.asarray(res.converged).reshape(len(vx), len(vy)), time.perf_counter() - t0)
