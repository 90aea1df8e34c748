"""Bounded JAX-native fits: one fit (:func:`newton_fit`), a batch of data sets (:func:`batch_fit`),
and the pieces the MINUIT fit, the profile scans and the toys share (compiled solvers of a
:class:`~nuejax.inference.problem.FitProblem`, the end-point test, :class:`FitResult` assembly
with parameters on bounds and one-sided errors).

Every entry point checks its inputs once, eagerly (model protocol, data shape and values,
parameter names, starts and bounds) and then runs one compiled solver
(:func:`~nuejax.inference.newton.minimize_bounded`); the compiled code is cached, so a second fit
or scan of the same structure does not recompile.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from ..cache import cached, treedef_digest
from .._internal.exported import persistent
from ..model.likelihood import BinnedPoisson, poisson_nll
from ..runtime import warn_if_autotuning
from .newton import STATUS, kkt, minimize_bounded, snap_to_bounds
from .newton import scale as newton_scale
from .problem import FitProblem, Pins, pin_penalty
from .results import BatchFitResult, FitResult
from .starts import (CONTINUE_PASSES, DEFAULT_STARTS, choose_start, distinct_minima, same_minimum,
                     standard_deviations, start_design, warn_second_minimum)

__all__ = ["ACCELERATOR_ROW_BYTES", "CPU_CHEAP_CHUNK", "CPU_ROW_FLOPS", "EDM_TOL", "FLAT_CHI2", "FlatParameterWarning", "batch_fit", "best_of_starts", "cheap_rows", "compiled_solver", "compiled_value_grad_hessian", "costly_objective", "distinct_rows",
           "end_point_report", "flat_message", "flat_parameters", "launch_size", "make_fit_result", "multistart", "newton_fit", "newton_result", "objective", "objective_at",
           "one_sided_errors", "over_rows", "pad_rows", "padded_rows", "prepare_solver", "problem_value_grad_hessian", "profile_starts", "ROW_LAUNCH_CHEAP_STEP", "ROW_LAUNCH_MIN", "ROW_LAUNCH_MIN_CHEAP", "ROW_LAUNCH_QUANTUM", "row_solver", "solve_batch", "solve_continued", "solve_rows", "value_grad_hess",
           "value_grad_hessian", "hessian_route", "approximate_route", "gauss_newton_terms", "curvature_term"]

#: Default EDM tolerance of the JAX-native fits (MINUIT's EDM on the free subspace).
EDM_TOL = 1e-8

#: Rows per launch of the batched solver on the CPU backend when no ``chunk`` is given. A launch
#: runs until its slowest fit ends, so smaller launches waste less: 1000 toys of the default model's
#: fast path (μ_ν released, 2 cores) took 4.4 s in launches of 128, 5.3 s of 256 and 5.8 s in one
#: launch, after compilation (benchmarks/NOTES.md). Not a guard against the XLA:CPU hang of
#: benchmarks/repro/xla_cpu_hang_repro.py: the solver's LAPACK calls depend on one another, which
#: that hang needs them not to (tests/test_no_hang.py; docs/inference.md, "Known issue").
CPU_CHUNK = 128
#: Rows per launch on the CPU backend of rows too cheap to fit one after another (``vmap``-ped,
#: :func:`over_rows`; :func:`costly_objective` False) when no ``chunk`` is given: there the host's
#: work between launches (cutting, padding and placing the rows, reading the results) took about
#: half of the time in launches of :data:`CPU_CHUNK`: the one-bin Gaussian model's Feldman–Cousins
#: belt (20 points × 20000 toys, 2 cores) took 49.4 s in launches of 128 rows, 33.1 s of 512, 33.8 s
#: of 1024 and 33.5 s of 2048, with the same critical values (benchmarks/NOTES.md); a short run's
#: last launch is padded to this size, so not more.
CPU_CHEAP_CHUNK = 512


def launch_size(n: int, chunk: int | None, cheap: bool = False) -> int:
    """Rows per launch: ``chunk`` if given, else all ``n`` (on the CPU at most :data:`CPU_CHUNK`,
    or :data:`CPU_CHEAP_CHUNK` where ``cheap``: rows that the CPU fits side by side)."""
    if chunk is not None:
        return max(1, int(chunk))
    if jax.default_backend() != "cpu":
        return max(1, n)
    return max(1, min(n, CPU_CHEAP_CHUNK if cheap else CPU_CHUNK))


def padded_rows(rows: int, step: int) -> int:
    """The rows a launch of ``rows`` rows (at most ``step``, the launch size) is padded to: on the
    CPU the next power of two, at most ``step``, so that scans, refits and batches of other
    lengths run the programs already compiled (each length is a program of its own: XLA compiles
    a solver program in 2-5 s on 2 cores); on accelerators ``rows`` (their launches hold every
    row, and their memory is what limits them)."""
    if jax.default_backend() != "cpu" or rows >= step:
        return rows
    return min(step, 1 << (int(rows) - 1).bit_length())


def pad_rows(a, size: int):
    """``a`` with its leading axis padded to ``size`` rows by repeating its first row (a numpy
    array is padded on the host: no device operation to dispatch)."""
    n = a.shape[0]
    if n == size:
        return a
    xp = np if isinstance(a, np.ndarray) else jnp
    return xp.concatenate([a, xp.repeat(a[:1], size - n, axis=0)])


# -- compiled solvers -----------------------------------------------------------------------------
def objective(x, args):
    """-2 ln L as a function of the fitted parameters ``x``; ``args = (problem, fixed_values)``
    (:meth:`~nuejax.inference.problem.FitProblem.objective`). The problem is an argument, not a
    closure: the model's tensors stay device buffers instead of compile-time constants."""
    problem, fixed = args
    return problem.objective(x, fixed)


def linear_mask(model, names) -> tuple | None:
    """Which of ``names`` the model's expectation is jointly affine in (``model.linear_parameters``),
    or None where the model declares none of them or its likelihood is not the binned Poisson one
    (then :func:`value_grad_hessian` uses plain autodiff). Static: read from the model's static
    fields, also while tracing."""
    lik = getattr(model, "likelihood", None)
    if not (isinstance(lik, BinnedPoisson) or getattr(lik, "binned", False)):
        return None
    lin = set(getattr(model, "linear_parameters", ()) or ())
    mask = tuple(n in lin for n in names)
    return mask if any(mask) else None


def value_grad_hessian(x, args):
    r"""-2 ln L, its gradient and its exact Hessian in the fitted parameters ``x`` (``args`` as
    in :func:`objective`).

    For a model that declares ``linear_parameters`` (its expectation :math:`\mu(x)` is jointly
    affine in them, and -2 ln L is the binned Poisson term of ``expected`` plus ``constraint_nll``),
    the Hessian is assembled from the Poisson structure instead of differentiating the whole
    likelihood twice:

    .. math::
        H = J^\top \mathrm{diag}(2n/\mu^2)\,J + \sum_j r_j \nabla^2\mu_j + \nabla^2 C,
        \qquad r_j = 2(1 - n_j/\mu_j),\ J = \partial\mu/\partial x,

    with :math:`J` from one batched forward pass of the expectation, and the middle term from
    forward-over-reverse derivatives of :math:`r\cdot\mu(x)` (``r`` held fixed) along the
    *non-linear* parameters only: its block between two linear parameters vanishes, and its
    linear-non-linear blocks are the transposed rows. On the default general model (25 free,
    7 non-linear) this is 163 ms against 403 ms on 2 CPU cores (``benchmarks/NOTES.md``); the
    result equals ``jax.hessian`` to rounding (tests). The stages declare their linear
    parameters (:attr:`~nuejax.model.pipeline.Model.linear_parameters`); other models:
    ``jax.hessian``.

    Without the middle term it is the Gauss-Newton (Fisher-scoring) matrix of the Poisson term,
    positive semidefinite and exact where the model is linear, which needs no forward-over-reverse
    pass: :func:`gauss_newton_terms` (on the Phase-III NSI problem, 19 free and 7 non-linear,
    1.2 ms against 3.7-4.9 ms on 2 CPU cores), and :func:`curvature_term` the rest. The solver
    uses the former alone far from a minimum only
    (:func:`~nuejax.inference.newton.minimize_bounded`, ``hessian_split``).
    """
    problem, fixed = args
    if linear_mask(problem.model, problem.names) is None:
        v, g = jax.value_and_grad(objective)(x, args)
        return v, g, jax.hessian(objective)(x, args)
    v, g, H, r = gauss_newton_terms(x, args)
    return v, g, H + curvature_term(x, args, r)


def gauss_newton_terms(x, args):
    r"""The Poisson route's value, gradient and Gauss-Newton matrix
    :math:`J^\top \mathrm{diag}(2n/\mu^2)\,J + \nabla^2 C` (:func:`value_grad_hessian`), and
    :math:`r = 2(1 - n/\mu)`, which :func:`curvature_term` takes. Only for a model with linear
    parameters among the fitted ones (:func:`linear_mask`)."""
    problem, fixed = args
    model, data = problem.model, problem.data
    mu_fn = lambda y: model.expected(problem.params(y, fixed))  # noqa: E731
    c_fn = lambda y: model.constraint_nll(problem.params(y, fixed), problem.aux)  # noqa: E731
    eye = jnp.eye(x.shape[0], dtype=x.dtype)
    mu, lin = jax.linearize(mu_fn, x)
    J = jax.vmap(lin, out_axes=1)(eye)  # (n_obs, n_par)
    n = jnp.asarray(data, dtype=mu.dtype)
    safe = jnp.where(mu > 0, mu, 1.0)
    r = 2.0 * (1.0 - jnp.where(n > 0, n / safe, 0.0))  # d(-2 ln L)/d mu
    w = 2.0 * jnp.where(n > 0, n / (safe * safe), 0.0)  # d^2(-2 ln L)/d mu^2
    vc, gc = jax.value_and_grad(c_fn)(x)
    H = J.T @ (w[:, None] * J) + jax.hessian(c_fn)(x)
    if isinstance(fixed, Pins):  # the pinned coordinates' decoupled quadratic (pin_penalty)
        vc = vc + pin_penalty(x, fixed)
        gc = gc + jnp.where(fixed.mask, 2.0 * (x - fixed.values), 0.0)
        H = H + jnp.diag(jnp.where(fixed.mask, 2.0, 0.0).astype(H.dtype))
    return poisson_nll(mu, n) + vc, J.T @ r + gc, 0.5 * (H + H.T), jax.lax.stop_gradient(r)


def curvature_term(x, args, r, *, by_direction: bool | None = None):
    r""":math:`\sum_j r_j \nabla^2\mu_j` (``r`` from :func:`gauss_newton_terms`, held fixed):
    the exact Hessian less the Gauss-Newton matrix, from forward-over-reverse passes along the
    non-linear fitted parameters only (:func:`value_grad_hessian`).

    ``by_direction`` (default: on the CPU): one pass per non-linear parameter, that parameter
    alone carrying a tangent, so that each pass differentiates only the stages that read it (a
    peak's position not the detector response, an energy scale not the signals' spectra);
    otherwise the passes are one ``vmap`` over one-hot tangents, which every stage carries. Same
    numbers (tests/test_bounded_fits.py). On 2 CPU cores the term took 6.4-9.7 ms against
    9.9-13.4 ms for the Phase-III NSI problem (7 non-linear of 19), 5.4-6.2 against 7.2-7.9 ms for
    XENONnT's μ_ν problem and 10.4-11.9 against 12.5-13.7 ms for the default model's general path
    (benchmarks/NOTES.md). Accelerators keep the ``vmap``: on one H200 the split made the batched
    value, gradient and Hessian of 512 rows 1.71 -> 1.37 ms for XENONnT's μ_ν problem but
    9.20 -> 9.57 ms for Phase-III NSI, and `nuejax combine`'s first run did not finish in 330 s
    against 208 s with the ``vmap`` on the same machine (benchmarks/NOTES.md)."""
    problem, fixed = args
    model = problem.model
    nonlin = np.flatnonzero(~np.asarray(linear_mask(model, problem.names)))
    d = x.shape[0]
    if not nonlin.size:
        return jnp.zeros((d, d), dtype=x.dtype)
    if by_direction is None:
        by_direction = jax.default_backend() == "cpu"
    if by_direction:
        rows = _curvature_rows_by_direction(x, problem, fixed, r, nonlin)
    else:
        eye = jnp.eye(d, dtype=x.dtype)
        grad_rmu = jax.grad(lambda y: jnp.dot(r, model.expected(problem.params(y, fixed))))
        rows = jax.vmap(lambda e: jax.jvp(grad_rmu, (x,), (e,))[1])(eye[nonlin])  # (n_nonlin, n_par)
    B = jnp.zeros((d, d), dtype=rows.dtype).at[nonlin, :].set(rows).at[:, nonlin].set(rows.T)
    return 0.5 * (B + B.T)


def _curvature_rows_by_direction(x, problem, fixed, r, nonlin):
    r"""The rows ``nonlin`` of :math:`\nabla^2 (r\cdot\mu)` in the fitted parameters, one
    forward-over-reverse pass per row (:func:`curvature_term`): the parameter dict is built once,
    the fitted values enter each pass as constants except the row's own, so the tangents of every
    stage that does not read it are symbolic zeros (JAX skips them). Pinned coordinates
    (:class:`~nuejax.inference.problem.Pins`) get zero rows and columns, as through
    :meth:`~nuejax.inference.problem.FitProblem.params`."""
    model, names = problem.model, problem.names
    p = problem.params(x, fixed)
    fitted = {n: p[n] for n in names}

    def fitted_gradient(name, t):
        def rmu(q):
            return jnp.dot(r, model.expected({**p, **q}))
        g = jax.grad(rmu)({**fitted, name: fitted[name] + t})
        return jnp.stack([g[n] for n in names])

    zero, one = jnp.zeros((), x.dtype), jnp.ones((), x.dtype)
    rows = jnp.stack([jax.jvp(functools.partial(fitted_gradient, names[i]), (zero,), (one,))[1] for i in nonlin])
    if isinstance(fixed, Pins):
        free = jnp.where(fixed.mask, 0.0, 1.0).astype(rows.dtype)
        rows = rows * free[None, :] * free[nonlin][:, None]
    return rows


def hessian_route(problem):
    """:func:`value_grad_hessian` where the problem's model declares linear parameters among the
    fitted ones (the Poisson route), else None (the solver differentiates -2 ln L twice). Static:
    decided while tracing, from the model's static fields."""
    return value_grad_hessian if linear_mask(problem.model, problem.names) is not None else None


def approximate_route(problem, fixed, x0):
    """The Gauss-Newton ``hessian_split`` of :func:`~nuejax.inference.newton.minimize_bounded`
    (:func:`gauss_newton_terms`, :func:`curvature_term`) where it saves time, else None: on the
    Poisson route with non-linear fitted parameters, for rows that the CPU fits one after another
    (:func:`over_rows`, :func:`costly_objective`). Under ``vmap`` the solver's per-row choice
    whether to add the curvature term would compute it for every row."""
    mask = linear_mask(problem.model, problem.names)
    if mask is None or all(mask) or jax.default_backend() != "cpu" or not costly_objective(problem, fixed, x0):
        return None
    return gauss_newton_terms, curvature_term


def _solve(problem, fixed, x0, *, max_iter, edm_tol):
    vgh = hessian_route(problem)
    approx = approximate_route(problem, fixed, x0)
    args = (problem, fixed)
    lo, hi = problem.lower, problem.upper
    pins = fixed if isinstance(fixed, Pins) else None
    if pins is not None:  # pinned coordinates start (and stay) at their values
        x0 = jnp.where(pins.mask, pins.values, x0)
    if x0.ndim == 2:  # candidate starts (profile_starts): the lowest finite -2 ln L in the box
        cand = jnp.clip(x0, jnp.asarray(lo, dtype=x0.dtype), jnp.asarray(hi, dtype=x0.dtype))
        fs = jax.vmap(lambda x: objective(x, args))(cand)
        x0 = cand[jnp.argmin(jnp.where(jnp.isfinite(fs), fs, jnp.inf))]
    r = minimize_bounded(objective, x0, args, lo, hi, max_iter=max_iter, edm_tol=edm_tol, vgh=vgh,
                         pinned=None if pins is None else pins.mask, hessian_split=approx)
    if pins is not None:  # -2 ln L itself (the penalty is zero up to the steps' rounding)
        r = r._replace(fun=r.fun - pin_penalty(r.x, pins))
    return r


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
def compiled_solver(max_iter: int, edm_tol: float, batch: str):
    """The jitted solver of a batch of data sets of a :class:`~nuejax.inference.problem.FitProblem`
    (compiled per problem structure: its fitted and per-point names and bounds), called
    ``solve(problem, data, aux, fixed, x0)`` over data sets (n, n_obs), starts (n, d), or (n, S,
    d) for a multi-start design (every result field gains that axis too) and, with
    ``batch='data_aux'``, flat auxiliary measurements (n, n_aux); the problem's own data (and,
    with ``'data_aux'``, its aux) are not read. Cached, so that a second batch of the same
    structure does not recompile. The fits of one data set (fits, profiles, refits, scans) run
    :func:`row_solver` instead."""
    if batch not in ("data", "data_aux"):
        raise ValueError(f"batch must be 'data' or 'data_aux', got {batch!r} (one data set: row_solver)")
    warn_if_autotuning()  # a GPU without nuejax.gpu_settings(): minutes per program
    one = functools.partial(_solve, max_iter=max_iter, edm_tol=edm_tol)

    def on_data(problem, data, aux, fixed, x0):
        pr = dataclasses.replace(problem, data=data, aux_flat=aux)
        fit = lambda x: one(pr, fixed, x)  # noqa: E731
        if x0.ndim == 2:  # a multi-start design: each start a row of its own
            return over_rows(fit, (0,), lambda x: costly_objective(pr, fixed, x))(x0)
        return fit(x0)

    def costly(problem, data, aux, fixed, x0):
        return costly_objective(dataclasses.replace(problem, data=data, aux_flat=aux), fixed, x0)

    axes = (None, 0, 0 if batch == "data_aux" else None, None, 0)
    tag = f"solver-{batch}-{max_iter}-{float(edm_tol)!r}"  # the label names the options exactly
    return persistent(jax.jit(over_rows(on_data, axes, costly)), tag)


@functools.lru_cache(maxsize=None)
def row_solver():
    """The jitted solver of the fits of one data set, called ``solve(problem, fixed, x0,
    max_iter, edm_tol)`` over rows: per row the values of ``problem.fixed_names`` ((n, k)) or
    :class:`~nuejax.inference.problem.Pins` of fitted coordinates ((n, d) each), and candidate
    starts (n, c, d), of which the fit takes the lowest −2 ln L in the box
    (:func:`profile_starts`). The iteration limit and the EDM tolerance are operands, not
    structure, so a model's fits, profile errors, refits and scans run one compiled program
    (:func:`solve_rows`; XLA compiles a solver program in 4-7 s on 2 cores). Rows run side by
    side (``vmap``), or one after another on the CPU (:func:`over_rows`)."""
    warn_if_autotuning()  # a GPU without nuejax.gpu_settings(): minutes per program

    def one(problem, fixed, x0, max_iter, edm_tol):
        return _solve(problem, fixed, x0, max_iter=max_iter, edm_tol=edm_tol)

    def costly(problem, fixed, x0, max_iter, edm_tol):
        return costly_objective(problem, fixed, x0)

    return persistent(jax.jit(over_rows(one, (None, 0, 0, None, None), costly)), "solver-rows")


#: Accelerators' launches of :func:`solve_rows` are padded to the next power of two, at least
#: :data:`ROW_LAUNCH_MIN` rows (:data:`ROW_LAUNCH_MIN_CHEAP` where rows are cheap), up to this many
#: rows, and to a multiple of it beyond (padded rows are computed there: at most this many).
ROW_LAUNCH_QUANTUM = 1024
#: The fewest rows of an accelerator's launch of :func:`solve_rows` where a row is costly
#: (:func:`cheap_rows`): a fit's multi-start design (8 starts), MIGRAD's Newton finish (1 row) and
#: the profile errors (2-4 rows) then run one program; a launch of a few rows costs its latency,
#: whatever their number.
ROW_LAUNCH_MIN = 8
#: The fewest rows of an accelerator's launch where rows are cheap (:func:`cheap_rows`): the
#: design, the finish, the profile errors and scans of up to this many rows then run one program,
#: the same as longer scans in launches of :data:`ROW_LAUNCH_CHEAP_STEP`, so that a problem
#: compiles one solver program. On one H200 a launch of 64 rows cost what one of 8 does for the
#: Phase-III and XENONnT problems (first runs: `nuejax xenonnt` 99 s instead of 158 s, `nuejax
#: borexino` 51 s instead of 74 s); padding to 256 instead of 64 then took `nuejax combine`'s
#: first run from 208.4 s to 171.8 s (warm 36.9 -> 34.8 s), `nuejax borexino`'s from 54.1 to
#: 49.4 s (warm 5.69 -> 5.75 s) on one machine (benchmarks/NOTES.md).
ROW_LAUNCH_MIN_CHEAP = 256
#: Rows are cheap on an accelerator when one row's value, gradient and Hessian move fewer bytes
#: than this (XLA's cost analysis): the Phase-III and XENONnT problems move 6e8-9e8, the paper
#: workload's fast path 1e7, while its general path (25 fitted parameters, 1.2e10 bytes) took
#: 5 ms for 8 rows and 30 ms for 64 on one H200, so that padding its 8-start design to 64 rows
#: made the fit 1.9 s -> 11.9 s (benchmarks/NOTES.md).
ACCELERATOR_ROW_BYTES = 3e9


#: Accelerators' launches of cheap rows (:func:`cheap_rows`) hold this many rows, the fewest such
#: a launch holds (:data:`ROW_LAUNCH_MIN_CHEAP`), so every launch is padded to it: a problem then
#: compiles one solver program whatever its launches' lengths. Batched mediator curves (9 masses x
#: 22 points x 2 starts) had made each problem compile one program per power of two up to 512,
#: 8-16 s each on one H200's host (benchmarks/NOTES.md).
ROW_LAUNCH_CHEAP_STEP = ROW_LAUNCH_MIN_CHEAP


def _row_launch(r: int, step: int, sequential: bool, least: int = ROW_LAUNCH_MIN) -> int:
    """The rows a launch of ``r`` rows of :func:`solve_rows` is padded to (its docstring);
    ``least``: the fewest rows of an accelerator's launch."""
    if jax.default_backend() != "cpu":
        if r > ROW_LAUNCH_QUANTUM:
            return -(-r // ROW_LAUNCH_QUANTUM) * ROW_LAUNCH_QUANTUM
        return max(least, 1 << (r - 1).bit_length())
    return max(r, CPU_CHUNK) if sequential else padded_rows(r, step)


def solve_rows(problem, x0, fixed=None, *, max_iter: int = 100, edm_tol: float = EDM_TOL, chunk=None,
               group: int = 1, progress=None, label: str = "fits"):
    """Fit ``problem`` once per row of ``x0`` with :func:`row_solver`: a
    :class:`~nuejax.inference.newton.NewtonResult` of numpy arrays with a leading axis n.

    ``x0``: a start per row (n, d), or candidates (n, c, d) (:func:`profile_starts`; c ≤ 2);
    ``fixed``: per row the values of ``problem.fixed_names`` (n, k), or
    :class:`~nuejax.inference.problem.Pins` (n, d); None: nothing held (Pins that pin nothing, so
    that a fit and the scans of its problem share the program). Rows equal to an earlier one in
    every input are fitted once. Launches hold ``chunk`` × ``group`` rows (default
    :func:`launch_size`); on the CPU, where the rows of a costly problem are fitted one after
    another and a padded row is not fitted (:func:`over_rows`), every launch is padded to
    :data:`CPU_CHUNK` rows, so that launches of any length run one program; elsewhere to the next
    power of two (:data:`ROW_LAUNCH_MIN`, or :data:`ROW_LAUNCH_MIN_CHEAP` where rows are cheap:
    :func:`cheap_rows`; :data:`ROW_LAUNCH_QUANTUM`). ``group``: consecutive rows per point (``progress`` counts points: ``label:
    k/n points`` after each launch, where there is more than one)."""
    x0 = np.asarray(x0, dtype=float)
    if x0.ndim == 2:
        x0 = x0[:, None, :]
    if x0.ndim != 3 or x0.shape[1] > 2:
        raise ValueError(f"solve_rows: starts must be (n, d) or (n, c <= 2, d), got shape {x0.shape}")
    x0 = np.concatenate([x0, np.repeat(x0[:, :1], 2 - x0.shape[1], axis=1)], axis=1)  # one shape: two candidates
    n, d = x0.shape[0], x0.shape[-1]
    if fixed is None:
        if problem.fixed_names:
            raise ValueError(f"solve_rows: the problem holds {problem.fixed_names} fixed per row: give their values")
        fixed = Pins(np.zeros((n, d), dtype=bool), np.zeros((n, d)))
    fixed = jax.tree_util.tree_map(np.asarray, fixed)
    leaves = [np.asarray(a, dtype=float).reshape(n, -1) for a in jax.tree_util.tree_leaves(fixed)]
    uniq, inverse = distinct_rows(np.concatenate(leaves + [x0.reshape(n, -1)], axis=1))
    step, sequential, least = _launch_plan(problem, fixed, x0, None if chunk is None else int(chunk) * int(group))
    solve = row_solver()
    # the last distinct row each point needs (progress: a point is done once that one is)
    last = np.maximum.accumulate(inverse.reshape(-1, group).max(axis=1)) if progress is not None else None
    outs = []
    for a in range(0, uniq.size, step):
        rows = uniq[a:a + step]
        r = rows.size
        size = _row_launch(r, step, sequential, least)
        take = np.concatenate([rows, np.repeat(rows[:1], size - r)])
        out = solve(*_launch_operands(problem, fixed, x0, take, max_iter, edm_tol))
        if progress is not None and uniq.size > step:
            jax.block_until_ready(out.fun)
            progress(f"{label}: {int(np.sum(last < a + r))}/{last.size} points")
        outs.append((out, r))
    outs = [jax.tree_util.tree_map(lambda v: np.asarray(v)[:r], out) for out, r in outs]  # noqa: B023
    res = outs[0] if len(outs) == 1 else jax.tree_util.tree_map(lambda *v: np.concatenate(v), *outs)
    return type(res)(*(np.asarray(v)[inverse] for v in res))


def distinct_rows(key) -> tuple:
    """``(first, inverse)`` of the rows of ``key`` (n, m): the row where each distinct row first
    appears, in the order they first appear, and each row's position among them (rows equal bit
    for bit are one)."""
    key = np.ascontiguousarray(key)
    _, first, inverse = np.unique(key.view(np.dtype((np.void, key.dtype.itemsize * key.shape[1]))).ravel(),
                                  return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[np.asarray(inverse).ravel()]


def _launch_plan(problem, fixed, x0, rows_per_launch):
    """(step, sequential, least) of :func:`solve_rows`'s launches: rows per launch, whether the
    CPU fits them one after another, the fewest rows of an accelerator's launch."""
    step = launch_size(1 << 30, rows_per_launch)
    first_row = jax.tree_util.tree_map(lambda a: a[0], fixed)
    on_cpu = jax.default_backend() == "cpu"
    sequential = on_cpu and costly_objective(problem, first_row, x0[0])
    cheap = not on_cpu and cheap_rows(problem, first_row, x0[0, 0])
    if cheap and rows_per_launch is None:  # launches of at most ROW_LAUNCH_CHEAP_STEP = least rows: one size
        step = ROW_LAUNCH_CHEAP_STEP
    return step, sequential, ROW_LAUNCH_MIN_CHEAP if cheap else ROW_LAUNCH_MIN


def _launch_operands(problem, fixed, x0, take, max_iter, edm_tol) -> tuple:
    """The operands of :func:`row_solver`'s launch of the rows ``take`` (indices into ``fixed``
    and ``x0``), in the types every launch has (one program per shape)."""
    dt = problem.values.dtype
    f = jax.tree_util.tree_map(lambda v: jnp.asarray(v[take], dtype=dt if v.dtype.kind == "f" else v.dtype), fixed)
    return problem, f, jnp.asarray(x0[take], dtype=dt), jnp.asarray(int(max_iter)), jnp.asarray(edm_tol, dtype=dt)


def prepare_solver(problem) -> None:
    """Load, or compile, the solver program of ``problem``'s fits and scans ahead (a warm-up: a
    thread of :func:`nuejax._internal.ahead.warm_ups` runs it while other work runs, and the fit
    that needs the program finds it, or, where programs are kept in the on-disk cache, waits for
    it; :func:`row_solver`). The program is that of a launch of :func:`solve_rows` on
    ``problem.full()`` where its launches have one size: an accelerator's where rows are cheap
    (:data:`ROW_LAUNCH_CHEAP_STEP` rows), the CPU's where they are costly (:data:`CPU_CHUNK`);
    a ``chunk`` given to a fit or scan makes other sizes. Elsewhere a launch's size follows its
    rows, and nothing is done."""
    wide = problem.full()
    d = len(wide.names)
    fixed = Pins(np.zeros((1, d), dtype=bool), np.zeros((1, d)))
    start = wide.host_params()
    x0 = np.repeat(np.array([[start[n] for n in wide.names]], dtype=float)[:, None], 2, axis=1)
    step, sequential, least = _launch_plan(wide, fixed, x0, None)
    if jax.default_backend() == "cpu" and not sequential or jax.default_backend() != "cpu" and step != least:
        return
    size = _row_launch(1, step, sequential, least)
    row_solver().prepare(*_launch_operands(wide, fixed, x0, np.zeros(size, dtype=int), 0, EDM_TOL))


#: On the CPU, rows whose -2 ln L costs at least this many flops per evaluation (XLA's cost
#: analysis) run one after another (:func:`over_rows`); cheaper ones stay ``vmap``-ped, where the
#: per-operation overhead of a row at a time dominates: a Feldman-Cousins row of the one-bin
#: counting model of tests/test_discrete_neyman.py (101 flops) took 47 s row by row against 20 s
#: vmapped, while 1000 toy fits of the default model's fast path (3.6e5 flops) took 3.3 s row by
#: row against 4.1 s (2 cores). Where between the two the crossing lies was not measured.
CPU_ROW_FLOPS = 10_000


def _shapes(tree):
    def one(a):
        if a is None or isinstance(a, jax.ShapeDtypeStruct):
            return a
        return jax.ShapeDtypeStruct(jnp.shape(a), jnp.result_type(a))

    return jax.tree_util.tree_map(one, tree)


_COSTLY: dict = {}


def _row_cost(kind: str, problem, fixed, x) -> dict:
    """XLA's cost analysis of one row of ``problem`` at a start ``x`` (its last axis the fitted
    parameters): of −2 ln L (``kind='objective'``) or of its value, gradient and Hessian
    (``'vgh'``). Decided while tracing, from shapes alone; remembered per kind, structure and
    shapes (a solver asks more than once)."""
    x1 = jnp.reshape(x, (-1, jnp.shape(x)[-1]))[0]
    shapes = _shapes((x1, (problem, fixed)))
    leaves, tree = jax.tree_util.tree_flatten(shapes)
    try:
        key = (kind, tree, tuple((a.shape, str(a.dtype)) for a in leaves))
        hash(key)
    except TypeError:  # a static field that does not hash: ask XLA every time
        key = None
    if key is not None and key in _COSTLY:
        return _COSTLY[key]
    fun = objective if kind == "objective" else value_grad_hessian

    def analyse():
        # On the CPU's terms wherever it runs: the thresholds were set from the CPU's analysis. A
        # GPU's lowering has none before compilation (its PJRT plugin raises, JAX returns None):
        # on one H200 every problem then counted as costly, and xenonnt's mu and NSI stages ran
        # 8-row launches (benchmarks/probes/row_cost_probe.py, benchmarks/NOTES.md). So the
        # program is lowered for the host's CPU device, which every JAX installation has unless
        # JAX_PLATFORMS leaves it out; then the compiled program's own analysis is read instead.
        traced = jax.jit(fun).trace(*shapes)
        try:
            cpu = jax.devices("cpu")[0]
        except RuntimeError:
            cpu = None
        if cpu is not None:
            with jax.default_device(cpu):
                cost = traced.lower().cost_analysis()
        else:
            lowered = traced.lower()
            cost = lowered.cost_analysis() or lowered.compile().cost_analysis()
        if isinstance(cost, (list, tuple)):  # older JAX: one dict per program
            cost = cost[0] if cost else {}
        return {k: float(v) for k, v in dict(cost or {}).items()}

    # A Hessian's lowering takes 1-2 s on 2 cores, in every process: kept in the on-disk cache
    # (nuejax.cache) by the structure's digest, where the structure can be keyed.
    digest = treedef_digest(tree, leaves) if kind == "vgh" else None
    cost = analyse() if digest is None else cached("cost", kind, {"structure": digest}, analyse)
    if key is not None:
        _COSTLY[key] = cost
    return cost


def costly_objective(problem, fixed, x) -> bool:
    """Whether one evaluation of -2 ln L of ``problem`` at a start ``x`` (its last axis the fitted
    parameters) costs at least :data:`CPU_ROW_FLOPS` flops, by XLA's cost analysis of the lowered
    program (decided while tracing, from shapes alone; remembered per structure and shapes, as a
    solver asks twice: for its rows and for its Hessian route)."""
    return float(_row_cost("objective", problem, fixed, x).get("flops", 0.0)) >= CPU_ROW_FLOPS


def cheap_rows(problem, fixed, x) -> bool:
    """Whether one row's value, gradient and Hessian of ``problem`` at a start ``x`` move fewer
    than :data:`ACCELERATOR_ROW_BYTES` bytes (XLA's cost analysis, from shapes alone, remembered):
    then an accelerator's launch of :data:`ROW_LAUNCH_MIN_CHEAP` rows costs what a smaller one
    does."""
    return float(_row_cost("vgh", problem, fixed, x).get("bytes accessed", np.inf)) < ACCELERATOR_ROW_BYTES


def over_rows(f, in_axes, sequential=None):
    """``f`` over the leading axis of its arguments whose ``in_axes`` entry is 0 (the others shared):
    ``jax.vmap``, or on the CPU, where ``sequential`` says so, one row after another
    (``lax.scan``), each row's Newton loop ending when *it* has converged.

    A ``vmap``-ped while loop runs every row until the slowest has converged, which on the
    accelerators costs little (the rows run side by side) but on the CPU costs the slowest row's
    iterations times the rows: on 2 cores the profile scans of the Phase-III NSI analysis went
    from 46 s to 19 s (ε^L_ee) and 134 s to 47 s (the 2-D region), and 1000 toy fits of the
    default model from 4.1 s to 3.3 s (benchmarks/NOTES.md). A row equal to the first one in every
    mapped leaf (the padding of :func:`pad_rows`, a repeated start) is not fitted again: it takes
    the first row's result, which it would have reproduced.

    ``sequential``: True or False forces one or the other; None: row by row on the CPU; a callable:
    called while tracing with the first row's arguments, row by row on the CPU where it returns
    True (the solvers pass :func:`costly_objective`)."""
    if sequential is None or callable(sequential):
        if jax.default_backend() != "cpu":
            return jax.vmap(f, in_axes=in_axes)
    elif not sequential:
        return jax.vmap(f, in_axes=in_axes)
    decide = sequential if callable(sequential) else None

    def mapped(*args):
        rows = tuple(a for a, ax in zip(args, in_axes) if ax == 0)
        first = jax.tree_util.tree_map(lambda a: a[0], rows)  # each mapped input's first row
        if decide is not None:
            it = iter(first)
            if not decide(*[next(it) if ax == 0 else a for a, ax in zip(args, in_axes)]):
                return jax.vmap(f, in_axes=in_axes)(*args)

        def call(row):
            it = iter(row)
            return f(*[next(it) if ax == 0 else a for a, ax in zip(args, in_axes)])

        call = jax.jit(call)  # traced once, for its output's shape and for the loop's body
        shape = jax.eval_shape(call, first)
        init = jax.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), shape)
        n = jax.tree_util.tree_leaves(rows)[0].shape[0]

        def body(row0_out, xs):
            i, row = xs
            same = i > 0
            for a, b in zip(jax.tree_util.tree_leaves(row), jax.tree_util.tree_leaves(first)):
                same = same & jnp.all(a == b)
            out = jax.lax.cond(same, lambda _: row0_out, call, row)
            return jax.tree_util.tree_map(lambda o, c: jnp.where(i == 0, o, c), out, row0_out), out

        return jax.lax.scan(body, init, (jnp.arange(n), rows))[1]

    return mapped


def _batch_step(n_starts: int, chunk) -> int:
    """Data sets per launch of :func:`solve_batch` (every start counts as a row of :func:`launch_size`),
    whatever their number: a shorter last launch is padded (:func:`padded_rows`)."""
    return max(1, launch_size(1 << 30, None if chunk is None else chunk * n_starts) // n_starts)


def solve_batch(problem, x0, *, max_iter: int, edm_tol: float, chunk=None):
    """Fit every data set of a batch problem (data (n, n_obs), aux batched or nominal) from the
    starts ``x0`` (n, d), or (n, S, d) for S starts each, in launches of ``chunk`` rows
    (:func:`launch_size`, counting every start as a row; the last one padded, :func:`padded_rows`): a
    :class:`~nuejax.inference.newton.NewtonResult` of numpy arrays with a leading axis n (and a
    starts axis after it)."""
    n = problem.data.shape[0]
    batched = problem.aux_batched
    multi = np.ndim(x0) == 3
    solve = compiled_solver(int(max_iter), float(edm_tol), "data_aux" if batched else "data")
    shell = dataclasses.replace(problem, data=None, aux_flat=None)
    fixed = jnp.zeros(0, dtype=problem.values.dtype)
    step = _batch_step(int(np.shape(x0)[1]) if multi else 1, chunk)
    outs = []
    for a in range(0, n, step):
        r = min(step, n - a)
        size = padded_rows(r, step)
        aux = pad_rows(problem.aux_flat[a:a + r], size) if batched else problem.aux_flat
        out = solve(shell, pad_rows(problem.data[a:a + r], size), aux, fixed, pad_rows(jnp.asarray(x0[a:a + r]), size))
        outs.append(jax.tree_util.tree_map(lambda v: np.asarray(v)[:r], out))  # noqa: B023
    return jax.tree_util.tree_map(lambda *v: np.concatenate(v), *outs)


def continue_batch(problem, res, *, max_iter: int, edm_tol: float, chunk=None):
    """Continue the fits of :func:`solve_batch`'s result ``res`` that reached the iteration limit
    (status 1), from their end points, in up to :data:`~nuejax.inference.starts.CONTINUE_PASSES` launches over only the
    data sets that hold one (padded to the first launch's shapes, so nothing recompiles)."""
    n = problem.data.shape[0]
    multi = np.ndim(res.x) == 3
    step = _batch_step(res.x.shape[1] if multi else 1, chunk)
    for _ in range(CONTINUE_PASSES):
        redo = np.asarray(res.status) == 1
        rows = np.nonzero(redo.reshape(n, -1).any(axis=1))[0]
        if rows.size == 0:
            break
        size = n if n <= step else -(-rows.size // step) * step
        take = np.concatenate([rows, np.repeat(rows[:1], size - rows.size)])
        sub = dataclasses.replace(problem, data=problem.data[take],
                                  aux_flat=problem.aux_flat[take] if problem.aux_batched else problem.aux_flat)
        new = solve_batch(sub, jnp.asarray(res.x[take]), max_iter=max_iter, edm_tol=edm_tol, chunk=chunk)
        part = type(res)(*(np.asarray(a).copy() for a in res))
        for a, b in zip(part, new):
            a[rows] = np.asarray(b)[:rows.size]
        res = merge_continued(res, part, redo)
    return res


def best_of_starts(res, axis: int = 0):
    """The end point of each fit among its starts (``res`` a numpy NewtonResult with a starts axis
    at ``axis``): the lowest −2 ln L that passes the KKT test, else the lowest finite one (then not
    converged), the first start within :data:`~nuejax.inference.starts.START_TIE` of it
    (:func:`~nuejax.inference.starts.choose_start`). Returns the NewtonResult without that axis,
    the chosen indices, the number of starts that reached the chosen minimum (−2 ln L within :data:`~nuejax.inference.starts.MINIMUM_FTOL`,
    every coordinate within :data:`~nuejax.inference.starts.MINIMUM_XTOL` standard deviations) and
    the gap in −2 ln L to the lowest converged end point elsewhere (+inf if none)."""
    fun, conv = np.asarray(res.fun, dtype=float), np.asarray(res.converged, dtype=bool)
    finite = np.isfinite(fun)
    k = choose_start(fun, conv, axis=axis)

    def take(a):  # the chosen start of every fit: the starts axis first, then one index per fit
        a = np.moveaxis(np.asarray(a), axis, 0)
        return a[(k,) + tuple(np.indices(k.shape))]

    best = type(res)(*(take(a) for a in res))
    x = np.asarray(res.x, dtype=float)
    xb = np.expand_dims(best.x, axis)
    sd = np.expand_dims(standard_deviations(best.hess), axis)
    same = conv & finite & same_minimum(fun, x, np.expand_dims(best.fun, axis), xb, sd)
    n_at = np.sum(same, axis=axis)
    gap = np.min(np.where(conv & finite & ~same, fun, np.inf), axis=axis) - best.fun
    return best, k, n_at, gap


def problem_value_grad_hessian(x, problem):
    """:func:`value_grad_hessian` of ``problem`` at ``x``, nothing held per point."""
    return value_grad_hessian(x, (problem, jnp.zeros(0, dtype=problem.values.dtype)))


#: :func:`problem_value_grad_hessian` compiled: one program for the end-point reports here and the
#: MINUIT cost's Hessian where the cost keeps its results in the default placement (the CPU;
#: :class:`~nuejax.inference.cost.NLLCost`), instead of one each (1.4 s on 2 cores, the demo's model).
compiled_value_grad_hessian = jax.jit(problem_value_grad_hessian)


def value_grad_hess(problem, x):
    """-2 ln L, gradient and Hessian at the fitted-parameter vector ``x`` (numpy)."""
    v, g, H = compiled_value_grad_hessian(jnp.asarray(x), problem)
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


#: A fitted parameter is *flat* where −2 ln L changes by less than this over its whole range, to
#: second order (gradient × range and curvature × range², absolute: −2 ln L is in χ² units, so the
#: test does not depend on the parameter's unit).
FLAT_CHI2 = 1e-10


class FlatParameterWarning(UserWarning):
    """A fitted parameter on which −2 ln L is flat at a fit's end point (:func:`flat_parameters`):
    no strict minimum there, and, where the parameter has no effect at all, no best value."""


def flat_parameters(names, g, H, lower, upper) -> list:
    """The ``names`` on which −2 ln L is flat to second order over their whole range
    [``lower``, ``upper``] at a point with gradient ``g`` and Hessian ``H``: |g_k| w_k and
    |H_kk| w_k² both below :data:`FLAT_CHI2` (w_k = upper − lower; an unbounded parameter only where
    both are exactly zero). A rate whose template has no counts in the fitted bins, or a
    resolution term at zero width, is such a parameter everywhere; a signal rising as μ² is one
    at μ = 0 on data without it (docs/inference.md)."""
    g, H = np.asarray(g, dtype=float), np.asarray(H, dtype=float)
    w = np.asarray(upper, dtype=float) - np.asarray(lower, dtype=float)
    d = np.abs(np.diag(H)) if H.ndim == 2 else np.zeros(0)
    out = []
    for n, gk, dk, wk in zip(names, np.abs(g), d, w):
        if not (np.isfinite(gk) and np.isfinite(dk)):
            continue
        flat = (gk == 0 and dk == 0) if not np.isfinite(wk) else (gk * wk <= FLAT_CHI2 and dk * wk * wk <= FLAT_CHI2)
        if flat:
            out.append(n)
    return out


def flat_message(names, where: str) -> str:
    """What :class:`FlatParameterWarning` and an invalid fit's reason say about flat ``names``."""
    listed = ", ".join(names)
    return (f"-2 ln L is flat in {listed} {where} (gradient and curvature zero over the whole range): no strict "
            f"minimum there; a parameter without any effect (a template with no counts in the fitted bins, a "
            f"resolution at zero width) has no best value: fix it (model = model.fix({names[0]!r}))")


def end_point_report(s: FitProblem, x, edm_tol: float, vgh=None) -> tuple:
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
def one_sided_errors(s: FitProblem, x, fval: float, at_bound: dict, H, *, level: float = 1.0) -> dict:
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


def _profile(s: FitProblem, name, others, x, values):
    # ``name`` pinned at each value (Pins) in the fit's own problem: the program of the fit itself
    i, n = s.names.index(name), len(values)
    mask = np.zeros((n, len(s.names)), dtype=bool)
    mask[:, i] = True
    pinned = np.zeros((n, len(s.names)))
    pinned[:, i] = np.asarray(values, dtype=float)
    x0 = np.broadcast_to(np.asarray(x, dtype=float), (n, len(s.names)))
    res = solve_rows(s, x0, Pins(mask, pinned))
    # a profile fit that did not converge is not a profile value (it lies too high)
    return np.where(np.asarray(res.converged), np.asarray(res.fun), np.nan)


def _plain_profile(s: FitProblem, name, values):
    sub = s.with_names((), (name,))
    return np.asarray(objective_at(sub, np.asarray(values, dtype=float)[:, None]))


@jax.jit
def objective_at(problem, values):
    """−2 ln L of a problem without fitted parameters (every varied parameter among its
    ``fixed_names``) at each row of ``values`` (n, k): one compiled program per problem
    structure, reused by every call."""
    return jax.vmap(lambda v: problem.objective(jnp.zeros(0, v.dtype), v))(values)


# -- results ----------------------------------------------------------------------------------------
def make_fit_result(s: FitProblem, x, fval: float, *, valid: bool, reason: str, minimizer: str, nfcn: int, ngrad: int,
                    edm: float, at_bound: dict, H, seconds: float, minos=None, diagnostics=None,
                    one_sided: bool = True, n_starts: int = 1, minima=None, minima_hessians=()) -> FitResult:
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
    return FitResult(names=tuple(s.names), values={n: float(x[i]) for i, n in enumerate(s.names)}, errors=errors,
                     covariance=cov, fval=float(fval), valid=bool(valid), nfcn=int(nfcn), ngrad=int(ngrad),
                     edm=float(edm), params=s.host_params(x), minos=minos, minimizer=minimizer, seconds=float(seconds),
                     at_bound=dict(at_bound), one_sided=one, reason=reason, diagnostics=dict(diagnostics or {}),
                     n_starts=int(n_starts), minima=list(minima or []),
                     minima_hessians=tuple(np.asarray(h, dtype=float) for h in minima_hessians))


def merge_continued(res, new, redo):
    """``res`` with the fields of ``new`` where ``redo`` (the leading axes of both, numpy
    NewtonResults) and the iterations of both passes added there."""
    def pick(a, b):
        a, b = np.asarray(a), np.asarray(b)
        m = np.reshape(redo, redo.shape + (1,) * (a.ndim - redo.ndim))
        return np.where(m, b, a)

    out = type(res)(*(pick(a, b) for a, b in zip(res, new)))
    return out._replace(n_iter=np.where(redo, np.asarray(res.n_iter) + np.asarray(new.n_iter), res.n_iter))


def solve_continued(s: FitProblem, x0, fixed=None, *, max_iter: int = 100, edm_tol: float = EDM_TOL):
    """:func:`solve_rows` of ``s`` from ``x0`` (n, d) (``fixed``: per row, as there), and the rows
    that reach the iteration limit continued from where they stopped, up to
    :data:`~nuejax.inference.starts.CONTINUE_PASSES` more launches of ``max_iter`` over only those
    rows: a NewtonResult of numpy arrays (n, ...)."""
    res = solve_rows(s, x0, fixed, max_iter=max_iter, edm_tol=edm_tol)
    for _ in range(CONTINUE_PASSES):
        redo = np.asarray(res.status) == 1
        if not redo.any():
            break
        part = type(res)(*(np.asarray(a).copy() for a in res))
        sub = None if fixed is None else jax.tree_util.tree_map(lambda a: np.asarray(a)[redo], fixed)  # noqa: B023
        new = solve_rows(s, res.x[redo], sub, max_iter=max_iter, edm_tol=edm_tol)
        for a, b in zip(part, new):
            a[redo] = b
        res = merge_continued(res, part, redo)
    return res


def multistart(s: FitProblem, starts=DEFAULT_STARTS, *, max_iter: int = 100, edm_tol: float = EDM_TOL):
    """Fit ``s`` from every start of its design (:func:`~nuejax.inference.starts.start_design`) in
    one batched launch: ``(best NewtonResult (numpy), number of starts, distinct minima, their
    Hessians)``. One
    start: the solver once, from the problem's start. Starts that reach the iteration limit
    continue from where they stopped, up to :data:`~nuejax.inference.starts.CONTINUE_PASSES` more launches of ``max_iter``
    (a start crawling along a curved valley is often the one that reaches the lowest minimum).
    Where ``s`` fits only some of its model's free parameters, the fit runs the program of all of
    them (:meth:`~nuejax.inference.problem.FitProblem.full`), the others pinned at their values:
    the fits and scans of one model's parameters of interest then compile one solver program;
    so does a problem that fits them in another order (a construction's, its parameters of
    interest first), its rows and results permuted to the model's order and back."""
    x0s = start_design(s, starts)
    wide = s.full() if not s.fixed_names else s
    if tuple(wide.names) == tuple(s.names):
        res = solve_continued(s, x0s, max_iter=max_iter, edm_tol=edm_tol)
    else:  # the model's program: the free parameters s does not fit pinned at their values
        idx = np.array([wide.names.index(n) for n in s.names], dtype=int)
        pins = s.held_pins(len(x0s))
        x = np.array(pins.values)
        x[:, idx] = x0s
        res = solve_continued(wide, x, pins, max_iter=max_iter, edm_tol=edm_tol)
        res = res._replace(x=res.x[:, idx], grad=res.grad[:, idx], hess=res.hess[:, idx][:, :, idx],
                           at_lower=res.at_lower[:, idx], at_upper=res.at_upper[:, idx])
    best, _, _, _ = best_of_starts(res)
    minima, index = distinct_minima(s.names, res.x, res.fun, res.converged, res.hess, with_index=True)
    return best, len(x0s), minima, tuple(np.asarray(res.hess)[k] for k in index)


def newton_fit(model, data, init: Mapping | None = None, *, names=None, aux=None, starts=DEFAULT_STARTS,
               warn_delta: float | None = 1.0, max_iter: int = 100, edm_tol: float = EDM_TOL,
               one_sided: bool = True) -> FitResult:
    """Fit ``names`` (default: the free parameters) with the bound-constrained Newton solver
    (:func:`~nuejax.inference.newton.minimize_bounded`) from every start of a multi-start design
    (``starts``: its size, or explicit points; :mod:`~nuejax.inference.starts`), all in one batched
    launch: the lowest end point that passes the KKT test is the fit (``valid``), and the result
    lists every distinct minimum found (``minima``) and how many starts reached the best
    (``n_at_minimum``); a :class:`~nuejax.inference.starts.SecondMinimumWarning` where a second one
    lies within ``warn_delta`` of it.

    Same :class:`FitResult` as :func:`~nuejax.inference.fit`; errors from 2 H⁻¹ on the free
    subspace, one-sided errors (profile Δ(-2 ln L) = 1) for parameters on a bound. ``aux``: the
    auxiliary measurements (default: the model's nominal ones). ``model`` may be a
    :class:`~nuejax.inference.problem.FitProblem` (then ``data``, ``init``, ``names`` and ``aux``
    are its own: pass None).
    """
    t0 = time.perf_counter()
    s = model if isinstance(model, FitProblem) else FitProblem.create(model, data, names=names, init=init, aux=aux)
    res, n_starts, minima, hessians = multistart(s, starts, max_iter=max_iter, edm_tol=edm_tol)
    warn_second_minimum(minima, warn_delta)
    return newton_result(s, res, time.perf_counter() - t0, one_sided=one_sided, n_starts=n_starts, minima=minima,
                         minima_hessians=hessians)


def newton_result(s: FitProblem, res, seconds: float, *, one_sided: bool = True, **kw) -> FitResult:
    """The :class:`FitResult` of one end point ``res`` of the Newton solver (a NewtonResult of one
    fit, numpy) of ``s`` (:func:`make_fit_result`; ``kw``: its ``n_starts``, ``minima``, ...)."""
    status = int(res.status)
    return make_fit_result(s, res.x, float(res.fun), valid=bool(res.converged), reason="" if status == 0 else STATUS[status],
                           minimizer="newton", nfcn=int(res.n_iter) + 1, ngrad=int(res.n_iter) + 1,
                           edm=float(res.edm),
                           at_bound=bound_flags(s.names, np.asarray(res.at_lower), np.asarray(res.at_upper)),
                           H=np.asarray(res.hess), seconds=seconds,
                           diagnostics={"status": status, "min_eig": float(res.min_eig)}, one_sided=one_sided, **kw)


def batch_fit(model, data, init: Mapping | None = None, names=None, *, aux=None, starts=DEFAULT_STARTS,
              max_iter: int = 100, edm_tol: float = EDM_TOL, chunk: int | None = None) -> BatchFitResult:
    """Fit every row of ``data`` (shape (n, n_obs)): one compiled launch (:func:`over_rows`) of the
    bound-constrained Newton solver over rows and the starts of a multi-start design (``starts``,
    :mod:`~nuejax.inference.starts`; each row takes the lowest end point that passes the KKT test)
    (``chunk`` splits it into launches of that many rows; on the CPU the default is
    :data:`CPU_CHUNK`).

    ``init`` sets starting values (scalars, or arrays of shape (n,) for fitted parameters: each
    row's default start) and the values of fixed parameters; ``names`` chooses the fitted
    parameters (default: the free ones); ``aux`` the auxiliary measurements (default: nominal;
    each entry with a leading axis n for one per data set, as toys draw them,
    :meth:`~nuejax.model.protocol.AbstractModel.draw_toy`). ``converged`` is the KKT test of
    :func:`~nuejax.inference.newton.kkt`: it is never true at a point that is not a minimum;
    ``n_at_minimum`` counts the starts that reached each row's minimum and ``second_minimum_gap``
    is the Δ(−2 ln L) to the lowest other minimum found (+inf: none).
    """
    t0 = time.perf_counter()
    s = FitProblem.create(model, data, names=names, init=init, aux=aux, batch=True)
    n = s.data.shape[0]
    x0 = np.asarray(s.batch_starts(n, init))
    design = start_design(s, starts)
    if len(design) == 1:
        res = solve_batch(s, jnp.asarray(x0), max_iter=max_iter, edm_tol=edm_tol, chunk=chunk)
        res = continue_batch(s, res, max_iter=max_iter, edm_tol=edm_tol, chunk=chunk)
        n_at, gap = np.where(res.converged, 1, 0), np.full(n, np.inf)
    else:
        x0s = np.repeat(design[None], n, axis=0)
        x0s[:, 0] = x0  # each row's own default start first
        res_all = solve_batch(s, jnp.asarray(x0s), max_iter=max_iter, edm_tol=edm_tol, chunk=chunk)
        res_all = continue_batch(s, res_all, max_iter=max_iter, edm_tol=edm_tol, chunk=chunk)
        res, _, n_at, gap = best_of_starts(res_all, axis=1)
    names = s.names
    return BatchFitResult(names, {k: res.x[:, i] for i, k in enumerate(names)}, res.fun, res.converged.astype(bool),
                          res.n_iter, res.edm, res.status,
                          {k: res.at_lower[:, i] for i, k in enumerate(names)},
                          {k: res.at_upper[:, i] for i, k in enumerate(names)}, time.perf_counter() - t0,
                          n_starts=len(design), n_at_minimum=np.asarray(n_at), second_minimum_gap=np.asarray(gap))
