r"""Nuisance-parameter pulls, constraints and impacts on a parameter of interest, ranked.

For the best fit :math:`(\hat\mu, \hat\theta)` of a parameter of interest :math:`\mu` and the
other fitted parameters :math:`\theta_i`, the *impact* of :math:`\theta_i` is the shift of the
best-fit :math:`\mu` when :math:`\theta_i` is held at a shifted value and every other parameter
is fitted again:

.. math::
    \Delta\mu_i^{\pm} = \hat{\hat\mu}\big(\theta_i = \hat\theta_i \pm \sigma_i\big) - \hat\mu,

with :math:`\sigma_i` the *post-fit* error (from the Hessian, 2 H⁻¹) or the *pre-fit* width (the
auxiliary measurement's: a Gaussian constraint's σ; for a log-normal one the shifted values are
:math:`\hat\theta_i\,e^{\pm\sigma_{\ln}}`). Parameters are ranked by their larger post-fit impact.
The pull is :math:`(\hat\theta_i - c_i)/\sigma_i^{\rm pre}` (a log-normal's
:math:`\ln(\hat\theta_i/m)/\sigma_{\ln}`), and the constraint :math:`\sigma_i^{\rm post}/\sigma_i^{\rm pre}`
(a log-normal's :math:`\sigma_i^{\rm post}/(\hat\theta_i\sigma_{\ln})`). This is the ranking of
the ATLAS and CMS analyses as pyhf and cabinetry compute it (cabinetry's ``fit.ranking``,
"cabinetry: a tool to build and steer binned template fits", Held & Feickert, arXiv:2110.00476;
Cranmer et al., "HistFactory", CERN-OPEN-2012-016), with two differences: every refit here is
one row of one batched, bound-constrained Newton launch (a parameter pinned per row,
:class:`~nuejax.inference.problem.Pins`), and a parameter without a Gaussian-type auxiliary
measurement (a free normalisation, one under a one-sided bound or a custom penalty) has
post-fit impacts only (``prefit`` is None: it has no pre-fit width).

A shifted value outside the parameter's bounds is moved onto the bound (``shifts`` holds the
values used), and a parameter on a bound in the best fit (no symmetric error) is shifted inward by
its one-sided error only (measured here where the fit did not). Refits start from the better of the best fit and its tangent (the
conditional mean of the fit's Gaussian approximation) and count only where they pass the KKT test:
``n_failed`` counts those that did not (their impacts are None).
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import ParameterError
from ..model.constraints import GaussianConstraint, LogNormalConstraint
from .fitting import newton_fit, one_sided_errors, value_grad_hess
from .problem import FitProblem
from .results import FitResult, ImpactsResult
from .scan import pinned_refits
from .starts import DEFAULT_STARTS

__all__ = ["ImpactsResult", "impacts", "prefit_widths"]

#: Newton iterations per refit (they start next to their minimum).
IMPACT_MAX_ITER = 100


def prefit_widths(model) -> dict:
    """``{name: (kind, centre, width)}`` of every parameter with a two-sided auxiliary measurement
    among ``model.constraint_terms()``: ``("gaussian", c, σ)`` (σ the marginal standard deviation,
    also of a correlated Gaussian) or ``("lognormal", m, σ_ln)``. One-sided bounds and custom
    penalties give no width."""
    out = {}
    for term in model.constraint_terms():
        if isinstance(term, GaussianConstraint):
            sd = np.sqrt(np.diag(np.asarray(term.cov, dtype=float)))
            for n, c, s in zip(term.names, np.asarray(term.centre, dtype=float), sd):
                out[n] = ("gaussian", float(c), float(s))
        elif isinstance(term, LogNormalConstraint):
            out[term.name] = ("lognormal", float(term.median), float(term.sigma_ln))
    return out


def _shifted(kind, width, value, sign):
    return value * np.exp(sign * width) if kind == "lognormal" else value + sign * width


def impacts(model, data, poi: str, *, fit: FitResult | None = None, aux=None, starts=DEFAULT_STARTS,
            chunk: int | None = None) -> ImpactsResult:
    """Pulls, constraints and pre- and post-fit impacts on ``poi`` of every other free parameter
    of ``model`` for ``data`` (module docstring), all refits in one batched launch.

    Args:
        poi: the parameter of interest, a free parameter of ``model``.
        fit: the best fit of every free parameter (default: :func:`~nuejax.inference.newton_fit`
            with ``starts``); it must be valid.
        aux: the auxiliary measurements (default: the model's nominal ones).
        chunk: refits per launch (default: all, or :func:`~nuejax.inference.fitting.launch_size` on the CPU).
    Raises :class:`~nuejax.errors.ParameterError` for a ``poi`` that is not free, a model with no
    other free parameter, or an invalid ``fit``.
    """
    t0 = time.perf_counter()
    ps = model.parameters
    if poi not in ps.free_names:
        raise ParameterError(f"impacts: {poi!r} is not a free parameter of the model (free: {', '.join(ps.free_names)})")
    s = FitProblem.create(model, data, aux=aux)
    if len(s.names) < 2:
        raise ParameterError(f"impacts: {poi!r} is the model's only free parameter; nothing to rank")
    if fit is None:
        fit = newton_fit(s, None, starts=starts, warn_delta=None)
    if not isinstance(fit, FitResult):
        raise TypeError(f"fit must be a FitResult, got {type(fit).__name__}")
    missing = [n for n in s.names if n not in fit.names]
    if missing:
        raise ParameterError(f"impacts: the fit did not fit {missing}; give a fit of every free parameter")
    if not fit.valid:
        raise ParameterError(f"impacts: the best fit is not valid ({fit.reason}); impacts are shifts from a minimum")
    names = [n for n in s.names if n != poi]
    lo, hi = (np.asarray(b, dtype=float) for b in s.bounds)
    xhat = np.array([fit.values[n] for n in s.names])
    widths = prefit_widths(model)
    one_sided = dict(fit.one_sided)
    todo = {n: side for n, side in fit.at_bound.items() if n != poi and n not in one_sided}
    if todo:  # a fit run with one_sided=False: measure them now (two launches per parameter)
        _, _, H = value_grad_hess(s, xhat)
        one_sided.update(one_sided_errors(s, xhat, fit.fval, todo, H))

    rows, where = [], []  # (index in s.names, pinned value); (name, "prefit"/"postfit", side)
    shifts = {}
    for n in names:
        i = s.names.index(n)
        th = xhat[i]
        post = fit.errors.get(n)
        cand = {}
        if post is not None:
            cand["postfit"] = (th - post, th + post)
        else:  # on a bound: only inward, by the one-sided error
            one = one_sided.get(n)
            side = fit.at_bound.get(n)
            cand["postfit"] = (None if side != "upper" or one is None else th - one,
                               None if side != "lower" or one is None else th + one)
        if n in widths:
            kind, _, w = widths[n]
            cand["prefit"] = tuple(_shifted(kind, w, th, sg) for sg in (-1.0, 1.0))
        shifts[n] = {}
        for what, (a, b) in cand.items():
            pair = []
            for side, v in enumerate((a, b)):
                if v is None:
                    pair.append(None)
                    continue
                v = float(np.clip(v, lo[i], hi[i]))
                pair.append(v)
                rows.append((i, v))
                where.append((n, what, side))
            shifts[n][what] = tuple(pair)

    k = len(rows)
    res = pinned_refits(s, fit, [r[0] for r in rows], [r[1] for r in rows], max_iter=IMPACT_MAX_ITER, chunk=chunk)
    ok = np.asarray(res.converged, dtype=bool)
    mu = np.asarray(res.x, dtype=float)[:, s.names.index(poi)] - fit.values[poi]

    prefit = {n: (None, None) if n in widths else None for n in names}
    postfit = {n: (None, None) for n in names}
    for r, (n, what, side) in enumerate(where):
        table = prefit if what == "prefit" else postfit
        pair = list(table[n])
        pair[side] = float(mu[r]) if ok[r] else None
        table[n] = tuple(pair)

    pulls, constraints = {}, {}
    for n in names:
        post = fit.errors.get(n)
        if n in widths:
            kind, c, w = widths[n]
            th = fit.values[n]
            if kind == "lognormal":
                pulls[n] = float(np.log(th / c) / w) if th > 0 else None
                constraints[n] = None if post is None else float(post / (th * w))
            else:
                pulls[n] = float((th - c) / w)
                constraints[n] = None if post is None else float(post / w)
        else:
            pulls[n], constraints[n] = None, None

    def rank(n):
        v = [abs(a) for a in (postfit[n] or ()) if a is not None]
        return -max(v) if v else 0.0

    order = tuple(sorted(names, key=rank))
    return ImpactsResult(poi, float(fit.values[poi]), fit.errors.get(poi), order, pulls, constraints, prefit, postfit,
                         shifts, float(fit.fval), int(k), int(np.sum(~ok)), time.perf_counter() - t0)
