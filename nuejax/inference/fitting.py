"""Bounded JAX-native fits: one fit (:func:`newton_fit`), a batch of data sets (:func:`batch_fit`),
and the pieces the MINUIT fit and the profile scans share (checked set-up, compiled solvers,
:class:`FitResult` assembly with parameters on bounds and one-sided errors).

Every entry point checks its inputs once, eagerly (model protocol, data shape and values,
parameter names, starts and bounds) and then runs one compiled solver
(:func:`~nuejax.inference.newton.minimize_bounded`); the compiled code is cached, so a second fit
or scan of the same structure does not recompile.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError
from ..model.checks import check_data, check_model, model_n_obs
from ..model.parameters import unknown_name_message
from .newton import STATUS, kkt, minimize_bounded, snap_to_bounds
from .newton import scale as newton_scale
from .results import FitResult

__all__ = ["BatchFitResult", "batch_fit", "newton_fit", "profile_starts", "EDM_TOL"]

#: Default EDM tolerance of the JAX-native fits (MINUIT's EDM on the free subspace).
EDM_TOL = 1e-8

#: Rows per launch of the batched solver on the CPU backend when no ``chunk`` is given: at most
#: CPU_CHUNK, and at most CPU_HESSIAN_ENTRIES / n_par² rows (batched Hessians of at most 25 000
#: numbers). On large launches XLA:CPU's multi-threaded runtime can hang: every worker idle, the
#: result never ready (1000 toys with 14 parameters in one launch; 500 finished). The stand-alone
#: benchmarks/repro/xla_cpu_hang_repro.py (batched eigh and Cholesky in one loop) hangs from about
#: 40 000 entries (220 x 14², 60 x 25²) and finished at 39 000 and 25 000; the limits keep below
#: both. A heuristic from these measurements, not a bound: docs/inference.md, "Known issue".
CPU_CHUNK = 128
CPU_HESSIAN_ENTRIES = 25_000


def launch_size(n: int, chunk: int | None, n_par: int = 1) -> int:
    """Rows per launch: ``chunk`` if given, else all ``n`` (on the CPU, see :data:`CPU_CHUNK`)."""
    if chunk is not None:
        return max(1, int(chunk))
    if jax.default_backend() != "cpu":
        return max(1, n)
    return max(1, min(n, CPU_CHUNK, CPU_HESSIAN_ENTRIES // max(1, n_par) ** 2))


# -- set-up ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Setup:
    model: object
    names: tuple  # fitted (profiled) parameters
    fixed_names: tuple  # parameters set per point (scans)
    base: dict  # full parameter mapping (fixed values, starts)
    lower: tuple
    upper: tuple
    data: jax.Array


def setup(model, data, *, names=None, fixed_names=(), init: Mapping | None = None, batch: bool = False,
          exclude=()) -> Setup:
    """Check everything a fit needs, once, and return it ready for the compiled solver."""
    model = check_model(model)
    ps = model.parameters
    fixed_names = tuple(fixed_names)
    for n in fixed_names:
        ps[n]
    if names is None:
        names = tuple(n for n in ps.free_names if n not in fixed_names and n not in exclude)
    else:
        if isinstance(names, str):
            names = (names,)
        names = tuple(names)
        for n in names:
            if n not in ps.names:
                raise ParameterError(unknown_name_message(n, ps.names))
        dup = {n for n in names if names.count(n) > 1} | (set(names) & set(fixed_names))
        if dup:
            raise ParameterError(f"parameter(s) {sorted(dup)} listed twice (fitted and fixed, or repeated)")
    if not names:
        raise ParameterError("no parameter to fit: every parameter is fixed (release some with "
                             "model.with_parameters(model.parameters.release(...)))")
    init = ps.check_overrides(init, "start")
    arrays = {k: v for k, v in init.items() if np.ndim(v) > 0}
    if arrays and not batch:
        raise ParameterError(f"start values must be scalars, got arrays for {sorted(arrays)}")
    base = ps.values({k: v for k, v in init.items() if k not in arrays})
    n_obs = model_n_obs(model)
    counts = check_data(data, n_obs, batch=batch)
    if n_obs is None:  # a user model without n_obs: at least the length must be consistent
        ref = base
        try:
            jax.eval_shape(lambda p, d: model.nll(p, d), ref, jnp.asarray(counts[0] if batch else counts))
        except Exception as err:  # noqa: BLE001 - report what the model said about this data
            raise ParameterError(f"model.nll fails on data of shape {counts.shape[-1:]}: {err}") from err
    lo, hi = ps.bounds(names)
    dtype = jnp.result_type(float)
    if arrays:
        n_sets = counts.shape[0]
        for k, v in arrays.items():
            if k not in names:
                raise ParameterError(f"per-data-set start values are for fitted parameters; {k} is not fitted")
            if np.shape(v) != (n_sets,):
                raise ParameterError(f"start values of {k} have shape {np.shape(v)}, expected ({n_sets},)")
        base = {**base, **{k: jnp.asarray(v, dtype=dtype) for k, v in arrays.items()}}
    return Setup(model, names, fixed_names, base, _floats(lo), _floats(hi), jnp.asarray(counts, dtype=dtype))


def _floats(a) -> tuple:
    return tuple(float(v) for v in np.asarray(a))


def start_vector(s: Setup) -> jax.Array:
    return jnp.stack([jnp.asarray(s.base[n]) for n in s.names], axis=-1)


# -- compiled solvers -----------------------------------------------------------------------------
def _params(x, args, names, fixed_names) -> dict:
    fixed_vals, _, base, _ = args
    p = dict(base)
    for i, n in enumerate(fixed_names):
        p[n] = fixed_vals[i]
    for i, n in enumerate(names):
        p[n] = x[i]
    return p


def objective(x, args, *, names, fixed_names):
    """-2 ln L as a function of the fitted parameters ``x``; ``args = (fixed_values, model, base, data)``.

    The model is an argument, not a closure: its tensors stay device buffers instead of being
    compiled into the program as constants.
    """
    return args[1].nll(_params(x, args, names, fixed_names), args[3])


def linear_mask(model, names) -> tuple | None:
    """Which of ``names`` the model's expectation is jointly affine in (``model.linear_parameters``),
    or None where the model declares none of them (then :func:`value_grad_hessian` uses plain
    autodiff). Static: read from the model's static fields, also while tracing."""
    lin = set(getattr(model, "linear_parameters", ()) or ())
    mask = tuple(n in lin for n in names)
    return mask if any(mask) else None


def value_grad_hessian(x, args, *, names, fixed_names):
    r"""-2 ln L, its gradient and its exact Hessian in the fitted parameters ``x`` (``args`` as
    in :func:`objective`).

    For a model that declares ``linear_parameters`` (its expectation :math:`\mu(x)` is jointly
    affine in them, and -2 ln L is ``poisson_nll(expected) + constraint_nll``), the Hessian is
    assembled from the Poisson structure instead of differentiating the whole likelihood twice:

    .. math::
        H = J^\top \mathrm{diag}(2n/\mu^2)\,J + \sum_j r_j \nabla^2\mu_j + \nabla^2 C,
        \qquad r_j = 2(1 - n_j/\mu_j),\ J = \partial\mu/\partial x,

    with :math:`J` from one batched forward pass of the expectation, and the middle term from
    forward-over-reverse derivatives of :math:`r\cdot\mu(x)` (``r`` held fixed) along the
    *non-linear* parameters only: its block between two linear parameters vanishes, and its
    linear-non-linear blocks are the transposed rows. On the default general model (25 free,
    7 non-linear) this is 163 ms against 403 ms on 2 CPU cores (``benchmarks/NOTES.md``); the
    result equals ``jax.hessian`` to rounding (tests). Declared by :class:`SpectralModel` and
    :class:`FloatingResponseModel` (19 free: 0.6 s against 1.9 s); the fast path (``FastModel``)
    declares nothing, as its autodiff Hessian is as fast. Other models: ``jax.hessian``.
    """
    model, data = args[1], args[3]
    mask = linear_mask(model, names)
    f = functools.partial(objective, names=names, fixed_names=fixed_names)
    if mask is None:
        v, g = jax.value_and_grad(f)(x, args)
        return v, g, jax.hessian(f)(x, args)
    from ..model.likelihood import poisson_nll

    mu_fn = lambda y: model.expected(_params(y, args, names, fixed_names))  # noqa: E731
    c_fn = lambda y: model.constraint_nll(_params(y, args, names, fixed_names))  # noqa: E731
    n_par = x.shape[0]
    eye = jnp.eye(n_par, dtype=x.dtype)
    mu, lin = jax.linearize(mu_fn, x)
    J = jax.vmap(lin, out_axes=1)(eye)  # (n_obs, n_par)
    n = jnp.asarray(data, dtype=mu.dtype)
    safe = jnp.where(mu > 0, mu, 1.0)
    r = 2.0 * (1.0 - jnp.where(n > 0, n / safe, 0.0))  # d(-2 ln L)/d mu
    w = 2.0 * jnp.where(n > 0, n / (safe * safe), 0.0)  # d^2(-2 ln L)/d mu^2
    vc, gc = jax.value_and_grad(c_fn)(x)
    H = J.T @ (w[:, None] * J) + jax.hessian(c_fn)(x)
    nonlin = np.flatnonzero(~np.asarray(mask))
    if nonlin.size:
        r_fixed = jax.lax.stop_gradient(r)
        grad_rmu = jax.grad(lambda y: jnp.dot(r_fixed, mu_fn(y)))
        rows = jax.vmap(lambda e: jax.jvp(grad_rmu, (x,), (e,))[1])(eye[nonlin])  # (n_nonlin, n_par)
        H = H + jnp.zeros_like(H).at[nonlin, :].set(rows).at[:, nonlin].set(rows.T)
    return poisson_nll(mu, n) + vc, J.T @ r + gc, 0.5 * (H + H.T)


def _solve(fixed_vals, model, base, data, x0, *, names, fixed_names, lo, hi, max_iter, edm_tol, single=False):
    f = functools.partial(objective, names=names, fixed_names=fixed_names)
    vgh = None
    if linear_mask(model, names) is not None:
        vgh = functools.partial(value_grad_hessian, names=names, fixed_names=fixed_names)
    args = (fixed_vals, model, base, data)
    if x0.ndim == 2:  # candidate starts (profile_starts): the lowest finite -2 ln L in the box
        cand = jnp.clip(x0, jnp.asarray(lo, dtype=x0.dtype), jnp.asarray(hi, dtype=x0.dtype))
        fs = jax.vmap(lambda x: f(x, args))(cand)
        x0 = cand[jnp.argmin(jnp.where(jnp.isfinite(fs), fs, jnp.inf))]
    return minimize_bounded(f, x0, args, lo, hi, max_iter=max_iter, edm_tol=edm_tol, vgh=vgh, single=single)


def profile_starts(fit: FitResult, fixed_names: tuple, names: tuple, points, lower, upper) -> np.ndarray:
    r"""Two candidate starts of the profile fits at ``points`` (n, k) of the parameters
    ``fixed_names``, for the fitted parameters ``names``: (n, 2, len(names)).

    The first follows the profile's tangent at the global minimum: for -2 ln L near its minimum
    :math:`\hat x`, the minimiser at fixed :math:`x_S` is
    :math:`\hat x_F + C_{FS} C_{SS}^{-1}(x_S - \hat x_S)` (the conditional mean of a Gaussian with
    the fit's covariance C; equivalently :math:`-H_{FF}^{-1}H_{FS}`), clipped to the bounds; the
    second is the global minimum itself. The solver starts from the one with the lower -2 ln L.
    On the paper workload's 200-point scan of ε^L_ee the median profile fit needs 17 Newton
    iterations instead of 36 and the slowest 93 instead of more than 100 (benchmarks/NOTES.md).
    Parameters on a bound in the global fit (zero covariance rows) keep their value.
    """
    pts = np.atleast_2d(np.asarray(points, dtype=float))
    xf = np.array([float(fit.values[n]) for n in names])
    xs = np.array([float(fit.values[n]) for n in fixed_names])
    C = np.asarray(fit.covariance, dtype=float)
    iF = [fit.names.index(n) for n in names]
    iS = [fit.names.index(n) for n in fixed_names]
    Css, Cfs = C[np.ix_(iS, iS)], C[np.ix_(iF, iS)]
    slope = Cfs @ np.linalg.pinv(Css) if np.all(np.isfinite(C)) and np.any(Css) else np.zeros((len(iF), len(iS)))
    pred = np.clip(xf[None, :] + (pts - xs[None, :]) @ slope.T, np.asarray(lower), np.asarray(upper))
    return np.stack([pred, np.broadcast_to(np.clip(xf, lower, upper), pred.shape)], axis=1)


@functools.lru_cache(maxsize=None)
def compiled_solver(names: tuple, fixed_names: tuple, lo: tuple, hi: tuple, max_iter: int, edm_tol: float,
                    batch: str | None):
    """The jitted solver, ``vmap``-ped over scan points and their starts (``batch='fixed'``: starts
    (n, d), or (n, c, d) candidates of which each fit takes the lowest, :func:`profile_starts`) or
    data sets and starts (``batch='data'``); cached so that a second fit or scan of the same
    structure does not recompile."""
    solve = functools.partial(_solve, names=names, fixed_names=fixed_names, lo=lo, hi=hi, max_iter=max_iter,
                              edm_tol=edm_tol, single=batch is None)
    if batch == "fixed":
        solve = jax.vmap(solve, in_axes=(0, None, None, None, 0))
    elif batch == "data":
        solve = jax.vmap(solve, in_axes=(None, None, None, 0, 0))
    return jax.jit(solve)


@functools.lru_cache(maxsize=None)
def _compiled_vgh(names: tuple, fixed_names: tuple):
    return jax.jit(functools.partial(value_grad_hessian, names=names, fixed_names=fixed_names))


def value_grad_hess(s: Setup, x):
    """-2 ln L, gradient and Hessian at the fitted-parameter vector ``x`` (numpy)."""
    v, g, H = _compiled_vgh(s.names, ())(jnp.asarray(x), (jnp.zeros(0), s.model, s.base, s.data))
    return float(v), np.asarray(g), np.asarray(H)


@jax.jit
def _kkt_and_snap(x, g, H, lower, upper, edm_tol):
    conv, edm, at_lo, at_hi, min_eig = kkt(x, g, H, lower, upper, edm_tol=edm_tol)
    return conv, edm, at_lo, at_hi, min_eig, snap_to_bounds(x, newton_scale(H, lower, upper), lower, upper)


def _host_device():
    try:
        return jax.devices("cpu")[0]
    except RuntimeError:  # no CPU backend: the default device
        return None


def end_point_report(s: Setup, x, edm_tol: float, vgh=None) -> tuple:
    """The KKT test at ``x`` (numpy in, Python out), and whether the bound-constrained solver
    started there would move a coordinate onto a bound at its end (:func:`snap_to_bounds`):
    ``(converged, edm, at_bound dict, min_eig, fval, g, H, snaps)``.

    One compiled value, gradient and Hessian on the model's device; the test itself runs on the
    host's copies (CPU backend): on an H100 the solver's launch at a converged point, whose
    eigen-decompositions run on the GPU, took 6.4-8.2 ms against 3.8-4.9 ms for this report with
    its own value, gradient and Hessian (``benchmarks/probes/fit_overhead_probe.py``, paper workload).
    ``vgh``: the value, gradient and Hessian at ``x`` where the caller has them already."""
    v, g, H = value_grad_hess(s, x) if vgh is None else vgh
    dev = _host_device()
    put = lambda a: jax.device_put(np.asarray(a, dtype=g.dtype), dev)  # noqa: E731
    conv, edm, at_lo, at_hi, min_eig, x_s = jax.device_get(
        _kkt_and_snap(put(x), put(g), put(H), put(s.lower), put(s.upper), put(edm_tol)))
    at_bound = bound_flags(s.names, at_lo, at_hi)
    snaps = bool(np.any(x_s != np.asarray(x, dtype=g.dtype)))
    return bool(conv) and np.isfinite(v), float(edm), at_bound, float(min_eig), v, g, H, snaps


def bound_flags(names, at_lo, at_hi) -> dict:
    return {n: ("lower" if at_lo[i] else "upper") for i, n in enumerate(names) if at_lo[i] or at_hi[i]}


# -- one-sided errors at a bound --------------------------------------------------------------------
def one_sided_errors(s: Setup, x, fval: float, at_bound: dict, H, *, level: float = 1.0) -> dict:
    """For each parameter on a bound, the distance inward at which the profile -2 ln L (every
    other fitted parameter minimised) rises by ``level`` (1: the one-sided 1σ error), found on a
    geometric grid of profiled points and refined by interpolation; ``None`` where it does not
    rise that much inside the bounds. One batched solver launch per parameter and pass.
    """
    out = {}
    x = np.asarray(x, dtype=float)
    for name, side in at_bound.items():
        i = s.names.index(name)
        others = tuple(n for n in s.names if n != name)
        lo_i, hi_i = s.lower[i], s.upper[i]
        room = (hi_i - x[i]) if side == "lower" else (x[i] - lo_i)
        if not others:
            prof = lambda v, name=name: _plain_profile(s, name, v)  # noqa: E731
        else:
            prof = functools.partial(_profile, s, name, others, x)
        h = H[i, i]
        sigma = np.sqrt(2.0 / h) if h > 0 else (0.1 * min(room, 10.0 * max(1.0, abs(x[i]))) if np.isfinite(room) else 1.0)
        d = sigma * 2.0 ** (np.arange(24) / 2.0 - 6.0)
        if np.isfinite(room):  # the far bound itself is the last point: a crossing inside is never missed
            d = np.append(d[d < room][:23], room)
            if d.size < 24:
                # Fewer than 24 grid points below the far bound: the scale is comparable to the
                # whole room (on a bound where -2 ln L depends on the parameter's square, mu_nu =
                # 0, H_ii is rounding of either sign, -8e-9 or 6e-8, and sqrt(2/H_ii) meaningless).
                # A geometric grid up to the far bound instead, 24 points as always: a two-point
                # bracket made the square-root interpolation below 2.5x off (0.46 against 1.14).
                d = room * 2.0 ** ((np.arange(24) - 23) / 2.0)
        sign = 1.0 if side == "lower" else -1.0
        rise = prof(x[i] + sign * d) - fval
        k = np.nonzero(rise >= level)[0]
        if k.size and k[0] > 0 and not np.isfinite(rise[k[0] - 1]):
            out[name] = None
            continue
        if k.size == 0:
            out[name] = None
            continue
        k = int(k[0])
        a = 0.0 if k == 0 else d[k - 1]
        fine = np.linspace(a, d[k], d.size)  # same batch size as the first pass: no recompilation
        rise_f = prof(x[i] + sign * fine) - fval
        rise_f[0] = max(rise_f[0], 0.0)
        j = int(np.nonzero(rise_f >= level)[0][0])
        if j == 0 or not np.isfinite(rise_f[j - 1]):
            out[name] = None  # a failed profile fit brackets the crossing: no number rather than a wrong one
            continue
        r0, r1 = np.sqrt(max(rise_f[j - 1], 0.0)), np.sqrt(rise_f[j])
        t = (np.sqrt(level) - r0) / (r1 - r0) if r1 > r0 else 1.0
        out[name] = float(fine[j - 1] + t * (fine[j] - fine[j - 1]))
    return out


def _profile(s: Setup, name, others, x, values):
    lo = tuple(s.lower[s.names.index(n)] for n in others)
    hi = tuple(s.upper[s.names.index(n)] for n in others)
    solve = compiled_solver(others, (name,), lo, hi, 100, EDM_TOL, "fixed")
    x0 = jnp.asarray([x[s.names.index(n)] for n in others])
    res = solve(jnp.asarray(np.asarray(values, dtype=float))[:, None], s.model, s.base, s.data,
                jnp.broadcast_to(x0, (len(values),) + x0.shape))
    # a profile fit that did not converge is not a profile value (it lies too high)
    return np.where(np.asarray(res.converged), np.asarray(res.fun), np.nan)


def _plain_profile(s: Setup, name, values):
    def one(v):
        return s.model.nll({**s.base, name: v}, s.data)

    return np.asarray(jax.jit(jax.vmap(one))(jnp.asarray(np.asarray(values, dtype=float))))


# -- results ----------------------------------------------------------------------------------------
def make_fit_result(s: Setup, x, fval: float, *, valid: bool, reason: str, minimizer: str, nfcn: int, ngrad: int,
                    edm: float, at_bound: dict, H, seconds: float, minos=None, diagnostics=None,
                    one_sided: bool = True) -> FitResult:
    """A :class:`FitResult` with the covariance 2 H⁻¹ on the free subspace (parameters on a bound
    have no symmetric error: ``errors[name] is None``; their one-sided error is in ``one_sided``)."""
    x = np.asarray(x, dtype=float)
    k = len(s.names)
    free = np.array([n not in at_bound for n in s.names])
    cov = np.zeros((k, k))
    errors = {}
    if free.any():
        Hf = np.asarray(H)[np.ix_(free, free)]
        try:
            cov_f = 2.0 * np.linalg.inv(Hf)
        except np.linalg.LinAlgError:
            cov_f = 2.0 * np.linalg.pinv(Hf)
        cov[np.ix_(free, free)] = cov_f
    for i, n in enumerate(s.names):
        errors[n] = float(np.sqrt(cov[i, i])) if free[i] and cov[i, i] > 0 and np.isfinite(cov[i, i]) else None
    if any(free[i] and errors[n] is None for i, n in enumerate(s.names)) and valid:
        valid, reason = False, "covariance not positive definite on the free parameters"
    one = one_sided_errors(s, x, fval, at_bound, H) if (one_sided and at_bound) else {}
    host = jax.device_get(dict(s.base))  # one transfer, not one per value (keys come back sorted)
    params = {kk: float(host[kk]) if np.ndim(host[kk]) == 0 else np.asarray(host[kk]).tolist() for kk in s.base}
    params.update({n: float(x[i]) for i, n in enumerate(s.names)})
    return FitResult(names=tuple(s.names), values={n: float(x[i]) for i, n in enumerate(s.names)}, errors=errors,
                     covariance=cov, fval=float(fval), valid=bool(valid), nfcn=int(nfcn), ngrad=int(ngrad),
                     edm=float(edm), params=params, minos=minos, minimizer=minimizer, seconds=float(seconds),
                     at_bound=dict(at_bound), one_sided=one, reason=reason, diagnostics=dict(diagnostics or {}))


def newton_fit(model, data, init: Mapping | None = None, *, names=None, max_iter: int = 100,
               edm_tol: float = EDM_TOL, one_sided: bool = True) -> FitResult:
    """Fit ``names`` (default: the free parameters) with the bound-constrained Newton solver
    (:func:`~nuejax.inference.newton.minimize_bounded`): ``valid`` means the KKT test passed.

    Same :class:`FitResult` as :func:`~nuejax.inference.fit`; errors from 2 H⁻¹ on the free
    subspace, one-sided errors (profile Δ(-2 ln L) = 1) for parameters on a bound.
    """
    t0 = time.perf_counter()
    s = setup(model, data, names=names, init=init)
    solve = compiled_solver(s.names, (), s.lower, s.upper, int(max_iter), float(edm_tol), None)
    res = solve(jnp.zeros(0), s.model, s.base, s.data, start_vector(s))
    at_bound = bound_flags(s.names, np.asarray(res.at_lower), np.asarray(res.at_upper))
    status = int(res.status)
    return make_fit_result(s, res.x, float(res.fun), valid=bool(res.converged), reason="" if status == 0 else STATUS[status],
                           minimizer="newton", nfcn=int(res.n_iter) + 1, ngrad=int(res.n_iter) + 1,
                           edm=float(res.edm),
                           at_bound=at_bound, H=np.asarray(res.hess), seconds=time.perf_counter() - t0,
                           diagnostics={"status": status, "min_eig": float(res.min_eig)}, one_sided=one_sided)


# -- batches ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BatchFitResult:
    """Fits of a batch of data sets: one array per fitted parameter (``values[name]``, shape (n,)),
    ``fval``, ``converged`` (the KKT test), ``n_iter``, ``edm``, ``status`` (see
    :data:`~nuejax.inference.newton.STATUS`), and per parameter a bool array ``at_lower`` /
    ``at_upper`` (on that bound with an outward gradient)."""

    names: tuple
    values: dict
    fval: np.ndarray
    converged: np.ndarray
    n_iter: np.ndarray
    edm: np.ndarray
    status: np.ndarray
    at_lower: dict
    at_upper: dict
    seconds: float = 0.0
    diagnostics: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.fval.shape[0])

    def to_dict(self) -> dict:
        arr = lambda a: np.asarray(a).tolist()  # noqa: E731
        return {"names": list(self.names), "values": {k: arr(v) for k, v in self.values.items()},
                "fval": arr(self.fval), "converged": arr(self.converged), "n_iter": arr(self.n_iter),
                "edm": [None if not np.isfinite(e) else float(e) for e in self.edm], "status": arr(self.status),
                "at_lower": {k: arr(v) for k, v in self.at_lower.items()},
                "at_upper": {k: arr(v) for k, v in self.at_upper.items()}, "seconds": self.seconds,
                "diagnostics": self.diagnostics}

    def __str__(self) -> str:
        n = len(self)
        conv = int(np.sum(self.converged))
        lines = [f"batch_fit: {n} data sets, {conv} converged (KKT), median {np.median(self.n_iter):.0f} iterations, "
                 f"{self.seconds:.2f} s"]
        for name in self.names:
            v = self.values[name]
            nb = int(np.sum(self.at_lower[name] | self.at_upper[name]))
            lines.append(f"  {name:<16} mean {np.mean(v):.6g}  std {np.std(v):.4g}" + (f"  ({nb} on a bound)" if nb else ""))
        return "\n".join(lines)


def batch_fit(model, data, init: Mapping | None = None, names=None, *, max_iter: int = 100,
              edm_tol: float = EDM_TOL, chunk: int | None = None) -> BatchFitResult:
    """Fit every row of ``data`` (shape (n, n_obs)): one compiled, ``vmap``-ped launch of the
    bound-constrained Newton solver (``chunk`` splits it into launches of that many rows; on the
    CPU the default is :data:`CPU_CHUNK`, see its note).

    ``init`` sets starting values (scalars, or arrays of shape (n,) for fitted parameters) and
    the values of fixed parameters; ``names`` chooses the fitted parameters (default: the free
    ones). ``converged`` is the KKT test of :func:`~nuejax.inference.newton.kkt`: it is never
    true at a point that is not a minimum.
    """
    t0 = time.perf_counter()
    s = setup(model, data, names=names, init=init, batch=True)
    n = s.data.shape[0]
    x0 = jnp.stack([jnp.broadcast_to(jnp.asarray(s.base[k]), (n,)) for k in s.names], axis=-1)
    base = {k: v for k, v in s.base.items() if jnp.ndim(v) == 0}
    base.update({k: v[0] for k, v in s.base.items() if jnp.ndim(v) > 0})  # per-set starts live in x0
    solve = compiled_solver(s.names, (), s.lower, s.upper, int(max_iter), float(edm_tol), "data")
    step = launch_size(n, chunk, len(s.names))
    outs = [solve(jnp.zeros(0), s.model, base, s.data[a:a + step], x0[a:a + step]) for a in range(0, n, step)]
    res = jax.tree_util.tree_map(lambda *a: np.concatenate([np.asarray(v) for v in a]), *outs)
    names = s.names
    return BatchFitResult(names, {k: res.x[:, i] for i, k in enumerate(names)}, res.fun, res.converged.astype(bool),
                          res.n_iter, res.edm, res.status,
                          {k: res.at_lower[:, i] for i, k in enumerate(names)},
                          {k: res.at_upper[:, i] for i, k in enumerate(names)}, time.perf_counter() - t0)
