r"""Pseudo-experiments (toys) with resampled auxiliary measurements, and the batched kernel that
fits them under a tested hypothesis and under the alternative.

**Toys.** A toy drawn at the parameter point :math:`\theta_{\rm gen}` is a Poisson draw of every
bin, :math:`n_j \sim \mathrm{Pois}(\mu_j(\theta_{\rm gen}))`, *and* a new value of every auxiliary
measurement that constrains a fitted parameter: the constraint centres are data too (Cowan,
Cranmer, Gross, Vitells, EPJC 71 (2011) 1554, Sec. 2; the "unconditional ensemble" of the LHC
Higgs combination, ATL-PHYS-PUB-2011-011, Sec. 3.1). Both come from the model
(:meth:`~nuejax.model.protocol.AbstractModel.draw_toy`: its likelihood stage draws the counts,
each constraint term its measurement, :mod:`nuejax.model.constraints`), and the toy's −2 ln L is
the model's own with the toy's counts and auxiliary measurements as its data. Terms on fixed
parameters are constants of every fit and keep their nominal measurement; half-Gaussian bounds and
penalties have no measurement to redraw and are refused on fitted parameters
(``resample_aux=False`` keeps every measurement nominal, the "conditional ensemble").

**Reproducible.** Toy ``i`` of a run with key ``k`` comes from ``jax.random.fold_in(k, i)``
alone, wherever and in whatever batch it is generated, so a run split over devices, chunks or
processes draws the same toys as one uninterrupted run; :func:`toy` redraws one, given the run's
auxiliary measurements and number of Poisson parts.

**The kernel** (:func:`toy_fits`) takes rows (generating point, tested point, toy index), draws the
toy on the device and fits it twice with the bound-constrained Newton solver
(:func:`~nuejax.inference.newton.minimize_bounded`): with the parameters of interest free inside
their bounds (the global fit) and fixed at the tested values (the conditional fit), the nuisance
parameters profiled in both. All rows are one program (``vmap``-ped on accelerators, one row after
another on the CPU: :func:`~nuejax.inference.fitting.over_rows`).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from .._internal.exported import persistent
from ..runtime import warn_if_autotuning
from .fitting import costly_objective, distinct_rows, hessian_route, objective, over_rows, value_grad_hessian
from .newton import minimize_bounded
from .problem import FitProblem, Pins, flatten_aux, pin_penalty
from .starts import (CONTINUE_PASSES, MINIMUM_XTOL, choose_start, distinct_minima, standard_deviations, start_design,
                     symmetry_starts)

__all__ = ["CPU_PASSES", "KEEP_ON_CPU", "ONE_PASS_ROWS", "PASSES", "TOY_DESIGN", "TOY_FIT_KEYS", "costly_toys", "draw_parts", "passes", "ratio_statistic", "resample_flags", "row_index", "toy",
           "toy_fits", "toy_starts"]

#: Output arrays of :func:`toy_fits` per row.
TOY_FIT_KEYS = ("t", "f_global", "f_cond", "poi_hat", "nuis_hat", "conv_global", "conv_cond")


def resample_flags(model, fitted, *, resample_aux: bool = True) -> tuple:
    """Which constraint terms a toy redraws (one bool per term of ``model.constraint_terms()``):
    those on a parameter in ``fitted`` (module docstring); none with ``resample_aux=False``."""
    if not resample_aux:
        return tuple(False for _ in model.constraint_terms())
    return model.resampled(fitted)


def draw_parts(problem: FitProblem, gen_x) -> int:
    """The static ``parts`` of the Poisson draws for toys at the generating points ``gen_x``
    (rows in the order of ``problem.names``): enough that no part's mean exceeds
    :data:`~nuejax.model.likelihood.POISSON_PART_MAX` (evaluated once, eagerly)."""
    gen_x = np.unique(np.asarray(gen_x, dtype=float), axis=0)
    return problem.model.likelihood.toy_parts(np.asarray(_expected_at(problem, jnp.asarray(gen_x))))


# one jitted function for every call (a lambda jitted per call is traced and compiled per call)
_expected_at = jax.jit(jax.vmap(lambda pr, x: pr.model.expected(pr.params(x)), in_axes=(None, 0)))


def toy(model, params, key, index: int, resample=None, parts: int | None = None):
    """Toy ``index`` of the run with ``key`` at ``params``: ``(counts, aux)``. With the run's
    ``resample`` flags (:func:`resample_flags` of its fitted parameters) and ``parts`` (stored in
    its ``setup.npz``; default: from this point's largest mean) it is the toy that the batched,
    sharded or resumed run drew for this index (``feldman_cousins``: index ``k * n_toys + i`` for
    toy ``i`` of grid point ``k``)."""
    p = {k: jnp.asarray(v) for k, v in model.parameters.values(params).items()}
    if resample is None:
        resample = tuple(False for _ in model.constraint_terms())
    if parts is None:
        parts = model.likelihood.toy_parts(np.asarray(model.expected(p)))
    return model.draw_toy(jax.random.fold_in(key, index), p, resample, parts)


def _toy_data(problem: FitProblem, gen_x, index, key, resample, parts):
    """Toy ``index`` at the generating point ``gen_x`` (all of ``problem.names``): counts and flat aux."""
    counts, aux = problem.model.draw_toy(jax.random.fold_in(key, index), problem.params(gen_x), resample, parts)
    return counts, flatten_aux(aux, problem.aux_shapes)


def _fit_from(fit, x0, costly=None):
    """``fit(x0)`` from one start (d,), or from each of several (S, d) (a multi-start design)."""
    return over_rows(fit, (0,), costly)(x0) if x0.ndim == 2 else fit(x0)


def _asimov_data(problem: FitProblem, gen_x):
    """The Asimov data set at ``gen_x``: expected counts and the constraint terms' Asimov
    measurements (:meth:`~nuejax.model.protocol.AbstractModel.asimov_aux`), flat."""
    p = problem.params(gen_x)
    return problem.model.likelihood.asimov_data(problem.model.expected(p)), flatten_aux(problem.model.asimov_aux(p), problem.aux_shapes)


def _row_data(problem, gen_x, index, key, resample, parts, asimov):
    return _asimov_data(problem, gen_x) if asimov else _toy_data(problem, gen_x, index, key, resample, parts)


def _row(problem, gen_x, x0, pin_values, pin_mask, index, key, *, resample, parts, max_iter, edm_tol, asimov=False):
    """Draw toy ``index`` at ``gen_x`` (``asimov``: take the Asimov data set there) and fit every
    parameter of the problem inside its bounds from ``x0`` (one start, or several: each fitted,
    the toy drawn once), the coordinates where ``pin_mask`` holds at ``pin_values``
    (:class:`~nuejax.inference.problem.Pins`): none for the global fits, the parameters of
    interest at their tested values for the conditional ones. One program serves both (each in
    launches of its own: XLA:CPU can deadlock on one program that runs two batched Newton loops,
    docs/inference.md, "Known issue")."""
    counts, aux = _row_data(problem, gen_x, index, key, resample, parts, asimov)
    pr = dataclasses.replace(problem, data=counts, aux_flat=aux)
    pins = Pins(pin_mask, pin_values)

    vgh = hessian_route(pr)  # the Poisson route where the model declares linear parameters, as the fits to data

    def fit(x):
        r = minimize_bounded(objective, jnp.where(pin_mask, pin_values, x), (pr, pins), pr.lower, pr.upper,
                             max_iter=max_iter, edm_tol=edm_tol, pinned=pin_mask, vgh=vgh)
        return r.fun - pin_penalty(r.x, pins), r.x, r.converged, r.status

    return _fit_from(fit, x0, lambda x: costly_objective(pr, pins, x))


def _costly_row(problem, gen_x, x0, pin_values, pin_mask, index, key, *, resample, parts, asimov):
    """:func:`~nuejax.inference.fitting.costly_objective` of a row of :func:`_row` (its toy's shapes)."""
    counts, aux = jax.eval_shape(lambda: _row_data(problem, gen_x, index, key, resample, parts, asimov))
    return costly_objective(dataclasses.replace(problem, data=counts, aux_flat=aux), Pins(pin_mask, pin_values), x0)


def costly_toys(problem: FitProblem, resample: tuple, parts: int, asimov: bool = False) -> bool:
    """Whether the CPU fits the toys of ``problem`` one after another (:func:`_costly_row`, as
    the kernels of :func:`compiled_toy_fits` decide while tracing), else side by side: the launch
    size of :func:`~nuejax.inference.runner.run_rows` (``cheap``) follows it."""
    d = len(problem.names)
    x = jnp.zeros(d, problem.values.dtype)
    return bool(_costly_row(problem, x, x, x, jnp.zeros(d, bool), jnp.uint32(0), jnp.zeros(2, jnp.uint32),
                            resample=tuple(bool(r) for r in resample), parts=int(parts), asimov=asimov))


#: Passes over a batch (:func:`toy_fits`): (iterations, 1 / fraction of the batch per launch;
#: ``None``: up to ``max_iter``). In a ``vmap``-ped while loop every row runs as long as the slowest,
#: and toy fits of the default model take 6 iterations on average but up to 53 (65 536 toys:
#: median 5, 99 % quantile 18), so all rows run 10 iterations and the rows still running continue
#: in launches of 1/16 of the batch. On one H100: 4.0e4 toy fits/s in one pass, 7.1e4 in two
#: (continued in 1/8), 8.0e4 with a third (20 more iterations, then launches of 1/64), which cost
#: 19 s more compilation and gained nothing on a 10^6-fit belt (docs/benchmarks.md). On one H200,
#: 65536 rows: 9.57e4 fits/s continued in launches of 1/8, 1.05e5 in 1/16 or 1/32 (benchmarks/NOTES.md).
#: The rows still running after ``max_iter`` continue in up to
#: :data:`~nuejax.inference.starts.CONTINUE_PASSES` more such launches (the same compiled kernel):
#: a start crawling along a curved valley between branches.
PASSES = ((10, 1),) + ((None, 16),) * (1 + CONTINUE_PASSES)
#: The passes on the CPU, where rows that cost enough run one after another
#: (:func:`~nuejax.inference.fitting.over_rows`) and each stops when it converges: the first pass
#: needs no cap, so every pass runs the same kernel (its continued launches, of 1/8 of the rows,
#: are a program of their own, compiled only if a fit reaches ``max_iter``). Rows too cheap to run
#: in turn stay ``vmap``-ped and uncapped too (the one-bin counting model of
#: tests/test_discrete_neyman.py: 19.8 s a Table IV row, 20.4 s with the cap). A fit that needed more
#: than 10 iterations is not restarted after 10, so it can end a rounding apart from the
#: accelerators' fit of the same toy; a construction stored with the other passes is not resumed.
CPU_PASSES = ((None, 1),) + ((None, 8),) * (1 + CONTINUE_PASSES)
#: On an accelerator, a run of at most this many toys fits them in the CPU's passes
#: (:data:`CPU_PASSES`, one uncapped pass): its launches are too small to keep the device busy, so
#: the cap on the first pass saves no time there, while its second program costs seconds of
#: compilation per kernel (benchmarks/NOTES.md, "One uncapped pass for small runs").
ONE_PASS_ROWS = 16384


def passes(n_rows: int | None = None) -> tuple:
    """The passes of a run of ``n_rows`` toys (None: a run of any size) on the default backend:
    :data:`CPU_PASSES` on the CPU, and on an accelerator for a run of at most
    :data:`ONE_PASS_ROWS` toys; else :data:`PASSES`."""
    if jax.default_backend() == "cpu" or (n_rows is not None and int(n_rows) <= ONE_PASS_ROWS):
        return CPU_PASSES
    return PASSES


#: What :func:`toy_starts` designs (stored in a construction's configuration: a run stored with
#: another design is not resumed with this one).
TOY_DESIGN = "generating point, its symmetry images, the Asimov fit's minima"


@functools.lru_cache(maxsize=None)
def compiled_toy_fits(max_iter: int, edm_tol: float, parts: int, resample: tuple, asimov: bool = False, mesh=None):
    """The jitted kernel over rows of :func:`_row` (the global fits and, with the parameters of
    interest pinned, the conditional ones), called ``kernel(problem, gen_x, x0, pin_values,
    pin_mask, index, key)``; compiled per problem structure (a second run does not recompile).
    The global and the conditional fits run in separate launches: XLA:CPU can deadlock on one
    program that runs two batched Newton loops (eigh and Cholesky in each; docs/inference.md,
    "Known issue"), and the toy is cheap to draw twice from its key. ``asimov``: fit the Asimov
    data set at each row's generating point instead of a toy (the toys' start designs,
    :func:`toy_starts`). ``mesh``: rows split over its devices, each device running its own rows
    (:func:`_shard_rows`). On accelerators the kernels are kept across processes
    (:func:`_kept`; on a mesh of GPUs, for that mesh)."""
    warn_if_autotuning()  # a GPU without nuejax.gpu_settings(): minutes per program
    opts = dict(resample=resample, parts=parts, max_iter=max_iter, edm_tol=edm_tol, asimov=asimov)
    row = over_rows(functools.partial(_row, **opts), (None, 0, 0, 0, 0, 0, None),
                    functools.partial(_costly_row, resample=resample, parts=parts, asimov=asimov))
    # on accelerators kept across processes (_kept): a warm process skips tracing the kernels
    tag = f"toyfits-{max_iter}-{float(edm_tol)!r}-{parts}-{''.join('01'[r] for r in resample)}-{int(asimov)}"
    if mesh is None:
        return _kept(jax.jit(row), tag)
    if mesh.devices.flat[0].platform == "cpu":
        return _one_device_at_a_time(_kept(jax.jit(row), tag), mesh)
    return _kept(jax.jit(_shard_rows(row, mesh, 5)), f"{tag}-mesh{mesh.devices.size}")


#: Whether the CPU keeps the toy programs across processes too. Off: there a construction's time
#: is its fits, and exporting each new kernel cost more than tracing it saved (a small
#: Feldman-Cousins construction in a fresh process: 32.5 s exported, 28.8 s traced, 21.9 s loaded,
#: 2 cores; benchmarks/NOTES.md).
KEEP_ON_CPU = False


def _kept(jitted, tag: str):
    """``jitted`` kept across processes (:func:`~nuejax._internal.exported.persistent`) on
    accelerators, where tracing the kernels was most of a warm construction; on the CPU only with
    :data:`KEEP_ON_CPU`."""
    return persistent(jitted, tag) if KEEP_ON_CPU or jax.default_backend() != "cpu" else jitted


def _one_device_at_a_time(kernel, mesh):
    """``kernel`` (a jitted row kernel: the problem, per-row arrays, the key) on each device's rows
    in turn, each launch finished before the next, all of them on the mesh's first device:
    XLA:CPU's virtual devices share the cores, so running them together gains nothing (and the
    batched Newton loops of four of them at once stopped with every worker thread idle;
    docs/inference.md, "Several devices"), and one device compiles each program once where four
    compiled it four times. Returns numpy arrays in row order."""
    devices = list(mesh.devices.flat)

    def run(problem, *args):
        rows, key = args[:-1], args[-1]
        outs = []
        for dev in devices:
            part = [jax.device_put(next(sh.data for sh in a.addressable_shards if sh.device == dev), devices[0])
                    for a in rows]
            outs.append(jax.tree_util.tree_map(np.asarray, kernel(problem, *part, key)))
        return jax.tree_util.tree_map(lambda *o: np.concatenate(o), *outs)

    return run


def pass_kernels(max_iter: int, edm_tol: float, parts: int, resample: tuple, asimov: bool = False,
                 mesh=None, scheme=None) -> list:
    """The kernel of :func:`compiled_toy_fits` for each pass of ``scheme`` (default
    :func:`passes`; its iteration cap, at most ``max_iter``), on the devices of ``mesh`` (None:
    one device)."""
    caps = [int(max_iter) if it is None else min(int(it), int(max_iter)) for it, _ in (scheme or passes())]
    return [compiled_toy_fits(cap, float(edm_tol), int(parts), tuple(bool(r) for r in resample), asimov, mesh)
            for cap in caps]


def rows_mesh(a):
    """The mesh over which the rows of ``a`` are split (:func:`~nuejax.inference.runner.run_rows`
    shards them), or None (one device, or not sharded)."""
    sharding = getattr(a, "sharding", None)
    if isinstance(sharding, jax.sharding.NamedSharding) and sharding.mesh.devices.size > 1:
        return sharding.mesh
    return None


def _shard_rows(fun, mesh, n_row_args: int):
    """``fun`` (a vmapped row kernel: the problem, ``n_row_args`` per-row arrays, the key) run on
    each device's own rows (``shard_map``): each device's batched Newton loop stops when *its* rows
    are done, with no collective inside. Under ``jit`` of a sharded batch (GSPMD) the batched
    loop's condition is a reduction over every row of every device, an all-reduce per iteration:
    the devices run in lock step until the slowest row anywhere is done. Used on accelerators; on
    XLA:CPU's virtual devices four such programs at once hung all the same, so there
    :func:`_one_device_at_a_time` (docs/inference.md, "Several devices")."""
    import inspect

    from jax.sharding import PartitionSpec

    shard_map = getattr(jax, "shard_map", None)
    if shard_map is None:  # JAX < 0.6
        from jax.experimental.shard_map import shard_map
    params = inspect.signature(shard_map).parameters
    # the loop's carry mixes per-device and replicated values: skip the replication check
    no_check = {"check_vma": False} if "check_vma" in params else {"check_rep": False}
    rows = PartitionSpec("rows")
    return shard_map(fun, mesh=mesh, in_specs=(PartitionSpec(),) + (rows,) * n_row_args + (PartitionSpec(),),
                     out_specs=rows, **no_check)


def _in_passes(kernels, problem, rows: tuple, x0, key, scheme):
    """Run ``kernels[0]`` on every row, then each next kernel from where the last stopped on the
    rows that hit its iteration limit (status 1), in launches of the ``scheme``'s fraction of the
    batch (:func:`passes`; one compiled shape per pass, however many rows continue). ``rows`` are
    the per-row inputs besides ``x0``: the generating point first, then the others. Each row's
    result depends on that row alone, whatever the batch."""
    per_row = rows
    fun, x, conv, status = kernels[0](problem, per_row[0], x0, *per_row[1:], key)
    sharding = getattr(per_row[0], "sharding", None)  # the rows' placement (run_rows shards them)
    named = isinstance(sharding, jax.sharding.NamedSharding)
    n_dev = len(sharding.device_set) if named else 1
    n_rows = int(np.shape(x0)[0])
    fun, x, conv, status = (np.asarray(a).copy() for a in (fun, x, conv, status))
    host = [np.asarray(a) for a in per_row]
    for kernel, (_, div) in zip(kernels[1:], scheme[1:]):
        # a row continues while any of its starts is still running (a converged start stops at once)
        redo = np.nonzero(np.any(status.reshape(len(status), -1) == 1, axis=1))[0]
        if redo.size == 0:
            break
        size = -(-max(n_rows // div, 1) // n_dev) * n_dev
        for a in range(0, redo.size, size):
            part = redo[a:a + size]
            take = np.concatenate([part, np.repeat(part[:1], size - part.size)])

            def pick(v):
                v = jnp.asarray(v[take])
                return jax.device_put(v, sharding) if named else v

            out = kernel(problem, pick(host[0]), pick(x), *(pick(v) for v in host[1:]), key)
            n = part.size
            fun[part], x[part], conv[part], status[part] = (np.asarray(o)[:n] for o in out)
    return fun, x, conv


def toy_starts(problem: FitProblem, gen_x, k: int, starts, *, max_iter: int = 100, edm_tol: float = 1e-8) -> tuple:
    """The multi-start designs of the toys' fits at each distinct generating point u of ``gen_x``
    (rows in the order of ``problem.names``): the global fits' (U, S, d) and the conditional fits'
    (U, S_c, d − k) over the nuisances (the first ``k`` parameters fixed), each padded by
    repeating u, and each row's index into them (n,). ``(None, None, None)`` where every design is
    u alone (the toys then start at their generating point).

    With an integer ``starts`` > 1 a toy's design holds u, its images under the model's symmetries
    (:func:`~nuejax.inference.starts.symmetry_starts`) and the distinct minima that a fit of the
    Asimov data set at u from the full design (:func:`~nuejax.inference.starts.start_design`,
    ``starts`` points) finds away from them: the branches that data expected at u have, found once
    per generating point instead of once per toy (a toy's minima lie near them; a model with one
    minimum and no symmetry fits its toys from one start). Explicit start points are every toy's
    design as given. At most ``starts`` rows per design."""
    if len(start_design(problem, starts)) == 1:
        return None, None, None
    gen_x = np.asarray(gen_x, dtype=float)
    unique, idx = np.unique(gen_x, axis=0, return_inverse=True)
    idx = np.asarray(idx, dtype=np.int32).ravel()
    cond = problem.with_names(problem.names[k:], problem.names[:k])
    at = [dict(zip(problem.names, u)) for u in unique]
    glob = [start_design(problem.with_values(v), starts, x0=u) for v, u in zip(at, unique)]
    cond_d = [start_design(cond.with_values(v), starts, x0=u[k:]) if cond.names else u[None, k:]
              for v, u in zip(at, unique)]
    if not isinstance(starts, (int, np.integer)):
        return _padded(glob), _padded(cond_d), idx
    n = int(starts)
    shell = dataclasses.replace(problem, data=None, aux_flat=None)
    glob = _with_asimov_minima(shell, unique, 0, _padded(glob), [symmetry_starts(problem.with_values(v), u, n)
                                                                  for v, u in zip(at, unique)], n, max_iter, edm_tol)
    if cond.names:
        cond_d = _with_asimov_minima(shell, unique, k, _padded(cond_d),
                                     [symmetry_starts(cond.with_values(v), u[k:], n) for v, u in zip(at, unique)],
                                     n, max_iter, edm_tol)
    design_g, design_c = _padded(glob), _padded(cond_d)
    if design_g.shape[1] == 1 and design_c.shape[1] == 1:
        return None, None, None
    return design_g, design_c, idx


def row_index(unique, gen_x) -> np.ndarray:
    """Each row of ``gen_x`` (n, d) as an index into the distinct generating points ``unique``
    (U, d) (np.unique's order); every row must be one of them."""
    unique, gen_x = np.asarray(unique, dtype=float), np.asarray(gen_x, dtype=float)
    both, inv = np.unique(np.concatenate([unique, gen_x]), axis=0, return_inverse=True)
    inv = np.asarray(inv).ravel()
    where = np.full(len(both), -1, dtype=np.int64)
    where[inv[:len(unique)]] = np.arange(len(unique))
    idx = where[inv[len(unique):]]
    if np.any(idx < 0):
        raise ValueError(f"{int(np.sum(idx < 0))} generating points have no start design")
    return idx.astype(np.int32)


def _poi_mask(shape: tuple, k: int) -> np.ndarray:
    """(n, d) bool: the first ``k`` coordinates of every row (the parameters of interest) pinned."""
    mask = np.zeros(shape, dtype=bool)
    mask[:, :k] = True
    return mask


def _padded(designs):
    """(U, S, d) from U designs (S_u, d): the shorter ones padded by repeating their first row."""
    m = max(len(d) for d in designs)
    return np.stack([np.concatenate([d, np.repeat(d[:1], m - len(d), axis=0)]) for d in designs])


def _with_asimov_minima(shell, unique, k, full, base, limit, max_iter, edm_tol) -> list:
    """Each design of ``base`` (list of (S_u, d − k)) with the distinct minima that fits of the
    Asimov data at ``unique`` (U, d) from the starts ``full`` (U, S, d − k) reached, the first
    ``k`` parameters fixed at the generating point's, lowest first, where not within
    :data:`~nuejax.inference.starts.MINIMUM_XTOL` standard deviations of a row already there; at
    most ``limit`` rows each. Where every design of ``full`` is the generating point alone and the
    Asimov data set's minimum is at its generating point, no fit runs (:func:`_generating_point_only`,
    :func:`_asimov_minimum_at_truth`)."""
    if _generating_point_only(full, unique, k) and _asimov_minimum_at_truth(shell.model):
        return [np.asarray(b) for b in base]
    scheme = passes(len(unique))
    kern = pass_kernels(max_iter, edm_tol, 1, (), asimov=True, scheme=scheme)
    u = jnp.asarray(unique)
    index = jnp.zeros(len(unique), dtype=jnp.uint32)
    key = jnp.zeros(2, dtype=jnp.uint32)
    rows = (u, u, jnp.asarray(_poi_mask(u.shape, k)), index)
    full = np.asarray(full)
    wide = np.concatenate([np.broadcast_to(np.asarray(unique)[:, None, :k], full.shape[:2] + (k,)), full], axis=-1)
    fun, x, conv = _in_passes(kern, shell, rows, jnp.asarray(wide), key, scheme)
    x = x[..., k:]
    hess = np.asarray(_asimov_hessians(int(k))(shell, u, jnp.asarray(x)))
    names = shell.names[k:]
    out = []
    for i, rows_i in enumerate(base):
        rows_i = list(rows_i)
        for m in distinct_minima(names, x[i], fun[i], conv[i], hess[i]):
            if len(rows_i) >= limit:
                break
            xm = np.array([m["values"][n] for n in names])
            sd = standard_deviations(hess[i][int(np.argmin(np.sum(np.abs(x[i] - xm), axis=1)))])
            if not any(np.all(np.abs(xm - r) <= MINIMUM_XTOL * sd) for r in rows_i):
                rows_i.append(xm)
        out.append(np.asarray(rows_i))
    return out


def _generating_point_only(full, unique, k: int) -> bool:
    """Whether each design of ``full`` (U, S, d − k) is its generating point alone (S = 1, the row
    equal to u's last d − k values). Where the Asimov data set at u also has its minimum at u
    (:func:`_asimov_minimum_at_truth`: the gradient vanishes there), a fit from u ends at u, which
    the designs hold first (:func:`~nuejax.inference.starts.symmetry_starts`): the fits would add
    nothing, and their two programs (the fits, the Hessians) cost seconds of compilation (the
    conditional designs of `nuejax xenonnt`'s μ_ν constructions)."""
    full, unique = np.asarray(full), np.asarray(unique, dtype=float)
    return full.shape[1] == 1 and np.array_equal(full[:, 0], unique[:, k:])


def _asimov_minimum_at_truth(model) -> bool:
    """Whether −2 ln L of ``model``'s Asimov data set at any parameters u is smallest at u: its
    likelihood and every constraint term say so (``asimov_at_truth``: the binned Poisson
    likelihood, Gaussian and log-normal measurements). Not for an unbinned likelihood (the Asimov
    events sit at bin centres), a one-sided bound (its Asimov measurement is the threshold, so
    above it the pull is not zero) or a penalty, nor for anything that does not say."""
    likelihood, terms = getattr(model, "likelihood", None), getattr(model, "constraint_terms", None)
    if likelihood is None or terms is None:
        return False
    return bool(getattr(likelihood, "asimov_at_truth", False)) and all(
        bool(getattr(t, "asimov_at_truth", False)) for t in terms())


@functools.lru_cache(maxsize=None)
def _asimov_hessians(k: int):
    """``hessians(shell, gen_x, x)``: the Hessians of −2 ln L of the Asimov data set at each
    generating point (U, d) at the end points ``x`` (U, S, d − k), the first ``k`` parameters fixed
    at the generating point's; kept across processes (:mod:`nuejax._internal.exported`)."""
    return _kept(jax.jit(functools.partial(_asimov_hessians_of, k=k)), f"asimov-hessians-{k}")


def _asimov_hessians_of(shell, gen_x, x, k):
    def one(g, xs):
        counts, aux = _asimov_data(shell, g)
        pr = dataclasses.replace(shell, data=counts, aux_flat=aux, names=shell.names[k:],
                                 fixed_names=shell.names[:k], lower=shell.lower[k:], upper=shell.upper[k:])
        return jax.vmap(lambda xi: value_grad_hessian(xi, (pr, g[:k]))[2])(xs)

    return jax.vmap(one)(gen_x, x)


def _from_design(kernels, shell, rows: tuple, x0, design, design_index, key, scheme):
    """Run the passes (:func:`_in_passes`) from ``x0`` (n, d), or from every start of each row's
    design ((U, S, d) and ``design_index`` (n,)) and keep each row's best end point
    (:func:`_best_start`). Each (row, start) pair is a row of its own here: the passes then
    continue only the starts still running, not every start of a row where one is (with S starts
    the continued work would grow as S², not S)."""
    if design is None:
        return _in_passes(kernels, shell, rows, x0, key, scheme)[:3]
    n, n_s = int(np.shape(x0)[0]), int(np.shape(design)[1])
    x0s = jnp.take(jnp.asarray(design), jnp.asarray(design_index), axis=0).reshape((n * n_s,) + np.shape(design)[2:])
    fun, x, conv = _in_passes(kernels, shell, tuple(_repeat_rows(r, n_s) for r in rows),
                              _repeat_rows(x0s, 1, like=rows[0]), key, scheme)
    return _best_start(fun.reshape(n, n_s), x.reshape((n, n_s) + x.shape[1:]), conv.reshape(n, n_s))


def _repeat_rows(a, n_s: int, like=None):
    """Each row of ``a`` ``n_s`` times, placed as ``like`` (default ``a``) is: over the devices of
    its NamedSharding (:func:`~nuejax.inference.runner.run_rows` shards rows), else as given."""
    sharding = getattr(a if like is None else like, "sharding", None)
    out = np.repeat(np.asarray(a), n_s, axis=0) if n_s > 1 else np.asarray(a)
    return jax.device_put(out, sharding) if isinstance(sharding, jax.sharding.NamedSharding) else jnp.asarray(out)


def _best_start(fun, x, conv):
    """Each row's lowest end point that passes the KKT test among its starts (axis 1), else its
    lowest finite one (:func:`~nuejax.inference.starts.choose_start`): (fun, x, converged) without
    the starts axis."""
    fun, x, conv = np.asarray(fun), np.asarray(x), np.asarray(conv, dtype=bool)
    if fun.ndim == 1:
        return fun, x, conv
    k = choose_start(fun, conv, axis=1)
    rows = np.arange(len(k))
    return fun[rows, k], x[rows, k], conv[rows, k]


def _distinct_toys(gen_x, index):
    """``(take, back)``: rows that draw each distinct toy (generating point and index) once, in the
    order of their first rows, padded to the batch's length with the first of them (a row equal
    to the first is not fitted again: :func:`~nuejax.inference.fitting.over_rows`; the batch keeps
    its shape, so its compiled program), and each row's position among them; None where every row
    is a toy of its own."""
    index = np.asarray(index)
    if np.unique(index).size == index.size:  # the common case, checked on the indices alone
        return None
    keys = np.concatenate([np.asarray(gen_x, dtype=float), index.astype(float)[:, None]], axis=1)
    first, back = distinct_rows(keys)
    if first.size == len(keys):
        return None
    return np.concatenate([first, np.full(len(keys) - first.size, first[0])]), back


def ratio_statistic(f_cond, f_global) -> np.ndarray:
    """t = −2 ln λ of each toy from its conditional and global minima: their difference, ≥ 0 (the
    conditional minimum is a feasible point of the global fit, so the global minimum is the lower
    of the two)."""
    f_cond = np.asarray(f_cond)
    return np.maximum(f_cond - np.minimum(np.asarray(f_global), f_cond), 0.0)


def toy_fits(problem: FitProblem, key, gen_x, test_poi, index, *, k: int, max_iter: int = 100,
             edm_tol: float = 1e-8, one_sided: bool = False, parts: int = 1, resample: tuple = (),
             designs=(None, None), design_index=None, scheme=None) -> dict:
    """Fit a batch of toys (module docstring) of ``problem`` (fitted names: the ``k`` parameters of
    interest first, then the nuisances; its data and aux are not read): rows of ``gen_x``
    (n, len(names)) generating points, ``test_poi`` (n, k) the tested values, ``index`` (n,) toy
    indices. Returns arrays of :data:`TOY_FIT_KEYS`: ``t`` = −2 ln λ (conditional minus global
    minimum, ≥ 0: the conditional minimum is a feasible point of the global fit, so the global
    minimum is the lower of the two; with ``one_sided``, 0 where any fitted POI exceeds its tested
    value: q̃ of Cowan et al. 2011, Eq. 16), both minima, the global fit's POI values, the
    conditional fit's nuisances and the two fits' KKT flags. Rows of one toy (the same generating
    point and index: a CLs run's background-only toy at each tested value) share its global fit,
    fitted once per call (one device). Fits start at the generating point, or
    from every start of the multi-start designs ``designs`` = (global (U, S, d), conditional
    (U, S_c, d − k)) with ``design_index`` (n,) each row's design (:func:`toy_starts`; each fit
    keeps its lowest end point that passes the KKT test), and run in the passes ``scheme`` (default
    :func:`passes` of a run of any size; a fit still running after a pass continues from where it
    stopped in a launch of only such rows; at most 10 + (1 + CONTINUE_PASSES) ``max_iter``
    iterations in all with :data:`PASSES`, (2 + CONTINUE_PASSES) ``max_iter`` with
    :data:`CPU_PASSES`). ``parts``: see :func:`draw_parts`;
    ``resample``: :func:`resample_flags`. No checks: callers check once, eagerly."""
    scheme = tuple(tuple(p) for p in scheme) if scheme is not None else passes()
    kernels = pass_kernels(max_iter, edm_tol, parts, resample, mesh=rows_mesh(gen_x), scheme=scheme)
    shell = dataclasses.replace(problem, data=None, aux_flat=None)
    design_g, design_c = designs
    # the conditional fits are the global ones with the parameters of interest pinned (Pins)
    shape = np.shape(gen_x)
    placed = lambda a: _repeat_rows(a, 1, like=gen_x)  # noqa: E731 - on gen_x's devices
    at_test = np.concatenate([np.asarray(test_poi, dtype=float).reshape(shape[0], k), np.asarray(gen_x)[:, k:]], axis=1)
    # the global fit of a toy depends on its generating point and index alone: rows that share
    # both (a CLs run's background-only toy, tested at every value) fit it once (one device: the
    # rows of a mesh stay as they are split)
    distinct = _distinct_toys(gen_x, index) if rows_mesh(gen_x) is None else None
    if distinct is None:
        f_glob, x_glob, conv_g = _from_design(kernels, shell, (gen_x, gen_x, placed(_poi_mask(shape, 0)), index), gen_x,
                                              design_g, design_index, key, scheme)
    else:
        take, back = distinct
        gx, ix = placed(np.asarray(gen_x)[take]), placed(np.asarray(index)[take])
        di = None if design_index is None else np.asarray(design_index)[take]
        f_glob, x_glob, conv_g = (np.asarray(a)[back] for a in _from_design(
            kernels, shell, (gx, gx, placed(_poi_mask(shape, 0)), ix), gx, design_g, di, key, scheme))
    if design_c is not None:
        design_c = np.concatenate([np.zeros(np.shape(design_c)[:2] + (k,)), np.asarray(design_c)], axis=-1)
    f_cond, x_cond, conv_c = _from_design(kernels, shell, (gen_x, placed(at_test), placed(_poi_mask(shape, k)), index),
                                          placed(at_test), design_c, design_index, key, scheme)
    nuis_hat = np.asarray(x_cond)[:, k:]
    t = ratio_statistic(f_cond, f_glob)
    poi_hat = np.asarray(x_glob)[:, :k]
    if one_sided:
        t = np.where(np.all(poi_hat <= np.asarray(test_poi), axis=1), t, 0.0)
    return dict(t=t, f_global=f_glob, f_cond=f_cond, poi_hat=poi_hat, nuis_hat=nuis_hat, conv_global=conv_g,
                conv_cond=conv_c)
