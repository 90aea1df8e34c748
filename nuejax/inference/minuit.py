"""MINUIT fits (iminuit MIGRAD) with the exact autodiff gradient; Hesse from the autodiff Hessian."""

from __future__ import annotations

import time
import warnings
from typing import Mapping

import jax.numpy as jnp
import numpy as np

from .cost import NLLCost
from .results import FitResult

__all__ = ["fit"]


def fit(model, data, init: Mapping | None = None, *, names=None, minos=False, strategy: int = 1,
        tol: float = 0.001, ncall: int | None = None) -> FitResult:
    """Minimise -2 ln L of ``model`` on ``data`` with MIGRAD.

    ``init`` overrides starting values (and the values of fixed parameters); ``names`` chooses the
    free parameters (default: the model's free ones). The covariance is 2 H⁻¹ with H the exact
    autodiff Hessian of -2 ln L at the minimum (MINUIT's finite-difference HESSE is not needed);
    ``minos=True`` adds MINOS intervals (a list of names restricts them). ``tol`` is MIGRAD's
    tolerance: it stops at EDM < 0.002 x tol x errordef.
    """
    from iminuit import Minuit

    t0 = time.perf_counter()
    cost = NLLCost(model, data, names, fixed=init)
    x0 = np.array([float(cost.base[n]) for n in cost.names])
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
    xbest = np.array(m.values)
    H = cost.hessian(xbest)
    try:
        cov = 2.0 * np.linalg.inv(H)
    except np.linalg.LinAlgError:
        cov = 2.0 * np.linalg.pinv(H)
    # A negative variance means the Hessian is not positive definite there: report NaN, not 0.
    errors = np.sqrt(np.where(np.diag(cov) >= 0, np.diag(cov), np.nan))
    merr = None
    if minos:
        m.errors = errors
        which = cost.names if minos is True else tuple(minos)
        m.minos(*which)
        merr = {n: (m.merrors[n].lower, m.merrors[n].upper) for n in which}
    params = cost.params(xbest)
    return FitResult(
        names=cost.names,
        values={n: float(v) for n, v in zip(cost.names, xbest)},
        errors={n: float(e) for n, e in zip(cost.names, errors)},
        covariance=cov,
        fval=float(m.fval),
        valid=bool(m.valid),
        nfcn=int(m.nfcn),
        ngrad=int(m.ngrad),
        edm=float(m.fmin.edm),
        params={k: jnp.asarray(v) for k, v in params.items()},
        minos=merr,
        minimizer="migrad",
        seconds=time.perf_counter() - t0,
    )
