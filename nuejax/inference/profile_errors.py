r"""Profile-likelihood errors (MINOS-like) of every fitted parameter, from batched refits.

For a best fit :math:`\hat x` with minimum :math:`-2\ln L_{\min}`, the profile-likelihood error of
:math:`x_i` on each side is the distance :math:`\delta^\pm_i` to where the profile
:math:`-2\ln L(x_i) - (-2\ln L_{\min})`, every other fitted parameter minimised, rises by
``level`` (1: the 68.27 % interval of one parameter; Wilks). It is what MINOS computes (James &
Roos, "Minuit", CERN D506; F. James, "MINUIT Tutorial: Function Minimization", CERN 72-21) and
where the profile is not a parabola it differs from the Hessian error :math:`\sqrt{2(H^{-1})_{ii}}`.

All parameters and both sides are found together: each iteration is one batched launch of the
bound-constrained Newton solver with one parameter pinned per row
(:class:`~nuejax.inference.problem.Pins`), started from the row's previous end point. A row starts
at the Hessian error; while its crossing is not bracketed it rescales the distance by
:math:`\sqrt{\text{level}/\Delta}` (exact for a parabola; at most ×4 per step), and once
bracketed it interpolates linearly in :math:`\sqrt{\Delta}`. A side stops where
:math:`|\Delta - \text{level}| <` ``tol``; it has no crossing (None) where the profile stays below
``level`` up to the parameter's bound; a side that points out of a bound the fit sits on is None
too. Tested against iminuit's MINOS and against a profile scan's crossings (tests/test_profile_errors.py).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .problem import FitProblem
from .results import FitResult
from .scan import pinned_refits

__all__ = ["profile_errors"]

#: Launches at most (each one refit per parameter and side still searching).
MAX_STEPS = 12


def profile_errors(model, data, fit: FitResult, names=None, *, level: float = 1.0, tol: float = 2e-3, aux=None,
                   chunk: int | None = None) -> FitResult:
    """``fit`` with ``minos[name] = (lower, upper)`` for ``names`` (default: every fitted
    parameter not on a bound): the signed distances (lower ≤ 0 ≤ upper) to where the profile
    −2 ln L rises by ``level``, or None for a side without a crossing inside the bounds (module
    docstring). ``fit`` must be a valid fit of ``model`` to ``data`` (of every free parameter).
    ``fit.diagnostics["profile_errors"]`` records the launches, ``level`` and the sides that did
    not converge to ``tol``."""
    from ..errors import ParameterError

    if not isinstance(fit, FitResult):
        raise TypeError(f"fit must be a FitResult, got {type(fit).__name__}")
    if not fit.valid:
        raise ParameterError(f"profile_errors: the fit is not valid ({fit.reason}); the errors are distances from a minimum")
    if not level > 0:
        raise ParameterError(f"profile_errors: level must be > 0, got {level}")
    s = FitProblem.create(model, data, aux=aux)
    missing = [n for n in s.names if n not in fit.names]
    if missing:
        raise ParameterError(f"profile_errors: the fit did not fit {missing}; give a fit of every free parameter")
    names = tuple(n for n in s.names if n not in fit.at_bound) if names is None else tuple(names)
    unknown = [n for n in names if n not in s.names]
    if unknown:
        raise ParameterError(f"profile_errors: {unknown} not fitted (fitted: {', '.join(s.names)})")
    lo, hi = (np.asarray(b, dtype=float) for b in s.bounds)
    xhat = np.array([fit.values[n] for n in s.names])

    # one row per (parameter, side); a side pointing out of the bound the fit sits on has no row
    rows = [(s.names.index(n), sign) for n in names for sign in (-1.0, 1.0)
            if not (fit.at_bound.get(n) == ("lower" if sign < 0 else "upper"))]
    k = len(rows)
    idx = np.array([r[0] for r in rows], dtype=int)
    sign = np.array([r[1] for r in rows])
    room = np.where(sign > 0, hi[idx] - xhat[idx], xhat[idx] - lo[idx])
    err = np.array([fit.errors.get(s.names[i]) or fit.one_sided.get(s.names[i]) or 0.0 for i in idx], dtype=float)
    d = np.where(err > 0, err, np.minimum(room, np.maximum(1e-3 * np.abs(xhat[idx]), 1e-3)))
    d = np.minimum(d * np.sqrt(level), room)
    below = np.zeros(k)  # bracket: the largest distance with rise < level (0: the minimum itself)
    above = np.full(k, np.inf)  # the smallest distance with rise > level
    r_below, r_above = np.zeros(k), np.full(k, np.nan)
    result = np.full(k, np.nan)
    done = np.zeros(k, dtype=bool)
    no_cross = np.zeros(k, dtype=bool)
    x_prev = np.repeat(xhat[None], k, axis=0)
    steps = 0
    for steps in range(1, MAX_STEPS + 1 if k else 1):  # k = 0: every parameter on a bound, nothing to search
        # rows already done are refitted too (fixed launch shape: one compiled program)
        res = pinned_refits(s, fit, idx, xhat[idx] + sign * d, x_prev=x_prev, chunk=chunk)
        rise = np.asarray(res.fun, dtype=float) - fit.fval
        ok = np.asarray(res.converged, dtype=bool) & np.isfinite(rise)
        x_prev = np.where(ok[:, None], np.asarray(res.x, dtype=float), x_prev)
        active = ~done
        hit = active & ok & (np.abs(rise - level) < tol)
        # the last step's parabolic correction: exact where the profile is locally a parabola about the minimum
        result[hit] = d[hit] * np.sqrt(level / np.maximum(rise[hit], 1e-300))
        done |= hit
        lower = active & ok & ~hit & (rise < level)
        upper = active & ok & ~hit & (rise > level)
        below = np.where(lower, d, below)
        r_below = np.where(lower, np.maximum(rise, 0.0), r_below)
        above = np.where(upper, d, above)
        r_above = np.where(upper, rise, r_above)
        at_edge = lower & (d >= room * (1 - 1e-12))
        no_cross |= at_edge
        done |= at_edge
        if done.all():
            break
        # next distance: interpolate in sqrt(rise) inside a bracket, else rescale as for a parabola
        bracket = np.isfinite(above)
        sa, sb = np.sqrt(r_below), np.sqrt(np.where(bracket, r_above, 1.0))
        t = np.where(bracket & (sb > sa), (np.sqrt(level) - sa) / np.where(sb > sa, sb - sa, 1.0), 0.5)
        interp = below + np.clip(t, 0.05, 0.95) * (np.where(bracket, above, 0.0) - below)
        grow = np.where(rise > 0, np.sqrt(level / np.where(rise > 0, rise, 1.0)), 4.0)
        scaled = d * np.clip(grow, 0.25, 4.0)
        failed = active & ~ok
        nxt = np.where(bracket, interp, np.minimum(scaled, room))
        nxt = np.where(failed, 0.5 * (d + below), nxt)  # a refit that failed: step back towards the bracket
        d = np.where(done, d, nxt)

    minos = dict(fit.minos or {})
    for n in names:
        i = s.names.index(n)
        pair = []
        for sg in (-1.0, 1.0):
            r = np.nonzero((idx == i) & (sign == sg))[0]
            if r.size == 0 or no_cross[r[0]] or not np.isfinite(result[r[0]]):
                pair.append(None)
            else:
                pair.append(float(sg * result[r[0]]))
        minos[n] = tuple(pair)
    unresolved = [f"{s.names[idx[r]]}{'+' if sign[r] > 0 else '-'}" for r in range(k) if not done[r]]
    diag = {**fit.diagnostics, "profile_errors": {"level": float(level), "launches": int(steps),
                                                  "no_crossing_in_bounds": [f"{s.names[idx[r]]}{'+' if sign[r] > 0 else '-'}"
                                                                            for r in range(k) if no_cross[r]],
                                                  "not_converged": unresolved}}
    return dataclasses.replace(fit, minos=minos, diagnostics=diag)
