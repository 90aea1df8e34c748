r"""The machinery shared by the Neyman constructions (:mod:`~nuejax.inference.feldman_cousins`,
:mod:`~nuejax.inference.cls`, :mod:`~nuejax.inference.coverage`): the checked problem (parameters
of interest and nuisances), the fits to the observed data at every tested point, and the run of
the toy kernel (:func:`~nuejax.inference.toys.toy_fits`) over rows, chunked, sharded over the
local devices and resumable (:mod:`~nuejax.inference.runner`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import InputError, ParameterError
from .fitting import newton_fit, objective_at
from .problem import FitProblem
from .runner import Progress, RunStore, default_chunk, fingerprint, parse_shard, run_rows
from .scan import grid_neighbours, grid_values, profile_points
from .starts import DEFAULT_STARTS, symmetry_images
from .toys import costly_toys, draw_parts, resample_flags, row_index, toy_fits, toy_starts

__all__ = ["ACCEPT_TOL", "Construction", "construction", "observed_fits", "run_construction", "base_config",
           "grid_points", "check_toys", "critical_value", "key_data", "read_run", "branch_images",
           "on_generating_branch", "branch_selection", "with_branch_images", "poi_bounds"]


def key_data(key) -> np.ndarray:
    """A seed (int) or a ``jax.random`` key as its uint32 data (stored in the manifest)."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        key = jax.random.PRNGKey(int(key))
    try:
        if jnp.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key):
            key = jax.random.key_data(key)
    except TypeError:
        pass
    a = np.asarray(key)
    if a.dtype != np.uint32 or a.shape != (2,):
        raise InputError(f"key must be an int seed or a jax.random.PRNGKey, got {key!r}")
    return a


#: Tolerance of the acceptance test t_obs <= t_c: the fits that make t are exact to their EDM
#: tolerance (1e-8), so a tie between the observed and a toy's statistic (the same counts, a
#: discrete problem) must not be broken by rounding.
ACCEPT_TOL = 1e-6


def critical_value(t: np.ndarray, cl: float) -> tuple[float, float, bool]:
    """The Neyman construction's critical value from the toys' statistic ``t``: the smallest
    value t_c whose fraction of toys with t <= t_c reaches ``cl`` (the order statistic of rank
    ceil(cl·n); with ties, every toy equal to t_c counts, so the acceptance region t <= t_c holds
    at least ``cl`` of the toys also on discrete data, where an interpolated quantile would hold
    less), its statistical uncertainty (half the distance between the order statistics at
    n·cl ± sqrt(n·cl(1−cl)), the binomial 68 % band of the rank), and whether t_c is an atom of
    the toys' distribution (a discrete problem: more than 1 % of the toys equal t_c, so t_c jumps
    between grid points; ties elsewhere, such as t = 0 of every toy whose fit sits on a bound,
    leave t_c continuous)."""
    n = t.size
    if n == 0:
        return float("nan"), float("nan"), False
    s = np.sort(t)
    q = float(s[int(min(n - 1, max(0, math.ceil(cl * n - 1e-9) - 1)))])
    d = np.sqrt(n * cl * (1 - cl))
    lo = s[int(np.clip(np.floor(n * cl - d), 0, n - 1))]
    hi = s[int(np.clip(np.ceil(n * cl + d), 0, n - 1))]
    ties = int(np.sum(np.abs(s - q) <= 1e-9 * max(1.0, abs(q))))
    return q, float(0.5 * (hi - lo)), bool(ties > 0.01 * n)


def branch_images(pr: "Construction", gen_x) -> np.ndarray:
    """The images of each generating point's nuisances under the (approximate) symmetries the
    model declares (``model.symmetries()``, singly and combined) that move nuisances only and stay
    inside their bounds: where a toy's conditional fit may end on another branch. ``gen_x``
    (n, k + n_nuis), the parameters of interest first; returns (n, m, n_nuis), NaN rows where a
    point has fewer than m images (m = 0: no such symmetry)."""
    gen_x = np.atleast_2d(np.asarray(gen_x, dtype=float))
    nuis, k = tuple(pr.nuis), len(pr.poi)
    lo, hi = np.asarray(pr.full.lower, dtype=float)[k:], np.asarray(pr.full.upper, dtype=float)[k:]
    syms = pr.full.model.symmetries()
    per_point = []
    fixed = pr.full.host_params()  # once: it reads the values from the device
    for x in gen_x:
        values = {**fixed, **dict(zip(pr.full.names, map(float, x)))}
        # a symmetry that moves a parameter of interest or a fixed one has no image at fixed θ
        # (the declared symmetries act on disjoint names, so a combination moves nuisances only
        # exactly when each of its members does); a name returned unchanged (an imaginary part
        # fixed at 0) does not count as moved
        own = []
        for s in syms:
            moved = {n for n, v in s(values).items() if v != values[n]}
            if moved and moved <= set(nuis):
                own.append(s)
        imgs = []
        for img in symmetry_images(own, values, nuis, lo, hi):
            if not any(np.array_equal(img, q) for q in imgs):  # combinations can give one image twice
                imgs.append(img)
        per_point.append(imgs)
    m = max((len(i) for i in per_point), default=0)
    out = np.full((len(gen_x), m, len(nuis)), np.nan)
    for j, imgs in enumerate(per_point):
        if imgs:
            out[j, :len(imgs)] = imgs
    return out


def with_branch_images(pr: "Construction", st: dict) -> dict:
    """The set-up ``st`` with each point's branch images (:func:`branch_images`; stored with it,
    so that a resumed or merged run conditions on the same ones)."""
    return {**st, "branch_images": branch_images(pr, st["gen_x"])}


def on_generating_branch(gen_nuis, images, nuis_hat) -> np.ndarray:
    """Whether each toy's conditional fit ``nuis_hat`` (n, t, n_nuis) lies on the branch of its
    generating nuisances ``gen_nuis`` (n, n_nuis): nearer to them than to each of their images
    (``images`` (n, m, n_nuis) from :func:`branch_images`), distances taken in the coordinates
    that image moves (the bisecting hyperplane). Returns (n, t) booleans."""
    gen_nuis, nuis_hat = np.asarray(gen_nuis, dtype=float), np.asarray(nuis_hat, dtype=float)
    own = np.ones(nuis_hat.shape[:2], dtype=bool)
    for j in range(np.shape(images)[1]):
        img = np.asarray(images)[:, j]
        has = np.all(np.isfinite(img), axis=1)
        img = np.where(has[:, None], img, gen_nuis)  # a point without this image: moves nothing
        moved = (np.abs(img - gen_nuis) > 0)[:, None, :]
        d_gen = np.sum(np.where(moved, nuis_hat - gen_nuis[:, None], 0.0) ** 2, axis=-1)
        d_img = np.sum(np.where(moved, nuis_hat - img[:, None], 0.0) ** 2, axis=-1)
        own &= ~has[:, None] | (d_gen <= d_img)
    return own


def branch_selection(ok, gen_nuis, images, nuis_hat) -> tuple[np.ndarray, np.ndarray]:
    """The toys a critical value uses when it is conditioned on the branch (module docstring of
    :mod:`~nuejax.inference.feldman_cousins`): the valid ones (``ok``, (n, t)) whose conditional
    fit stays on the branch of its generating point; all valid toys of a point without images, or
    where none stays (then the second output, per point, is True: the caller warns)."""
    sel = np.asarray(ok, dtype=bool) & on_generating_branch(gen_nuis, images, nuis_hat)
    none = ~np.any(sel, axis=1) & np.any(ok, axis=1)
    return np.where(none[:, None], ok, sel), none


@dataclass(frozen=True)
class Construction:
    """Checked inputs shared by the constructions: ``cond`` the fit problem of the conditional fits
    (fitted: the nuisances; per point: the parameters of interest), ``full`` the same with every
    parameter of interest and nuisance fitted (the global fits and the toys), ``resample`` which
    constraint terms a toy redraws, ``starts`` the multi-start design of every fit
    (:mod:`~nuejax.inference.starts`)."""

    cond: FitProblem
    full: FitProblem
    poi: tuple
    nuis: tuple
    resample: tuple
    starts: object = DEFAULT_STARTS

    @property
    def lower(self) -> tuple:
        return self.full.lower

    @property
    def upper(self) -> tuple:
        return self.full.upper


def construction(model, data, poi, profile, init, *, aux=None, resample_aux: bool = True,
                 starts=DEFAULT_STARTS) -> Construction:
    """Check the inputs of a construction once (one or two parameters of interest ``poi``, the
    nuisances ``profile``, default every other free parameter)."""
    poi = (poi,) if isinstance(poi, str) else tuple(poi)
    if not 1 <= len(poi) <= 2 or len(set(poi)) != len(poi):
        raise ParameterError(f"parameters of interest: one or two different names, got {poi!r}")
    free = [n for n in model.parameters.free_names if n not in poi] if profile is None else list(profile)
    if free:
        s = FitProblem.create(model, data, names=profile, fixed_names=poi, init=init, aux=aux)
    else:  # no nuisance parameter: the conditional "fit" is one evaluation
        s = FitProblem.create(model, data, names=poi, init=init, aux=aux).with_names((), poi)
    full = s.with_names(poi + s.names)
    return Construction(s, full, poi, tuple(s.names), resample_flags(s.model, full.names, resample_aux=resample_aux),
                        starts)


def observed_fits(pr: Construction, points: np.ndarray, *, max_iter: int, one_sided: bool, grid_shape=None) -> dict:
    """Fits of the observed data: the global fit (from the multi-start design ``pr.starts``) and
    the conditional fit at every point, on the lower envelope of the branches
    (:func:`~nuejax.inference.scan.profile_points`; ``grid_shape``: the grid the points fill,
    x-major, for their neighbours; default: a 1-D grid)."""
    s = pr.cond
    g = newton_fit(pr.full, None, one_sided=False, max_iter=max_iter, starts=pr.starts, warn_delta=None)
    if pr.nuis:
        shape = (len(points),) if grid_shape is None else tuple(grid_shape)
        res, _, _ = profile_points(s, np.asarray(points), g, grid_neighbours(shape), n_iter=max_iter)
        f_cond, nuis_hat, conv = np.asarray(res.fun), np.asarray(res.x), np.asarray(res.converged)
    else:
        f_cond = np.asarray(objective_at(s, jnp.asarray(points)))
        nuis_hat, conv = np.zeros((len(points), 0)), np.isfinite(f_cond)
    poi_hat = np.array([g.values[n] for n in pr.poi])
    if not g.valid or not np.all(conv):
        import warnings

        bad = ", ".join(f"{points[i].tolist()}" for i in np.nonzero(~np.asarray(conv, dtype=bool))[0][:5])
        warnings.warn("fits to the observed data did not all pass the KKT test"
                      + ("" if g.valid else f" (global fit: {g.reason})") + (f" (conditional fits at {bad})" if bad else "")
                      + ": their statistic and generating nuisances are not trustworthy", RuntimeWarning, stacklevel=4)
    f_min = min(float(g.fval), float(np.min(f_cond)))
    t = np.maximum(f_cond - f_min, 0.0)
    two_sided = {}
    if one_sided:
        # kept: a one-sided construction that also assembles the two-sided one from its toys
        # (cls_upper_limit's feldman_cousins) reads it
        two_sided = {"t_obs_two_sided": t}
        t = np.where(np.all(poi_hat[None, :] <= points, axis=1), t, 0.0)
    return {"points": np.asarray(points, dtype=float), "gen_x": np.concatenate([points, nuis_hat], axis=1),
            "t_obs": t, "f_cond_obs": f_cond, "conv_obs": conv.astype(bool), "poi_hat_obs": poi_hat,
            "f_global_obs": np.asarray(float(g.fval)), "global_valid": np.asarray(bool(g.valid)), **two_sided}


def _jsonable_starts(starts):
    return np.asarray(starts, dtype=float).tolist() if not isinstance(starts, (int, np.integer)) else int(starts)


def run_construction(pr: Construction, kind: str, extra: dict, compute_setup, make_rows, assemble, *, n_rows, n_toys,
                     key, resample_aux, chunk, out, resume, shard, progress, max_iter, one_sided, label, t0):
    """Set up (or load) the run's configuration (:func:`base_config` of ``kind`` with ``extra``)
    and the fits to the observed data (``compute_setup``), build the rows (``make_rows``), run
    them through the toy kernel (chunked, sharded, resumable) and return
    ``assemble(config, setup, outputs, seconds since t0)``, or None where this process's shard is
    done and others' are missing."""
    config = base_config(kind, pr, key, n_toys, resample_aux, max_iter, {**extra, "starts": _jsonable_starts(pr.starts)},
                         n_rows=n_rows)
    n_fit = len(pr.poi) + len(pr.nuis)
    shard = (0, 1) if shard is None else parse_shard(shard)
    if shard[1] > 1 and out is None:
        raise InputError(f"shard {shard[0]}/{shard[1]}: a slice of a run needs an output folder (out=...) to store "
                         "its chunks for the merge")
    config = dict(config)
    if n_rows >= 2**32:
        raise InputError(f"{n_rows} toys in one run: toy indices are 32-bit; split the grid into runs of < 2^32 toys")
    config["chunk"] = int(chunk) if chunk is not None else default_chunk()
    config.update(n_rows=int(n_rows), n_chunks=-(-int(n_rows) // config["chunk"]))
    # processes of one job array share a folder: a slice may find the others' manifest there
    store = RunStore(out, config, resume=resume or shard[1] > 1)

    def setup_with_parts():
        st = compute_setup()
        st["parts"] = np.asarray(draw_parts(pr.full, st["gen_x"]))
        # every toy's fits start from the design at its generating point (toy_starts), stored with
        # the set-up so that a resumed run or another slice of a job array starts the same fits
        design_g, design_c, _ = toy_starts(pr.full, st["gen_x"], len(pr.poi), pr.starts, max_iter=max_iter)
        if design_g is not None:
            st.update(design_gen=np.unique(st["gen_x"], axis=0), design_g=design_g, design_c=design_c)
        return st

    st = store.setup(setup_with_parts)
    rows = make_rows(st)
    n = len(rows["index"])
    bar = None
    if progress:
        bar = progress if isinstance(progress, Progress) else Progress(n, label, unit="toys")
    key_arr = jnp.asarray(key_data(key))
    parts = int(st["parts"])  # stored with the set-up: a resumed or merged run draws the same toys

    # each row's index into the designs (a table per distinct generating point)
    designs, n_starts = (None, None), 1
    if "design_g" in st:
        rows = dict(rows, design=row_index(st["design_gen"], rows["gen_x"]))
        designs = (jnp.asarray(st["design_g"]), jnp.asarray(st["design_c"]))
        n_starts = max(st["design_g"].shape[1], st["design_c"].shape[1])

    def kernel(part):
        return toy_fits(pr.full, key_arr, part["gen_x"], part["test"], part["index"], k=len(pr.poi),
                        max_iter=max_iter, one_sided=one_sided, parts=parts, resample=pr.resample,
                        designs=designs, design_index=part.get("design"), scheme=config["passes"])

    res = run_rows(kernel, rows, chunk=config["chunk"], store=store if out is not None else None, shard=shard,
                   progress=bar, n_par=n_fit, starts_per_row=n_starts, cheap=not costly_toys(pr.full, pr.resample, parts))
    return None if res is None else assemble(config, st, res, time.perf_counter() - t0)


def base_config(kind, pr: Construction, key, n_toys, resample_aux, max_iter, extra, n_rows=None):
    from .. import __version__
    from .toys import TOY_DESIGN, passes

    return {"kind": kind, "nuejax": __version__, "passes": [list(p) for p in passes(n_rows)], "toy_design": TOY_DESIGN,
            "poi": list(pr.poi),
            "nuisances": list(pr.nuis), "n_toys": int(n_toys),
            "key": key_data(key).tolist(), "resample_aux": bool(resample_aux), "max_iter": int(max_iter),
            "model": fingerprint(pr.cond.model), "data": fingerprint(pr.cond.data), "aux": fingerprint(pr.cond.aux_flat),
            "resample": [bool(r) for r in pr.resample], "base": pr.cond.host_params(), **extra}


def poi_bounds(pr: Construction) -> list:
    """Each parameter of interest's [lower, upper] bound as stored in a run's configuration (None:
    unbounded on that side)."""
    out = []
    for n in pr.poi:
        lo, hi = (float(b[0]) for b in pr.cond.model.parameters.bounds((n,)))
        out.append([lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None])
    return out


def grid_points(ps, poi, grid):
    if len(poi) == 1:
        axes = (grid_values(ps, poi[0], grid),)
        return axes, axes[0][:, None]
    if not (isinstance(grid, (tuple, list)) and len(grid) == 2):
        raise ParameterError(f"a 2-D construction takes grid=(values of {poi[0]}, values of {poi[1]})")
    axes = (grid_values(ps, poi[0], grid[0]), grid_values(ps, poi[1], grid[1]))
    return axes, np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 2)


def check_toys(n_toys, what="n_toys"):
    if isinstance(n_toys, bool) or not isinstance(n_toys, (int, np.integer)) or n_toys < 1:
        raise InputError(f"{what} must be a positive integer, got {n_toys!r}")
    return int(n_toys)


def read_run(folder) -> tuple:
    """A stored run whose chunks are all on disk (after :func:`~nuejax.inference.runner.merge_runs`
    of processes that ran with ``shard``): ``(config, setup arrays, outputs)``."""
    import json
    from pathlib import Path

    folder = Path(folder)
    m = json.loads((folder / "manifest.json").read_text())
    config = m["config"]
    with np.load(folder / "setup.npz") as z:
        st = {k: z[k] for k in z.files}
    n_chunks = int(config["n_chunks"])
    parts = []
    for k in range(n_chunks):
        p = folder / "chunks" / f"chunk_{k:06d}.npz"
        if not p.exists():
            raise InputError(f"{folder}: chunk {k} of {n_chunks} is missing; run its shard or merge the folders first")
        with np.load(p) as z:
            parts.append({n: z[n] for n in z.files})
    return config, st, {n: np.concatenate([q[n] for q in parts]) for n in parts[0]}
