"""Batched profile-likelihood scans and JAX-native fits.

Every scan point is a fit of the profiled (nuisance) parameters with the scanned ones fixed; all
points run as one ``vmap``-ped :func:`~nuejax.inference.newton.newton_minimize` launch (in chunks,
with progress, for long scans), with no Python loop over points. Δχ² is measured from the global
minimum, which is found by a fit with the scanned parameters free as well.
"""

from __future__ import annotations

import functools
import time
from typing import Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .cost import _hessian
from .newton import newton_minimize
from .results import FitResult, Scan2DResult, ScanResult

__all__ = ["newton_fit", "profile_scan", "profile_scan_2d"]


def _setup(model, data, fixed_names, profile, init):
    ps = model.parameters
    profile = tuple(n for n in ps.free_names if n not in fixed_names) if profile is None else tuple(profile)
    for n in (*fixed_names, *profile):
        ps[n]
    base = ps.values(init)  # cast to the parameters' dtype: weak types would retrace
    lo, hi = ps.bounds(profile)
    return profile, base, lo, hi, jnp.asarray(data)


def _solve(fixed_vals, model, base, data, x0, *, lo, hi, profile, fixed_names, n_iter):
    # The model is an argument, not a closure: no baked-in constants, and the compiled code is
    # reused by every call with the same structure (see _compiled).
    def f(x):
        p = dict(base)
        for i, n in enumerate(fixed_names):
            p[n] = fixed_vals[i]
        for i, n in enumerate(profile):
            p[n] = x[i]
        return model.nll(p, data)

    return newton_minimize(f, x0, np.asarray(lo), np.asarray(hi), n_iter=n_iter)


@functools.lru_cache(maxsize=None)
def _compiled(profile: tuple, fixed_names: tuple, lo: tuple, hi: tuple, n_iter: int, batched: bool):
    """The jitted (and, for scans, vmapped over the fixed values) solver; cached so that a second
    scan or fit of the same shape does not recompile. The bounds are static (they choose the
    reparametrisation of each parameter)."""
    solve = functools.partial(_solve, lo=lo, hi=hi, profile=profile, fixed_names=fixed_names, n_iter=n_iter)
    if batched:
        solve = jax.vmap(solve, in_axes=(0, None, None, None, None))
    return jax.jit(solve)


def newton_fit(model, data, init: Mapping | None = None, *, names=None, n_iter: int = 80) -> FitResult:
    """Fit all ``names`` (default: the free parameters) with the JAX-native Newton minimiser.

    Same :class:`FitResult` as :func:`~nuejax.inference.fit`; errors from 2 H⁻¹.
    """
    t0 = time.perf_counter()
    names, base, lo, hi, data = _setup(model, data, (), names, init)
    x0 = jnp.stack([base[n] for n in names])
    res = _compiled(tuple(names), (), *_static(lo, hi), int(n_iter), False)(jnp.zeros(0), model, base, data, x0)

    H = np.asarray(_hessian(res.x, model, base, data, names=tuple(names)))
    cov = 2.0 * np.linalg.pinv(H)
    x = np.asarray(res.x)
    params = {**base, **{n: jnp.asarray(x[i]) for i, n in enumerate(names)}}
    return FitResult(names, {n: float(x[i]) for i, n in enumerate(names)},
                     {n: float(np.sqrt(cov[i, i])) if cov[i, i] >= 0 else float("nan") for i, n in enumerate(names)},
                     cov, float(res.fun),
                     bool(res.converged), int(res.n_iter), int(res.n_iter), float("nan"), params,
                     minimizer="newton", seconds=time.perf_counter() - t0)


def _static(lo, hi):
    return tuple(float(v) for v in np.asarray(lo)), tuple(float(v) for v in np.asarray(hi))


def _batched(solve, grid, model, base, data, x0, chunk, progress, label):
    """Run the batched ``solve`` over the rows of ``grid`` in chunks of ``chunk`` (one launch per chunk)."""
    n = grid.shape[0]
    chunk = n if chunk is None else max(1, int(chunk))
    outs = []
    for start in range(0, n, chunk):
        outs.append(solve(grid[start:start + chunk], model, base, data, x0))
        if progress is not None and n > chunk:
            jax.block_until_ready(outs[-1].fun)
            progress(f"{label}: {min(start + chunk, n)}/{n} points")
    return jax.tree_util.tree_map(lambda *a: jnp.concatenate(a), *outs)


def profile_scan(model, data, name: str, values: Sequence[float], *, profile=None, init: Mapping | None = None,
                 n_iter: int = 60, chunk: int | None = None, progress: Callable[[str], None] | None = None,
                 global_fit: FitResult | None = None) -> ScanResult:
    """1-D profile scan of ``name`` over ``values``; ``profile`` (default: every other free
    parameter) is minimised at each point, all points in one batched launch.

    The global minimum comes from ``global_fit`` if given (e.g. a MINUIT fit), else from a Newton
    fit with ``name`` free; Δχ² is measured from the lower of it and the scan's own minimum.
    """
    t0 = time.perf_counter()
    profile, base, lo, hi, data = _setup(model, data, (name,), profile, init)
    values = jnp.asarray(np.asarray(values, dtype=float))
    if global_fit is None:
        global_fit = newton_fit(model, data, init, names=(name, *profile))
    start = jnp.stack([jnp.asarray(global_fit.params[n]) for n in profile])
    solve = _compiled(profile, (name,), *_static(lo, hi), int(n_iter), True)
    res = _batched(solve, values[:, None], model, base, data, start, chunk, progress, f"scan {name}")
    nll = np.asarray(res.fun)
    nll_min = min(float(global_fit.fval), float(nll.min()))
    return ScanResult(name, np.asarray(values), nll, nll_min, float(global_fit.values[name]), profile,
                      np.asarray(res.x), np.asarray(res.converged), time.perf_counter() - t0,
                      model.parameters[name].unit)


def profile_scan_2d(model, data, names: tuple, values_x, values_y, *, profile=None, init: Mapping | None = None,
                    n_iter: int = 60, chunk: int | None = None, progress=None,
                    global_fit: FitResult | None = None) -> Scan2DResult:
    """2-D profile scan on the grid ``values_x`` × ``values_y``, one batched launch (or chunks)."""
    t0 = time.perf_counter()
    profile, base, lo, hi, data = _setup(model, data, tuple(names), profile, init)
    vx, vy = np.asarray(values_x, dtype=float), np.asarray(values_y, dtype=float)
    grid = jnp.asarray(np.stack(np.meshgrid(vx, vy, indexing="ij"), -1).reshape(-1, 2))
    if global_fit is None:
        global_fit = newton_fit(model, data, init, names=(*names, *profile))
    start = jnp.stack([jnp.asarray(global_fit.params[n]) for n in profile])
    solve = _compiled(profile, tuple(names), *_static(lo, hi), int(n_iter), True)
    res = _batched(solve, grid, model, base, data, start, chunk, progress, f"scan {names[0]} x {names[1]}")
    nll = np.asarray(res.fun).reshape(len(vx), len(vy))
    return Scan2DResult(tuple(names), vx, vy, nll, min(float(global_fit.fval), float(nll.min())), profile,
                        np.asarray(res.converged).reshape(len(vx), len(vy)), time.perf_counter() - t0)
