"""MINUIT fits (iminuit MIGRAD) with the exact autodiff gradient and Hessian, checked at the end
by the KKT conditions and finished on the bound-constrained Newton solver where MIGRAD stops short.

MIGRAD handles bounds by a sine transform, whose derivative vanishes on a bound: a parameter
whose best value is a bound (a rate at zero) slows MIGRAD down and often leaves it "invalid"
(EDM above its goal, or a call limit) at a point that is in fact the minimum, or just short of it.
:func:`fit` therefore tests MIGRAD's end point with :func:`~nuejax.inference.newton.kkt` (EDM on
the free subspace below MIGRAD's own goal, Hessian positive definite there, multipliers of the
parameters on a bound ≥ 0). If the test fails, or a parameter lies next to a bound (within 10⁻³
of the solver's scale) without being on it, the bound-constrained Newton solver continues from
MIGRAD's end point; its result is taken when it passes the test and is not higher. The
:class:`~nuejax.inference.FitResult` says which minimiser finished (``minimizer``), what MIGRAD
reported (``diagnostics``) and, for an invalid fit, why (``reason``).
"""

from __future__ import annotations

import time
import warnings
from typing import Mapping

import numpy as np

from .cost import NLLCost
from .fitting import (EDM_TOL, FlatParameterWarning, bound_flags, end_point_report, flat_message, flat_parameters,
                      make_fit_result, multistart, solve_rows)
from .problem import FitProblem
from .starts import DEFAULT_STARTS, start_design, warn_second_minimum
from .newton import STATUS
from .results import FitResult

__all__ = ["fit"]


def _migrad_problems(fmin) -> list:
    flags = [("is_above_max_edm", "EDM above MIGRAD's goal"), ("has_reached_call_limit", "call limit reached"),
             ("hesse_failed", "HESSE failed"), ("has_parameters_at_limit", "parameters at a limit")]
    out = [text for attr, text in flags if getattr(fmin, attr, False)]
    if not getattr(fmin, "has_posdef_covar", True):
        out.append("covariance not positive definite")
    return out


def fit(model, data, init: Mapping | None = None, *, names=None, aux=None, starts=DEFAULT_STARTS,
        warn_delta: float | None = 1.0, minos=False, strategy: int = 1, tol: float = 0.001, ncall: int | None = None,
        one_sided: bool = True) -> FitResult:
    """Minimise -2 ln L of ``model`` on ``data`` with MIGRAD, then check the KKT conditions.

    ``init`` overrides starting values (and the values of fixed parameters); ``names`` chooses the
    free parameters (default: the model's free ones); ``aux`` the auxiliary measurements of the
    constraint terms (default: nominal). The inputs are checked once (a
    :class:`~nuejax.inference.problem.FitProblem`, which ``model`` may also be). ``starts``: the
    multi-start design (:mod:`~nuejax.inference.starts`; its size, or explicit points): where it
    has more than one start, the batched Newton solver runs from all of them in one launch and
    MIGRAD starts at the lowest minimum that passes the KKT test; the result lists every distinct
    minimum found, and warns (:class:`~nuejax.inference.starts.SecondMinimumWarning`) where a
    second one lies within ``warn_delta`` of the best. ``tol`` is MIGRAD's tolerance: it stops at
    EDM < 0.002 × tol × errordef, and the KKT test uses the same EDM goal. The covariance is 2 H⁻¹
    on the free subspace with H the exact autodiff Hessian at the minimum; a parameter on a bound
    gets a one-sided error (profile Δ(-2 ln L) = 1, ``one_sided=True``) instead of a symmetric
    one. ``minos=True`` (or a list of names) adds MINOS intervals. See the module docstring for
    what happens when MIGRAD stops short.
    """
    from iminuit import Minuit

    t0 = time.perf_counter()
    s = model if isinstance(model, FitProblem) else FitProblem.create(model, data, names=names, init=init, aux=aux)
    cost = NLLCost(s)
    x0 = np.array([cost.base[n] for n in cost.names])
    n_starts, minima = 1, None
    if len(start_design(s, starts)) > 1:  # the global minimum of the design first (one batched launch)
        best, n_starts, minima, _ = multistart(s, starts, edm_tol=EDM_TOL)
        warn_second_minimum(minima, warn_delta)
        if np.all(np.isfinite(best.x)) and np.isfinite(best.fun):
            x0 = np.asarray(best.x, dtype=float)
    with warnings.catch_warnings():
        # NLLCost.g2 is needed (see its docstring) though iminuit says the Hessian overrides it.
        warnings.filterwarnings("ignore", message="hessian overrides g2")
        m = Minuit(cost, *x0)
    m.strategy = strategy
    m.tol = tol
    # Initial steps from the curvature at the start: MIGRAD's first step is then about right.
    h = np.diag(cost.hessian(x0))
    m.errors = np.where(h > 0, np.sqrt(2.0 / np.where(h > 0, h, 1.0)), 0.1 * np.maximum(np.abs(x0), 1.0))
    m.migrad(ncall=ncall)
    edm_goal = 0.002 * tol * cost.errordef
    x_m = np.clip(np.array(m.values), np.asarray(s.lower), np.asarray(s.upper))
    # MIGRAD's last HESSE and gradient are usually at its end point: the cost keeps them
    *kkt_m, snaps = end_point_report(s, x_m, edm_goal, vgh=cost.value_grad_hessian(x_m))
    ok_m, edm_m, _, min_eig_m, fval_m, _, H_m = kkt_m
    d = np.diag(H_m)
    if ok_m and not snaps and np.all(np.isfinite(d) & (d > 0)):
        # A minimum where no coordinate is about to snap onto a bound: the solver below would
        # stop at once and return this point (same test, same scale), so it is not launched.
        res = None
    else:
        # The bound-constrained solver continues from MIGRAD's end point: on a bound it moves
        # the parameter onto it; short of the minimum it finishes the job.
        # (the program of the multi-start design: one row, pinning nothing, this EDM goal)
        res = solve_rows(s, x_m[None], max_iter=100, edm_tol=float(edm_goal))
        res = type(res)(*(np.asarray(a)[0] for a in res))
    n_iter = 0 if res is None else int(res.n_iter)
    problems = _migrad_problems(m.fmin)
    diagnostics = {"migrad_valid": bool(m.valid), "migrad_fval": float(m.fval), "migrad_edm": float(m.fmin.edm),
                   "migrad_nfcn": int(m.nfcn), "migrad_problems": problems, "migrad_kkt": bool(ok_m),
                   "migrad_kkt_edm": edm_m, "newton_status": 0 if res is None else int(res.status),
                   "newton_iterations": n_iter, "newton_launched": res is not None}
    nfcn, ngrad = int(m.nfcn) + n_iter + 1, int(m.ngrad) + n_iter + 1
    if res is not None and bool(res.converged) and float(res.fun) <= fval_m + edm_goal:
        x, fval, H, edm, ok = np.asarray(res.x), float(res.fun), np.asarray(res.hess), float(res.edm), True
        at_bound = bound_flags(s.names, np.asarray(res.at_lower), np.asarray(res.at_upper))
        moved = not np.array_equal(x, x_m)
        minimizer = "migrad+newton" if moved else "migrad"
        reason = "" if (m.valid and ok_m) or not moved else (
            "MIGRAD " + ("ended invalid (" + (", ".join(problems) or "no reason given by MINUIT") + ")"
                         if not m.valid else "stopped before the KKT test passed")
            + "; finished by the bound-constrained Newton solver")
    else:
        x = x_m  # where the solver was not launched (res is None), ok is True
        ok, edm, at_bound, min_eig, fval, _, H = kkt_m
        minimizer, reason = "migrad", ""
        if ok and not m.valid:
            reason = ("MIGRAD reported invalid (" + (", ".join(problems) or "no reason given") +
                      ") but the KKT test passes at its end point")
        elif not ok:
            why = []
            if not m.valid:
                why.append("MIGRAD invalid (" + (", ".join(problems) or "no reason given by MINUIT") + ")")
            if not ok:
                why.append(f"KKT test failed at MIGRAD's end point (EDM {edm:.3g} vs goal {edm_goal:.3g}, smallest "
                           f"eigenvalue of the scaled free-subspace Hessian {min_eig:.3g})")
            why.append("bound-constrained Newton from there: " + STATUS[int(res.status)])
            reason = "; ".join(why)
            ok = False
    valid = bool(ok)
    # why no strict minimum was found: a parameter on which -2 ln L is flat there (only for an
    # invalid fit: at mu_nu = 0 on data without a magnetic moment -2 ln L rises as mu_nu^4, flat to
    # second order, and such a fit on the bound is valid); an invalid fit ends at MIGRAD's end
    # point, whose gradient kkt_m holds
    flat = flat_parameters(s.names, kkt_m[5], H, s.lower, s.upper) if not valid else []
    if flat:
        reason = (reason + "; " if reason else "") + flat_message(flat, "at the end point")
        warnings.warn(flat_message(flat, "at the end point of an invalid fit"), FlatParameterWarning, stacklevel=2)
    merr = None
    if minos:
        which = cost.names if minos is True else tuple(minos)
        for n in which:
            if n not in cost.names:
                raise ValueError(f"minos: {n!r} is not a fitted parameter (fitted: {', '.join(cost.names)})")
        skipped = [n for n in which if n in at_bound]
        which = tuple(n for n in which if n not in at_bound)
        if not valid:
            reason += "; MINOS skipped (the fit is not valid)"
        elif which:
            errs = np.sqrt(np.clip(2.0 * np.diag(np.linalg.pinv(H)), 1e-300, None))
            m.values = x
            m.errors = errs
            if not m.valid:  # MINOS needs MINUIT's own valid minimum: MIGRAD again from the solver's end point
                m.migrad()
            try:
                m.minos(*which)
            except RuntimeError as err:  # MINUIT still holds no valid minimum of its own
                reason = (reason + "; " if reason else "") + f"MINOS not run: {str(err).split(':')[0]}"
            else:
                # a side MINOS could not establish is None, not a number
                merr = {n: (float(m.merrors[n].lower) if m.merrors[n].lower_valid else None,
                            float(m.merrors[n].upper) if m.merrors[n].upper_valid else None) for n in which}
        if skipped:
            reason = (reason + "; " if reason else "") + (f"MINOS not run for {', '.join(skipped)} (on a bound: see the "
                                                          "one-sided error)")
    if minima is None:  # one start: MIGRAD's end point is the one minimum seen
        minima = [{"fval": float(fval), "values": {n: float(v) for n, v in zip(s.names, x)}, "n_starts": 1}] \
            if valid else []
    return make_fit_result(s, x, fval, valid=valid, reason=reason, minimizer=minimizer, nfcn=nfcn, ngrad=ngrad,
                           edm=edm, at_bound=at_bound, H=H, seconds=time.perf_counter() - t0, minos=merr,
                           diagnostics=diagnostics, one_sided=one_sided, n_starts=n_starts, minima=minima)
