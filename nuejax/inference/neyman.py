r"""Neyman constructions from toys: Feldman–Cousins intervals (1-D and 2-D), CLs upper limits
(asymptotic and from toys) and coverage, with profiled nuisance parameters.

**Test statistic.** For parameters of interest θ (one or two) and nuisances ν,

.. math:: t(\theta) = -2\ln\frac{L(\theta, \hat{\hat\nu}(\theta))}{L(\hat\theta, \hat\nu)},

where the denominator is the maximum *inside the parameter bounds* (μ_ν ≥ 0 stays ≥ 0), so the
ordering is Feldman & Cousins' likelihood-ratio ordering with the physical boundary respected
(Feldman & Cousins, PRD 57 (1998) 3873, Eq. 4.1), with nuisances profiled (the "profile
construction": toys at each tested θ are drawn with ν at :math:`\hat{\hat\nu}(\theta)` fitted to
the observed data; Cranmer, PHYSTAT 2005, p. 112; Feldman, "Multiple measurements and
parameters in the unified approach", 2000). θ is accepted at confidence level CL when
:math:`t_{\rm obs}(\theta) \le t_c(\theta)`, the CL-quantile of t over toys drawn at θ; the
interval (region) is the accepted set. Toys resample the auxiliary measurements too
(:mod:`nuejax.inference.toys`).

**CLs.** For one parameter bounded below at zero (a signal strength, μ_ν), the statistic is
:math:`\tilde q_\mu` of Cowan, Cranmer, Gross & Vitells, EPJC 71 (2011) 1554, Eq. 16: t(μ) with
the bounded fit, set to 0 where :math:`\hat\mu > \mu`. :math:`{\rm CL_s} = p_{s+b}/(1 - p_b)`
(Read, J. Phys. G 28 (2002) 2693) with :math:`p_{s+b} = P(\tilde q_\mu \ge \tilde q_{\rm obs}\mid\mu)`
and :math:`1 - p_b = P(\tilde q_\mu \ge \tilde q_{\rm obs}\mid 0)`; the upper limit is where CLs
falls to 1 − CL. *Asymptotic*: the distributions of Cowan et al. Eq. 65 with
:math:`\mu^2/\sigma^2 = \tilde q_{\mu,A}` from the background-only Asimov data set (their Sec.
5.1; its auxiliary measurements at the same background-only nuisance values as its counts;
expressed through :math:`\tilde q_{\mu,A}` the formulas do not depend on how the signal
grows with μ); expected limits from the same formulas at the ±Nσ background-only outcomes.
*Toys*: both distributions from toys at each grid point; the background-only toys are the same
data sets at every grid point (same indices), so each gives a limit and the expected band is
their quantiles.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import InputError, ParameterError
from .fitting import EDM_TOL, compiled_solver, newton_fit, profile_starts, setup
from .results import Saveable, array_from_json, json_array, json_float, versions
from .runner import Progress, RunStore, default_chunk, fingerprint, parse_shard, run_rows
from .scan import batched_solve, grid_values
from .toys import WithAuxCentres, aux_measurements, draw_parts, toy_fits

__all__ = ["FeldmanCousinsResult", "CLsResult", "CoverageResult", "feldman_cousins", "cls_upper_limit", "coverage",
           "load_run"]


# -- shared pieces -----------------------------------------------------------------------------------------
def _key_data(key) -> np.ndarray:
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


def _quantile_with_error(t: np.ndarray, cl: float) -> tuple[float, float]:
    """CL-quantile of ``t`` and its statistical uncertainty: half the distance between the order
    statistics at n·CL ± sqrt(n·CL(1−CL)) (the binomial 68 % band of the quantile's rank)."""
    n = t.size
    if n == 0:
        return float("nan"), float("nan")
    s = np.sort(t)
    q = float(np.quantile(s, cl))
    d = np.sqrt(n * cl * (1 - cl))
    lo = s[int(np.clip(np.floor(n * cl - d), 0, n - 1))]
    hi = s[int(np.clip(np.ceil(n * cl + d), 0, n - 1))]
    return q, float(0.5 * (hi - lo))


def _crossings(x: np.ndarray, d: np.ndarray) -> list:
    """Regions of ``x`` where ``d <= 0``, ends linearly interpolated between grid points; an end
    at the first/last grid point stays there."""
    acc = d <= 0
    regions = []
    i = 0
    n = len(x)
    while i < n:
        if not acc[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and acc[j + 1]:
            j += 1
        # an end next to a point without a finite statistic stays on the last accepted point
        lo = x[i] if i == 0 or not np.isfinite(d[i - 1]) else x[i - 1] + (x[i] - x[i - 1]) * d[i - 1] / (d[i - 1] - d[i])
        hi = x[j] if j == n - 1 or not np.isfinite(d[j + 1]) else x[j] + (x[j + 1] - x[j]) * d[j] / (d[j] - d[j + 1])
        regions.append((float(lo), float(hi)))
        i = j + 1
    return regions


@dataclass(frozen=True)
class _Problem:
    """Checked inputs shared by the constructions."""

    s: object  # fitting.Setup with names = nuisances, fixed_names = poi
    poi: tuple
    nuis: tuple
    lower: tuple  # bounds of (poi..., nuis...)
    upper: tuple
    base: dict


def _problem(model, data, poi, profile, init) -> _Problem:
    poi = (poi,) if isinstance(poi, str) else tuple(poi)
    if not 1 <= len(poi) <= 2 or len(set(poi)) != len(poi):
        raise ParameterError(f"parameters of interest: one or two different names, got {poi!r}")
    free = [n for n in model.parameters.free_names if n not in poi] if profile is None else list(profile)
    if free:
        s = setup(model, data, names=profile, fixed_names=poi, init=init)
    else:  # no nuisance parameter: the conditional "fit" is one evaluation
        s = dataclasses.replace(setup(model, data, names=poi, init=init), names=(), fixed_names=poi, lower=(), upper=())
    ps = s.model.parameters
    lo_p, hi_p = ps.bounds(poi)
    base = {k: jnp.asarray(v, dtype=s.data.dtype) for k, v in s.base.items()}
    return _Problem(s, poi, tuple(s.names), tuple(float(v) for v in lo_p) + s.lower,
                    tuple(float(v) for v in hi_p) + s.upper, base)


def _observed(pr: _Problem, points: np.ndarray, *, max_iter: int, one_sided: bool) -> dict:
    """Fits of the observed data: the global fit and the conditional fit at every point."""
    s = pr.s
    g = newton_fit(s.model, s.data, {k: float(v) for k, v in pr.base.items() if np.ndim(v) == 0},
                   names=pr.poi + pr.nuis, one_sided=False, max_iter=max_iter)
    if pr.nuis:
        start = profile_starts(g, pr.poi, pr.nuis, np.asarray(points), s.lower, s.upper)
        solve = compiled_solver(pr.nuis, pr.poi, s.lower, s.upper, int(max_iter), EDM_TOL, "fixed")
        # in launches that respect the XLA:CPU limit (a 21 x 21 grid with 13 nuisances is one too many)
        res = batched_solve(solve, jnp.asarray(points), s, start, None, None, "")
        f_cond, nuis_hat, conv = np.asarray(res.fun), np.asarray(res.x), np.asarray(res.converged)
    else:
        def one(v):
            p = dict(s.base)
            for i, n in enumerate(pr.poi):
                p[n] = v[i]
            return s.model.nll(p, s.data)

        f_cond = np.asarray(jax.jit(jax.vmap(one))(jnp.asarray(points)))
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
    if one_sided:
        t = np.where(np.all(poi_hat[None, :] <= points, axis=1), t, 0.0)
    return {"points": np.asarray(points, dtype=float), "gen_x": np.concatenate([points, nuis_hat], axis=1),
            "t_obs": t, "f_cond_obs": f_cond, "conv_obs": conv.astype(bool), "poi_hat_obs": poi_hat,
            "f_global_obs": np.asarray(float(g.fval)), "global_valid": np.asarray(bool(g.valid))}


def _run(pr: _Problem, config: dict, compute_setup, make_rows, *, n_rows, key, aux, chunk, out, resume, shard,
         progress, max_iter, one_sided, label):
    """Set up (or load), build the rows, run them through the toy kernel (chunked, sharded,
    resumable). Returns (setup, outputs or None)."""
    n_fit = len(pr.poi) + len(pr.nuis)
    shard = (0, 1) if shard is None else parse_shard(shard)
    if shard[1] > 1 and out is None:
        raise InputError(f"shard {shard[0]}/{shard[1]}: a slice of a run needs an output folder (out=...) to store "
                         "its chunks for the merge")
    config = dict(config)
    if n_rows >= 2**32:
        raise InputError(f"{n_rows} toys in one run: toy indices are 32-bit; split the grid into runs of < 2^32 toys")
    config["chunk"] = int(chunk) if chunk is not None else default_chunk(n_fit)
    config.update(n_rows=int(n_rows), n_chunks=-(-int(n_rows) // config["chunk"]))
    # processes of one job array share a folder: a slice may find the others' manifest there
    store = RunStore(out, config, resume=resume or shard[1] > 1)

    def setup_with_parts():
        st = compute_setup()
        st["parts"] = np.asarray(draw_parts(pr.s.model, pr.base, pr.poi + pr.nuis, st["gen_x"]))
        return st

    st = store.setup(setup_with_parts)
    rows = make_rows(st)
    n = len(rows["index"])
    bar = None
    if progress:
        bar = progress if isinstance(progress, Progress) else Progress(n, label, unit="toys")
    key_arr = jnp.asarray(_key_data(key))
    s = pr.s
    parts = int(st["parts"])  # stored with the set-up: a resumed or merged run draws the same toys

    def kernel(part):
        return toy_fits(s.model, pr.base, aux, key_arr, part["gen_x"], part["test"], part["index"],
                        names=pr.poi + pr.nuis, poi=pr.poi, lower=pr.lower, upper=pr.upper, max_iter=max_iter,
                        one_sided=one_sided, parts=parts)

    res = run_rows(kernel, rows, chunk=config["chunk"], store=store if out is not None else None, shard=shard,
                   progress=bar, n_par=n_fit)
    return st, rows, res


def _base_config(kind, pr: _Problem, key, n_toys, resample_aux, max_iter, extra):
    from .. import __version__
    from .toys import PASSES

    return {"kind": kind, "nuejax": __version__, "passes": [list(p) for p in PASSES], "poi": list(pr.poi),
            "nuisances": list(pr.nuis), "n_toys": int(n_toys),
            "key": _key_data(key).tolist(), "resample_aux": bool(resample_aux), "max_iter": int(max_iter),
            "model": fingerprint(pr.s.model), "data": fingerprint(pr.s.data),
            "base": {k: float(v) for k, v in pr.base.items() if np.ndim(v) == 0}, **extra}


# -- Feldman–Cousins ---------------------------------------------------------------------------------------
def _pair(values) -> list:
    """Two numbers (an interval) as strict JSON: None for a missing or non-finite end."""
    return [json_float(v) for v in values]


@dataclass(frozen=True)
class FeldmanCousinsResult(Saveable):
    """A Feldman–Cousins construction on a grid (module docstring) in one or two parameters.

    Per grid point (``points``, shape (G, k); a 2-D grid is x-major: ``points.reshape(nx, ny, 2)``):
    ``t_obs`` the observed statistic, ``t_crit`` the CL-quantile of the toys' statistic and
    ``t_crit_err`` its statistical uncertainty, ``p_values`` (fraction of toys with t ≥ t_obs),
    ``accepted`` (t_obs ≤ t_crit), ``n_valid`` toys whose two fits passed the KKT test (only these
    count). ``regions``: 1-D, the accepted intervals with interpolated ends (an end on the first or
    last grid point stays there: widen the grid if it is not the parameter's bound).
    """

    poi: tuple
    axes: tuple  # one or two 1-D grids
    points: np.ndarray
    t_obs: np.ndarray
    t_crit: np.ndarray
    t_crit_err: np.ndarray
    p_values: np.ndarray
    accepted: np.ndarray
    n_valid: np.ndarray
    n_toys: int
    cl: float
    best_fit: tuple
    bounds: tuple = ()
    seconds: float = 0.0
    convention: str = ("Feldman–Cousins (likelihood-ratio ordering, bounded best fit), nuisances profiled: toys at "
                       "each tested point with nuisances fitted to the data there (profile construction), auxiliary "
                       "measurements resampled")
    versions: dict = field(default_factory=versions, repr=False)

    @property
    def regions(self) -> list:
        if len(self.poi) != 1:
            raise ValueError("regions are for a 1-D construction; use accepted_grid for 2-D")
        return _crossings(np.asarray(self.axes[0]), np.asarray(self.t_obs) - np.asarray(self.t_crit))

    @property
    def interval(self) -> tuple:
        """1-D: (lower, upper) of the accepted set (the hull of :attr:`regions`); (None, None) if empty."""
        r = self.regions
        return (r[0][0], r[-1][1]) if r else (None, None)

    @property
    def accepted_grid(self) -> np.ndarray:
        return np.asarray(self.accepted).reshape(tuple(len(a) for a in self.axes))

    def plot(self, ax=None, **kw):
        from ..plotting import plot_feldman_cousins

        return plot_feldman_cousins(self, ax=ax, **kw)

    def to_dict(self) -> dict:
        return {"kind": type(self).__name__, "poi": list(self.poi), "axes": [np.asarray(a).tolist() for a in self.axes],
                "points": np.asarray(self.points).tolist(), "t_obs": json_array(self.t_obs), "t_crit": json_array(self.t_crit),
                "t_crit_err": json_array(self.t_crit_err), "p_values": json_array(self.p_values),
                "accepted": np.asarray(self.accepted).tolist(), "n_valid": np.asarray(self.n_valid).tolist(),
                "n_toys": self.n_toys, "cl": self.cl, "best_fit": list(self.best_fit),
                "bounds": [[None if not np.isfinite(v) else float(v) for v in b] for b in self.bounds],
                "seconds": self.seconds, "convention": self.convention,
                "versions": self.versions,
                **({"interval": _pair(self.interval), "regions": [_pair(r) for r in self.regions]}
                   if len(self.poi) == 1 else {})}

    @classmethod
    def from_dict(cls, d: dict):
        return cls(tuple(d["poi"]), tuple(np.asarray(a, dtype=float) for a in d["axes"]),
                   np.asarray(d["points"], dtype=float), array_from_json(d["t_obs"]), array_from_json(d["t_crit"]), array_from_json(d["t_crit_err"]),
                   array_from_json(d["p_values"]), np.asarray(d["accepted"], dtype=bool), np.asarray(d["n_valid"], dtype=int),
                   int(d["n_toys"]), float(d["cl"]), tuple(d["best_fit"]),
                   tuple((-np.inf if b[0] is None else float(b[0]), np.inf if b[1] is None else float(b[1]))
                         for b in d["bounds"]), float(d["seconds"]), d["convention"],
                   d.get("versions", {}))

    def __str__(self) -> str:
        head = f"Feldman–Cousins {self.cl:.0%} CL on {' x '.join(self.poi)}: {len(self.points)} points x {self.n_toys} toys"
        if len(self.poi) == 1:
            regs = ", ".join(f"[{a:.4g}, {b:.4g}]" for a, b in self.regions) or "empty"
            return f"{head}\n  accepted: {regs}  (best fit {self.best_fit[0]:.4g})"
        return f"{head}\n  accepted: {int(np.sum(self.accepted))} of {len(self.points)} grid points"


def _grid_points(ps, poi, grid):
    if len(poi) == 1:
        axes = (grid_values(ps, poi[0], grid),)
        return axes, axes[0][:, None]
    if not (isinstance(grid, (tuple, list)) and len(grid) == 2):
        raise ParameterError(f"a 2-D construction takes grid=(values of {poi[0]}, values of {poi[1]})")
    axes = (grid_values(ps, poi[0], grid[0]), grid_values(ps, poi[1], grid[1]))
    return axes, np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 2)


def _check_toys(n_toys, what="n_toys"):
    if isinstance(n_toys, bool) or not isinstance(n_toys, (int, np.integer)) or n_toys < 1:
        raise InputError(f"{what} must be a positive integer, got {n_toys!r}")
    return int(n_toys)


def feldman_cousins(model, data, names, grid, n_toys: int, key=0, *, cl: float = 0.9, profile=None,
                    init: Mapping | None = None, resample_aux: bool = True, chunk: int | None = None, out=None,
                    resume: bool = False, shard=None, progress=False, max_iter: int = 100):
    """Feldman–Cousins interval (one name) or region (two names) of ``names`` from toys (module
    docstring): ``grid`` the tested values (a 2-D construction takes ``(values_x, values_y)``, the
    full product is tested), ``n_toys`` per grid point, ``key`` a seed or ``jax.random`` key
    (toy ``i`` of point ``k`` has index ``k * n_toys + i``). ``profile`` chooses the nuisances
    (default: every other free parameter).

    ``out`` stores the run (:mod:`nuejax.inference.runner`); ``resume=True`` continues one;
    ``shard="i/n"`` computes a slice (returns ``None`` until every slice is on disk; then
    :func:`load_run` or :func:`~nuejax.inference.runner.merge_runs`). Rows are split over every
    local device. Returns :class:`FeldmanCousinsResult`.
    """
    t0 = time.perf_counter()
    n_toys = _check_toys(n_toys)
    _check_cl(cl)
    pr = _problem(model, data, names, profile, init)
    axes, points = _grid_points(pr.s.model.parameters, pr.poi, grid)
    aux = aux_measurements(pr.s.model, pr.poi + pr.nuis, resample_aux=resample_aux)
    bounds = [pr.s.model.parameters.bounds((n,)) for n in pr.poi]
    bounds = [[None if not np.isfinite(b[0][0]) else float(b[0][0]), None if not np.isfinite(b[1][0]) else float(b[1][0])]
              for b in bounds]
    config = _base_config("feldman_cousins", pr, key, n_toys, resample_aux, max_iter,
                          {"axes": [a.tolist() for a in axes], "cl": float(cl), "bounds": bounds})
    st, rows, res = _run(pr, config, lambda: _observed(pr, points, max_iter=max_iter, one_sided=False),
                         lambda st: _fc_rows(st, n_toys), n_rows=len(points) * n_toys, key=key, aux=aux, chunk=chunk, out=out, resume=resume,
                         shard=shard, progress=progress, max_iter=max_iter, one_sided=False,
                         label=f"FC {' x '.join(pr.poi)}")
    if res is None:
        return None
    return _fc_assemble(config, st, res, time.perf_counter() - t0)


def _fc_rows(st, n_toys):
    g = len(st["points"])
    gen = np.repeat(np.arange(g), n_toys)
    return {"gen_x": st["gen_x"][gen], "test": st["points"][gen], "index": np.arange(g * n_toys, dtype=np.uint32)}


def _fc_assemble(config, st, res, seconds) -> FeldmanCousinsResult:
    n_toys, cl = int(config["n_toys"]), float(config["cl"])
    g = len(st["points"])
    t = res["t"].reshape(g, n_toys)
    ok = (res["conv_global"] & res["conv_cond"]).reshape(g, n_toys)
    t_crit, t_err, p, n_valid = (np.empty(g) for _ in range(4))
    for k in range(g):
        tk = t[k][ok[k]]
        t_crit[k], t_err[k] = _quantile_with_error(tk, cl)
        p[k] = float(np.mean(tk >= st["t_obs"][k])) if tk.size else np.nan
        n_valid[k] = tk.size
    if np.any(n_valid < n_toys):
        import warnings

        bad = int(n_toys * g - n_valid.sum())
        warnings.warn(f"Feldman–Cousins: {bad} of {n_toys * g} toys had a fit that did not pass the KKT test and "
                      "are left out of the critical values", RuntimeWarning, stacklevel=3)
    accepted = st["t_obs"] <= t_crit
    return FeldmanCousinsResult(tuple(config["poi"]), tuple(np.asarray(a, dtype=float) for a in config["axes"]),
                                st["points"], st["t_obs"], t_crit, t_err, p, accepted, n_valid.astype(int), n_toys, cl,
                                tuple(float(v) for v in st["poi_hat_obs"]),
                                tuple((-np.inf if lo is None else lo, np.inf if hi is None else hi)
                                      for lo, hi in config.get("bounds", [])), seconds)


def _check_cl(cl):
    if not (isinstance(cl, (int, float)) and 0.0 < cl < 1.0):
        raise InputError(f"confidence level must be a number in (0, 1), got {cl!r}")


# -- CLs ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CLsResult(Saveable):
    """CLs upper limit on ``name`` (module docstring): per tested value ``values``, the observed
    q̃ (``q_obs``), ``clsb`` = p_{s+b}, ``clb`` = 1 − p_b and ``cls``; ``limit`` where CLs falls to
    1 − CL (log-linear interpolation; ``None`` if it does not inside the grid); ``expected``:
    the expected limits at the background-only outcomes −2σ … +2σ (keys ``"-2"`` … ``"2"``).
    ``method``: ``"asymptotic"`` or ``"toys"``."""

    name: str
    values: np.ndarray
    q_obs: np.ndarray
    clsb: np.ndarray
    clb: np.ndarray
    cls: np.ndarray
    limit: float | None
    expected: dict
    cl: float
    method: str
    n_toys: int = 0
    seconds: float = 0.0
    convention: str = ("CLs = p_s+b / (1 - p_b) with q~_mu (Cowan et al. 2011, Eq. 16), bounded best fit, "
                       "nuisances profiled")
    versions: dict = field(default_factory=versions, repr=False)

    def plot(self, ax=None, **kw):
        from ..plotting import plot_cls

        return plot_cls(self, ax=ax, **kw)

    def to_dict(self) -> dict:
        return {"kind": type(self).__name__, "name": self.name, "values": json_array(self.values), "q_obs": json_array(self.q_obs),
                "clsb": json_array(self.clsb), "clb": json_array(self.clb), "cls": json_array(self.cls),
                "limit": None if self.limit is None else float(self.limit),
                "expected": {k: (None if v is None else float(v)) for k, v in self.expected.items()}, "cl": self.cl,
                "method": self.method, "n_toys": self.n_toys, "seconds": self.seconds, "convention": self.convention,
                "versions": self.versions}

    @classmethod
    def from_dict(cls, d: dict):
        return cls(d["name"], array_from_json(d["values"]), array_from_json(d["q_obs"]), array_from_json(d["clsb"]), array_from_json(d["clb"]), array_from_json(d["cls"]),
                   d["limit"], dict(d["expected"]), float(d["cl"]), d["method"], int(d["n_toys"]), float(d["seconds"]),
                   d["convention"], d.get("versions", {}))

    def __str__(self) -> str:
        lim = "not reached in the grid" if self.limit is None else f"{self.limit:.4g}"
        exp = self.expected.get("0")
        return (f"CLs {self.cl:.0%} CL upper limit on {self.name} ({self.method}): {lim}"
                + ("" if exp is None else f"  (expected median {exp:.4g})"))


def _limit_from_cls(values, cls_values, alpha):
    """First crossing of CLs below ``alpha`` (interpolated in ln CLs); ``None`` if none."""
    c = np.asarray(cls_values, dtype=float)
    below = np.nonzero(c <= alpha)[0]
    if below.size == 0:
        return None
    k = int(below[0])
    if k == 0 or not np.isfinite(c[k - 1]):
        return float(values[k])
    a, b = np.log(max(c[k - 1], 1e-300)), np.log(max(c[k], 1e-300))
    f = (np.log(alpha) - a) / (b - a) if b != a else 1.0
    return float(values[k - 1] + f * (values[k] - values[k - 1]))


def asymptotic_cls(q, q_a):
    r"""CLs and its parts from :math:`\tilde q_\mu` and the Asimov :math:`\tilde q_{\mu,A}`
    (Cowan et al. 2011, Eq. 65 with :math:`\mu^2/\sigma^2 = \tilde q_{\mu,A}`): returns
    (CLs, p_{s+b}, 1 − p_b)."""
    from scipy.stats import norm

    q = np.maximum(np.asarray(q, dtype=float), 0.0)
    qa = np.maximum(np.asarray(q_a, dtype=float), 1e-300)
    sq, sqa = np.sqrt(q), np.sqrt(qa)
    low = q <= qa
    # p_{s+b} = 1 - F(q|mu), 1 - p_b = 1 - F(q|0)
    clsb = np.where(low, norm.sf(sq), norm.sf((q + qa) / (2 * sqa)))
    clb = np.where(low, norm.sf(sq - sqa), norm.sf((q - qa) / (2 * sqa)))
    return clsb / np.maximum(clb, 1e-300), clsb, clb


def _expected_q(q_a, n_sigma):
    """q̃ of the background-only outcome μ̂ = Nσ (Gaussian limit; Cowan et al. 2011, Sec. 3.7)."""
    sqa = np.sqrt(np.maximum(q_a, 0.0))
    return np.where(n_sigma >= 0, np.where(n_sigma <= sqa, (sqa - n_sigma) ** 2, 0.0), q_a - 2.0 * n_sigma * sqa)


def cls_upper_limit(model, data, name: str, values, *, cl: float = 0.9, n_toys: int = 0, key=0, profile=None,
                    init: Mapping | None = None, resample_aux: bool = True, chunk: int | None = None, out=None,
                    resume: bool = False, shard=None, progress=False, max_iter: int = 100) -> CLsResult:
    """CLs upper limit on ``name`` (module docstring), a parameter whose lower bound is 0 (the
    background-only hypothesis), tested at ``values`` (> 0). ``n_toys = 0``: asymptotic formulas;
    ``n_toys > 0``: that many signal+background toys per value and background-only toys shared by
    all values (toy indices: ``k * n_toys + i`` for s+b, ``n_values * n_toys + i`` for b)."""
    t0 = time.perf_counter()
    _check_cl(cl)
    if not isinstance(name, str):
        raise ParameterError(f"cls_upper_limit takes one parameter name, got {name!r}")
    pr = _problem(model, data, name, profile, init)
    ps = pr.s.model.parameters
    if ps[name].lower != 0.0:
        raise ParameterError(f"cls_upper_limit: {name} must have lower bound 0 (the background-only hypothesis), "
                             f"has {ps[name].lower}")
    v = grid_values(ps, name, values)
    if v[0] <= 0:
        raise ParameterError(f"cls_upper_limit: test values of {name} must be > 0 (0 is the background-only point)")
    points = np.concatenate([[0.0], v])[:, None]
    alpha = 1.0 - cl
    if n_toys == 0:
        obs = _observed(pr, points, max_iter=max_iter, one_sided=True)
        # background-only Asimov data: expected counts at mu = 0 with the nuisances fitted to the data there
        p0 = dict(pr.base)
        for i, n in enumerate(pr.poi + pr.nuis):
            p0[n] = jnp.asarray(obs["gen_x"][0, i])
        asimov = np.asarray(pr.s.model.expected(p0))
        # the Asimov data set's auxiliary measurements sit at the same nuisance values as its counts
        aux = aux_measurements(pr.s.model, pr.poi + pr.nuis, resample_aux=resample_aux)
        pr_a = _problem(WithAuxCentres(pr.s.model, aux, aux.at(p0)), asimov, name, profile, init)
        q_a = _observed(pr_a, points, max_iter=max_iter, one_sided=True)["t_obs"][1:]
        q = obs["t_obs"][1:]
        cls, clsb, clb = asymptotic_cls(q, q_a)
        expected = {str(k): _limit_from_cls(v, asymptotic_cls(_expected_q(q_a, k), q_a)[0], alpha)
                    for k in (-2, -1, 0, 1, 2)}
        return CLsResult(name, v, q, clsb, clb, cls, _limit_from_cls(v, cls, alpha), expected, float(cl), "asymptotic",
                         0, time.perf_counter() - t0)
    n_toys = _check_toys(n_toys)
    aux = aux_measurements(pr.s.model, pr.poi + pr.nuis, resample_aux=resample_aux)
    config = _base_config("cls", pr, key, n_toys, resample_aux, max_iter, {"axes": [v.tolist()], "cl": float(cl)})
    st, rows, res = _run(pr, config, lambda: _observed(pr, points, max_iter=max_iter, one_sided=True),
                         lambda st: _cls_rows(st, n_toys), n_rows=2 * len(v) * n_toys, key=key, aux=aux, chunk=chunk, out=out, resume=resume,
                         shard=shard, progress=progress, max_iter=max_iter, one_sided=True, label=f"CLs {name}")
    if res is None:
        return None
    return _cls_assemble(config, st, res, time.perf_counter() - t0)


def _cls_rows(st, n_toys):
    g = len(st["points"]) - 1  # point 0 is the background-only hypothesis
    k = np.repeat(np.arange(1, g + 1), n_toys)
    gen_sb = st["gen_x"][k]
    idx_sb = np.arange(g * n_toys, dtype=np.uint32)
    gen_b = np.repeat(st["gen_x"][:1], g * n_toys, axis=0)
    idx_b = (g * n_toys + np.tile(np.arange(n_toys), g)).astype(np.uint32)
    test = st["points"][k]
    return {"gen_x": np.concatenate([gen_sb, gen_b]), "test": np.concatenate([test, test]),
            "index": np.concatenate([idx_sb, idx_b])}


def _cls_assemble(config, st, res, seconds) -> CLsResult:
    n_toys, cl = int(config["n_toys"]), float(config["cl"])
    v = np.asarray(config["axes"][0], dtype=float)
    g = len(v)
    ok = res["conv_global"] & res["conv_cond"]
    t = np.where(ok, res["t"], np.nan)
    q_sb, q_b = t[:g * n_toys].reshape(g, n_toys), t[g * n_toys:].reshape(g, n_toys)
    q_obs = st["t_obs"][1:]

    def frac_ge(sample, q):
        s = sample[np.isfinite(sample)]
        return float(np.mean(s >= q - 1e-9)) if s.size else np.nan

    clsb = np.array([frac_ge(q_sb[k], q_obs[k]) for k in range(g)])
    clb = np.array([frac_ge(q_b[k], q_obs[k]) for k in range(g)])
    cls = clsb / np.maximum(clb, 1e-300)
    # expected band: each background-only toy is one data set tested at every value
    limits = []
    for j in range(n_toys):
        qj = q_b[:, j]
        if not np.all(np.isfinite(qj)):
            continue
        c = np.array([frac_ge(q_sb[k], qj[k]) / max(frac_ge(q_b[k], qj[k]), 1e-300) for k in range(g)])
        limits.append(_limit_from_cls(v, c, 1 - cl))
    # a toy whose CLs stays above 1 - CL on the whole grid has a limit beyond it: +inf, not left out
    lim = np.array([np.inf if x is None else x for x in limits])
    from scipy.stats import norm

    def q(p):
        v = float(np.quantile(lim, p, method="inverted_cdf")) if lim.size else np.inf  # no inf - inf
        return v if np.isfinite(v) else None

    expected = {str(k): q(norm.cdf(k)) for k in (-2, -1, 0, 1, 2)}
    if not ok.all():
        import warnings

        warnings.warn(f"CLs: {int((~ok).sum())} of {ok.size} toys had a fit that did not pass the KKT test and are "
                      "left out", RuntimeWarning, stacklevel=3)
    return CLsResult(config["poi"][0], v, q_obs, clsb, clb, cls, _limit_from_cls(v, cls, 1 - cl), expected, cl, "toys",
                     n_toys, seconds)


# -- coverage ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CoverageResult(Saveable):
    """Coverage of the Feldman–Cousins construction at ``truth``: of ``n_valid`` toys drawn there,
    ``n_covered`` have an interval (region) that contains the true value of ``poi``: their
    statistic at the truth is at most the critical value there. ``fraction`` ± ``error``
    (binomial, sqrt(f(1−f)/n); with ``inner_toys`` = 0 plus, in quadrature, the scatter
    sqrt(CL(1−CL)/n) of the probability content of the one critical value estimated from n other
    toys). ``inner_toys`` > 0: each toy's critical value from that many toys
    drawn at the truth with the nuisances fitted to that toy (the profile construction, as
    :func:`feldman_cousins` does on data); 0: one critical value from toys at the true nuisances
    (the exact Neyman construction)."""

    poi: tuple
    truth: dict
    n_toys: int
    n_valid: int
    n_covered: int
    fraction: float
    error: float
    cl: float
    inner_toys: int
    t_crit: np.ndarray
    seconds: float = 0.0
    versions: dict = field(default_factory=versions, repr=False)

    def to_dict(self) -> dict:
        return {"kind": type(self).__name__, "poi": list(self.poi), "truth": dict(self.truth), "n_toys": self.n_toys,
                "n_valid": self.n_valid, "n_covered": self.n_covered, "fraction": self.fraction, "error": self.error,
                "cl": self.cl, "inner_toys": self.inner_toys, "t_crit": json_array(self.t_crit), "seconds": self.seconds,
                "versions": self.versions}

    @classmethod
    def from_dict(cls, d: dict):
        return cls(tuple(d["poi"]), dict(d["truth"]), int(d["n_toys"]), int(d["n_valid"]), int(d["n_covered"]),
                   float(d["fraction"]), float(d["error"]), float(d["cl"]), int(d["inner_toys"]), array_from_json(d["t_crit"]),
                   float(d["seconds"]), d.get("versions", {}))

    def __str__(self) -> str:
        return (f"coverage of the {self.cl:.0%} CL Feldman–Cousins {' x '.join(self.poi)} at "
                f"{ {k: self.truth[k] for k in self.poi} }: {self.fraction:.4f} ± {self.error:.4f} "
                f"({self.n_covered}/{self.n_valid} toys)")

    def plot(self, ax=None, **kw):
        from ..plotting import plot_coverage

        return plot_coverage([self], ax=ax, **kw)


def coverage(model, truth: Mapping, names, n_toys: int, key=0, *, cl: float = 0.9, inner_toys: int = 0,
             profile=None, resample_aux: bool = True, max_iter: int = 100, chunk: int | None = None,
             progress=False) -> CoverageResult:
    """Fraction of toys drawn at ``truth`` (parameter values; the rest from the model's defaults)
    whose Feldman–Cousins interval for ``names`` contains the true value (:class:`CoverageResult`).

    Toys for the coverage use indices ``0 … n_toys − 1`` of ``key``; the critical values use
    another key derived from it (``jax.random.split(key)[1]``), so no toy serves twice.
    """
    t0 = time.perf_counter()
    n_toys = _check_toys(n_toys)
    _check_cl(cl)
    if inner_toys:
        inner_toys = _check_toys(inner_toys, "inner_toys")
    key = jnp.asarray(_key_data(key))
    ps = model.parameters
    truth = ps.values(dict(truth))
    asimov = np.asarray(model.expected(truth))
    pr = _problem(model, asimov, names, profile, {k: float(v) for k, v in truth.items()})
    aux = aux_measurements(pr.s.model, pr.poi + pr.nuis, resample_aux=resample_aux)
    names_fit = pr.poi + pr.nuis
    x_true = np.array([float(truth[n]) for n in names_fit])
    poi_true = x_true[:len(pr.poi)]
    n_fit = len(names_fit)
    chunk = chunk or default_chunk(n_fit)

    def run(gen_x, test, index, k, label):
        parts = draw_parts(pr.s.model, pr.base, names_fit, gen_x)

        def kernel(part):
            return toy_fits(pr.s.model, pr.base, aux, k, part["gen_x"], part["test"], part["index"], names=names_fit,
                            poi=pr.poi, lower=pr.lower, upper=pr.upper, max_iter=max_iter, parts=parts)

        rows = {"gen_x": gen_x, "test": test, "index": index}
        bar = Progress(len(index), label) if progress else None
        return run_rows(kernel, rows, chunk=chunk, progress=bar, n_par=n_fit)

    # the coverage toys: statistic at the truth, and the conditional fits' nuisances
    outer = run(np.repeat(x_true[None], n_toys, 0), np.repeat(poi_true[None], n_toys, 0),
                np.arange(n_toys, dtype=np.uint32), key, "coverage toys")
    ok = outer["conv_global"] & outer["conv_cond"]
    key_inner = jax.random.split(key)[1]  # not fold_in(key, i): that is coverage toy i's key
    if inner_toys == 0:
        inner = run(np.repeat(x_true[None], n_toys, 0), np.repeat(poi_true[None], n_toys, 0),
                    np.arange(n_toys, dtype=np.uint32), key_inner, "critical value")
        good = inner["conv_global"] & inner["conv_cond"]
        t_crit = np.full(n_toys, _quantile_with_error(inner["t"][good], cl)[0])
        n_crit = int(good.sum())
    else:
        nuis_hat = _conditional_nuisances(pr, outer, x_true, max_iter)
        gen = np.repeat(np.concatenate([np.repeat(poi_true[None], n_toys, 0), nuis_hat], axis=1), inner_toys, 0)
        idx = np.arange(n_toys * inner_toys, dtype=np.uint32)
        inner = run(gen, np.repeat(poi_true[None], len(idx), 0), idx, key_inner, "critical values")
        good = (inner["conv_global"] & inner["conv_cond"]).reshape(n_toys, inner_toys)
        tin = inner["t"].reshape(n_toys, inner_toys)
        t_crit = np.array([_quantile_with_error(tin[j][good[j]], cl)[0] for j in range(n_toys)])
    covered = ok & (outer["t"] <= t_crit)
    n_valid = int(ok.sum())
    f = float(covered.sum() / n_valid) if n_valid else float("nan")
    var = f * (1 - f) / n_valid if n_valid else float("nan")
    if inner_toys == 0 and n_valid:
        # the one critical value is itself estimated from n_crit toys: the probability content of
        # its estimate scatters by sqrt(cl(1-cl)/n_crit), which every covered/not-covered count shares
        var += cl * (1 - cl) / max(n_crit, 1)
    err = float(np.sqrt(var))
    return CoverageResult(pr.poi, {k: float(v) for k, v in truth.items() if np.ndim(v) == 0}, n_toys, n_valid,
                          int(covered.sum()), f, err, float(cl), int(inner_toys), t_crit, time.perf_counter() - t0)


def _conditional_nuisances(pr: _Problem, outer: dict, x_true, max_iter):
    """ν̂̂ at the true POI of every coverage toy (the generating nuisances of its inner toys)."""
    return outer["nuis_hat"] if "nuis_hat" in outer else np.repeat(x_true[None, len(pr.poi):], len(outer["t"]), 0)


# -- stored runs ---------------------------------------------------------------------------------------------
def load_run(folder):
    """The result of a stored run whose chunks are all on disk (after :func:`merge_runs` of
    processes that ran with ``shard``): a :class:`FeldmanCousinsResult` or :class:`CLsResult`."""
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
    res = {n: np.concatenate([q[n] for q in parts]) for n in parts[0]}
    if config["kind"] == "feldman_cousins":
        return _fc_assemble(config, st, res, 0.0)
    if config["kind"] == "cls":
        return _cls_assemble(config, st, res, 0.0)
    raise InputError(f"{folder}: unknown run kind {config['kind']!r}")
