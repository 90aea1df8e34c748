r"""Start designs of multi-start fits, and the distinct minima their end points found.

A bound-constrained fit that passes the KKT test has found a *local* minimum. With the physics
beyond the paper −2 ln L has several: the cross section depends on
:math:`(g_L + \varepsilon^L_{ee})^2`, so :math:`\varepsilon^L_{ee} \approx -2g_L - \hat\varepsilon`
is a second branch, and on :math:`|\varepsilon_{e\tau}|^2` at leading order, so
:math:`\pm\mathrm{Re}\,\varepsilon_{e\tau}` are mirror minima. Every fit of :mod:`nuejax.inference`
therefore starts from a *design* and keeps the lowest minimum that passes the KKT test:

1. the default start (the parameters' values, or ``init``);
2. its images under the symmetries the model declares (``model.symmetries()``,
   :func:`~nuejax.model.physics_params.physics_symmetries`), singly and combined, inside the bounds;
3. a scrambled Sobol design (Owen-scrambled, ``scipy.stats.qmc.Sobol``) over the box of the fitted
   parameters of interest (``model.parameters_of_interest()``: the free new-physics parameters),
   every other parameter at its start.

``starts`` is an integer (the design's size; 1: the default start alone) or explicit points, an
array (S, d) in the order of the fitted parameters or a sequence of ``{name: value}``. All starts
of all fits run in one batched launch. :func:`distinct_minima` groups the converged end points
into minima (value, location, how many starts reached each).

**What it guarantees, and what not.** The lowest minimum of the design is the global one where
every basin of attraction of a lower minimum holds a design point (or an image of the start). The
design is deterministic (fixed seed) and fills the box evenly, so a basin whose volume is a
fraction f of the box is missed with probability about (1 − f)^S; a basin far narrower than the
box/S can be missed. The tests measure it on models with mirror minima against a brute-force
reference (tests/test_global_minima.py); docs/inference.md says what it costs.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Mapping, Sequence

import numpy as np

from ..errors import ParameterError
from .._internal.stats import sobol_points

__all__ = ["CONTINUE_PASSES", "DEFAULT_STARTS", "SecondMinimumWarning", "choose_start", "distinct_minima", "same_minimum",
           "standard_deviations", "start_design", "symmetry_images", "symmetry_starts", "warn_second_minimum"]

#: The design size of every fit's default: the default start, its symmetry images and Sobol points
#: over the box of the fitted parameters of interest (1 where there is none).
DEFAULT_STARTS = 8
#: Two converged end points are one minimum when -2 ln L differs by less than this and every
#: coordinate by less than MINIMUM_XTOL of its standard deviation there (from the Hessian).
MINIMUM_FTOL = 1e-3
MINIMUM_XTOL = 0.1
#: End points whose -2 ln L lies within this of the lowest are equally good: the first of them in
#: design order is the fit. An argmin would pick among starts that reached one minimum by their
#: last bits, which change with the batch's shape, and the fit would move by its tolerance.
START_TIE = 1e-6
#: Launches of ``max_iter`` more iterations for the fits (starts) of a multi-start or batched fit
#: that reached the iteration limit, each from where it stopped. On Asimov data of a general-NSI
#: model (ε^L_ee and Re ε^L_eτ free, truth Re ε^L_eτ = 0.3) 8 of 10 starts were still crawling
#: along the curved valley between the branches after 100 iterations, and the two that had
#: converged sat on the mirror minimum 0.005 above the true one (tests/test_global_minima.py).
CONTINUE_PASSES = 3


class SecondMinimumWarning(UserWarning):
    """A second, distinct minimum lies within the chosen Δ(−2 ln L) of the best one: the best fit
    may sit on the other branch in data like these (the result lists both)."""


def _design_size(starts) -> int | None:
    if starts is None:
        return 1
    if isinstance(starts, (int, np.integer)) and not isinstance(starts, bool):
        if starts < 1:
            raise ParameterError(f"starts must be a positive integer or explicit start points, got {starts}")
        return int(starts)
    return None


def start_design(problem, starts=DEFAULT_STARTS, *, x0=None, seed: int = 0) -> np.ndarray:
    """The starts (S, d), in the order of ``problem.names`` (module docstring). ``x0``: the
    default start (default: ``problem.start()``); ``starts``: the design size or explicit points.

    Raises:
        ParameterError: explicit starts of the wrong shape, with an unknown name, not finite or
            outside the bounds (names the start and the parameter).
    """
    names = tuple(problem.names)
    lo, hi = np.asarray(problem.lower, dtype=float), np.asarray(problem.upper, dtype=float)
    x0 = np.asarray(problem.start() if x0 is None else x0, dtype=float)
    n = _design_size(starts)
    if n is None:
        return _explicit(starts, names, lo, hi, x0)
    if n == 1:
        return x0[None, :]
    model = problem.model
    rows = list(symmetry_starts(problem, x0, max(1, n // 2)))
    poi = [i for i, name in enumerate(names) if name in set(model.parameters_of_interest())
           and np.isfinite(lo[i]) and np.isfinite(hi[i])]
    m = n - len(rows)
    if poi and m > 0:
        u = sobol_points(len(poi), max(0, math.ceil(math.log2(m))), seed)[:m]
        pts = np.repeat(x0[None, :], m, axis=0)
        pts[:, poi] = lo[poi] + u * (hi[poi] - lo[poi])
        rows += list(pts)
    return _unique(np.asarray(rows))


def symmetry_starts(problem, x0, limit: int) -> np.ndarray:
    """``x0`` (in the order of ``problem.names``) and its images under the symmetries the model
    declares (:func:`symmetry_images`), at most ``limit`` rows, each once."""
    x0 = np.asarray(x0, dtype=float)
    lo, hi = np.asarray(problem.lower, dtype=float), np.asarray(problem.upper, dtype=float)
    rows = [x0]
    for img in symmetry_images(problem.model.symmetries(), problem.host_params(x0), tuple(problem.names), lo, hi):
        if len(rows) >= limit:
            break
        if not any(np.array_equal(img, r) for r in rows):  # combinations can give one image twice
            rows.append(img)
    return np.asarray(rows)


def symmetry_images(symmetries, values: dict, names, lo, hi):
    """The images of the point ``values`` (every parameter's value) under every combination of
    the symmetries, fewest first: vectors of ``names`` inside the box [lo, hi] that differ from the
    point (one image can come twice)."""
    index = {n: i for i, n in enumerate(names)}
    base = np.array([values[n] for n in names])
    for k in range(1, len(symmetries) + 1):
        for combo in itertools.combinations(symmetries, k):
            v = dict(values)
            for sym in combo:
                v.update(sym(v))
            x = base.copy()
            for name, val in v.items():
                if name in index:
                    x[index[name]] = val
            if np.any(x != base) and np.all(x >= lo) and np.all(x <= hi):
                yield x


def _unique(rows: np.ndarray) -> np.ndarray:
    _, first = np.unique(np.round(rows, 12), axis=0, return_index=True)
    return rows[np.sort(first)]


def _explicit(starts, names, lo, hi, x0) -> np.ndarray:
    if isinstance(starts, Mapping):
        starts = [starts]
    if isinstance(starts, Sequence) and starts and all(isinstance(s, Mapping) for s in starts):
        rows = []
        for k, s in enumerate(starts):
            unknown = [n for n in s if n not in names]
            if unknown:
                raise ParameterError(f"start {k}: {unknown[0]!r} is not a fitted parameter (fitted: {', '.join(names)})")
            rows.append([float(s.get(n, x0[i])) for i, n in enumerate(names)])
        x = np.asarray(rows, dtype=float)
    else:
        try:
            x = np.asarray(starts, dtype=float)
        except (TypeError, ValueError) as err:
            raise ParameterError(f"starts must be an integer, an array (S, {len(names)}) or a sequence of "
                                 f"{{name: value}}, got {type(starts).__name__}") from err
        if x.ndim == 1 and x.shape == (len(names),):
            x = x[None, :]
    if x.ndim != 2 or x.shape[1] != len(names) or x.shape[0] < 1:
        raise ParameterError(f"starts have shape {x.shape}, expected (S, {len(names)}) in the order {names}")
    bad = np.argwhere(~np.isfinite(x) | (x < lo) | (x > hi))
    if bad.size:
        k, i = bad[0]
        raise ParameterError(f"start {k}: {names[i]} = {x[k, i]} is not finite or outside its bounds [{lo[i]}, {hi[i]}]")
    return x


def choose_start(fun, converged, axis: int = -1) -> np.ndarray:
    """The index of each fit's end point among its starts (along ``axis``): the first, in design
    order, of those that pass the KKT test with −2 ln L within :data:`START_TIE` of their lowest;
    where none passes, the lowest finite one."""
    fun, conv = np.moveaxis(np.asarray(fun, dtype=float), axis, -1), np.moveaxis(np.asarray(converged, bool), axis, -1)
    finite = np.isfinite(fun)
    score = np.where(conv & finite, fun, np.inf)
    none = ~np.any(np.isfinite(score), axis=-1, keepdims=True)
    score = np.where(none, np.where(finite, fun, np.inf), score)
    low = np.min(score, axis=-1, keepdims=True)
    return np.argmax(score <= low + START_TIE, axis=-1)


def standard_deviations(hess) -> np.ndarray:
    """Each coordinate's standard deviation at end points with Hessians ``hess`` (..., d, d) of
    −2 ln L: the marginal sqrt(2 (H⁻¹)_ii) (pseudo-inverse), at least the conditional sqrt(2/H_ii),
    1 where neither is finite and positive. The conditional one alone is far too small along a
    curved valley of correlated parameters, where two end points of one minimum differ by many of
    it (Asimov data of a general-NSI model: 5e-9 apart in −2 ln L)."""
    h = np.asarray(hess, dtype=float)
    d = np.abs(np.diagonal(h, axis1=-2, axis2=-1))
    cond = np.where(d > 0, 2.0 / np.where(d > 0, d, 1.0), 0.0)
    ok = np.all(np.isfinite(h), axis=(-2, -1))
    inv = np.linalg.pinv(np.where(ok[..., None, None], h, 0.0), hermitian=True)
    marg = np.abs(np.diagonal(2.0 * inv, axis1=-2, axis2=-1))
    var = np.maximum(np.where(np.isfinite(marg), marg, 0.0), cond)
    return np.where(var > 0, np.sqrt(var), 1.0)


def same_minimum(f1, x1, f2, x2, scale):
    """Whether end points (−2 ln L ``f1``, location ``x1``) and (``f2``, ``x2``) are one minimum:
    −2 ln L within :data:`MINIMUM_FTOL` and every coordinate (last axis) within
    :data:`MINIMUM_XTOL` of ``scale`` (standard deviations, :func:`standard_deviations`).
    Broadcasts over leading axes."""
    return (np.abs(np.asarray(f1) - np.asarray(f2)) < MINIMUM_FTOL) & \
        np.all(np.abs(np.asarray(x1) - np.asarray(x2)) <= MINIMUM_XTOL * np.asarray(scale), axis=-1)


def distinct_minima(names, x, fun, converged, hess=None, *, with_index: bool = False):
    """The distinct minima among end points ``x`` (S, d) with values ``fun`` (S,) of which
    ``converged`` (S,) passed the KKT test, lowest first: a list of ``{"fval", "values", "n_starts"}``.
    Two end points are one minimum where −2 ln L differs by less than :data:`MINIMUM_FTOL` and
    every coordinate by less than :data:`MINIMUM_XTOL` standard deviations (``hess``: the Hessians
    at the end points, (S, d, d), :func:`standard_deviations`; else 1). ``with_index``: also the
    index of the end point that stands for each minimum (the lowest of its group)."""
    x, fun, conv = np.asarray(x, dtype=float), np.asarray(fun, dtype=float), np.asarray(converged, dtype=bool)
    ok = np.nonzero(conv & np.isfinite(fun))[0]
    ok = ok[np.argsort(fun[ok], kind="stable")]
    scale = np.ones_like(x) if hess is None else standard_deviations(hess)
    minima = []
    for k in ok:
        for m in minima:
            if same_minimum(fun[k], x[k], m["fval"], x[m["_k"]], np.maximum(scale[k], scale[m["_k"]])):
                m["n_starts"] += 1
                break
        else:
            minima.append({"fval": float(fun[k]), "values": {n: float(v) for n, v in zip(names, x[k])},
                           "n_starts": 1, "_k": int(k)})
    index = [m.pop("_k") for m in minima]
    return (minima, index) if with_index else minima


def warn_second_minimum(minima: list, delta: float | None, stacklevel: int = 3) -> None:
    """Warn (:class:`SecondMinimumWarning`) when the second of ``minima`` lies within ``delta`` of
    the first (None: never)."""
    if delta is None or len(minima) < 2:
        return
    gap = minima[1]["fval"] - minima[0]["fval"]
    if gap < delta:
        best = minima[0]["values"]
        where = ", ".join(f"{n} = {v:.4g} (best {best[n]:.4g})" for n, v in minima[1]["values"].items()
                          if abs(v - best[n]) > 1e-3 * max(1.0, abs(best[n])))
        warnings.warn(f"a second minimum lies {gap:.3g} above the best one in -2 ln L (within {delta:g}): {where}; "
                      "the fit result lists every minimum found (result.minima)", SecondMinimumWarning,
                      stacklevel=stacklevel)
