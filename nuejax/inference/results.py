r"""Every result of :mod:`nuejax.inference` in one module: frozen containers of plain data that print
and round-trip through JSON (``to_dict``/``from_dict``, ``save``/``load``): fits
(:class:`FitResult`, :class:`BatchFitResult`), profile scans (:class:`ScanResult`,
:class:`Scan2DResult`), Neyman constructions (:class:`FeldmanCousinsResult`, :class:`CLsResult`,
:class:`CoverageResult`) and goodness of fit (:class:`GoodnessOfFit`). Plots of them are in
:mod:`nuejax.plotting`; the thresholds and interval helpers in :mod:`nuejax.inference.intervals`.

Interval conventions (asymptotic, Wilks; Cowan, Cranmer, Gross, Vitells, *Eur. Phys. J. C* 71
(2011) 1554, "CCGV" below):

* :meth:`ScanResult.interval` -- two-sided: the values where the profile
  :math:`\Delta\chi^2 = -2\Delta\ln L` crosses :math:`\chi^2_1(\mathrm{CL})` (2.706 at 90 % CL).
* :meth:`ScanResult.upper_limit` -- one-sided, for a parameter bounded below (the magnetic moment
  :math:`\mu_\nu \ge 0`): the test statistic is CCGV's :math:`\tilde q_\mu` (their Eq. 16): the
  profile ratio measured from the best fit *inside* the physical region (the fit is bounded, so
  the scan's minimum is exactly that), set to zero below the best fit. Asymptotically it follows
  :math:`\tfrac12\delta(0) + \tfrac12\chi^2_1` (Chernoff), so the limit is where
  :math:`\Delta\chi^2` crosses :math:`\chi^2_1` at :math:`2\,\mathrm{CL} - 1` (1.642 at 90 % CL)
  above the best fit. The statistic does not change under a monotonic reparametrisation such as
  :math:`s = \mu_\nu^2` (the signal strength that enters the spectrum), so the threshold applies
  to :math:`\mu_\nu` itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .intervals import (DCHI2_90, Interval, crossings, interval_from_profile, one_sided_threshold,
                        region_containing, regions_from_profile, two_sided_threshold)

SCHEMA = 1

__all__ = ["BatchFitResult", "CLsResult", "CoverageResult", "FeldmanCousinsResult", "FitResult", "GoodnessOfFit",
           "ImpactsResult",
           "Saveable", "Scan2DResult", "ScanResult", "array_from_json", "json_array", "json_float", "json_pair",
           "load_result", "num_or_nan", "versions"]


def versions() -> dict:
    """Versions of nuejax and of the libraries that produced a result (stored with it)."""
    import jax

    from .. import __version__

    out = {"nuejax": __version__, "jax": jax.__version__}
    try:
        import iminuit

        out["iminuit"] = iminuit.__version__
    except ImportError:  # pragma: no cover - optional on the device machine
        pass
    return out


def json_float(v):
    return None if v is None or not np.isfinite(v) else float(v)


def num_or_nan(v):
    return float("nan") if v is None else float(v)


class Saveable:
    """``save(path)`` / ``load(path)`` through ``to_dict`` / ``from_dict`` as strict JSON."""

    def save(self, path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1, allow_nan=False))
        return path

    @classmethod
    def load(cls, path):
        d = json.loads(Path(path).read_text())
        kind = d.get("kind")
        if kind != cls.__name__:
            raise ValueError(f"{path}: holds a {kind!r}, not a {cls.__name__}")
        return cls.from_dict(d)


def load_result(path):
    """Load any saved result (:class:`FitResult`, :class:`ScanResult`, :class:`Scan2DResult`,
    :class:`FeldmanCousinsResult`, :class:`CLsResult`, :class:`CoverageResult`, :class:`ImpactsResult`)."""
    d = json.loads(Path(path).read_text())
    kinds = {c.__name__: c for c in (FitResult, ScanResult, Scan2DResult, FeldmanCousinsResult, CLsResult,
                                     CoverageResult, ImpactsResult)}
    if d.get("kind") not in kinds:
        raise ValueError(f"{path}: not a saved nuejax result (kind = {d.get('kind')!r})")
    return kinds[d["kind"]].from_dict(d)


@dataclass
class FitResult(Saveable):
    """Result of a fit: best-fit values, errors and covariance of the fitted parameters.

    * ``errors[name]``: symmetric error from the covariance 2 H⁻¹ (H: autodiff Hessian of
      -2 ln L) on the *free* subspace; ``None`` for a parameter on a bound (``at_bound[name]`` is
      ``'lower'`` or ``'upper'``), whose error is one-sided: ``one_sided[name]`` is the distance
      inward at which the profile -2 ln L rises by 1 (``None`` if it does not inside the bounds).
      Rows and columns of ``covariance`` of parameters on a bound are zero.
    * ``valid``: the minimiser converged *and* the KKT conditions hold; ``reason`` says why not.
    * ``params``: every parameter's value (fitted and fixed), floats.
    * ``n_starts``: the starts of the multi-start design the fit ran from
      (:mod:`~nuejax.inference.starts`); ``minima``: every distinct minimum their end points found
      that passed the KKT test, lowest first (``{"fval", "values", "n_starts"}``); ``n_at_minimum``:
      how many starts reached the reported one.
    """

    names: tuple
    values: dict
    errors: dict
    covariance: np.ndarray
    fval: float
    valid: bool
    nfcn: int
    ngrad: int
    edm: float
    params: dict = field(repr=False)
    minos: dict | None = None
    minimizer: str = "migrad"
    seconds: float = 0.0
    at_bound: dict = field(default_factory=dict)
    one_sided: dict = field(default_factory=dict)
    reason: str = ""
    diagnostics: dict = field(default_factory=dict, repr=False)
    versions: dict = field(default_factory=versions, repr=False)
    n_starts: int = 1
    minima: list = field(default_factory=list, repr=False)
    #: the exact Hessian of -2 ln L at each of ``minima`` in the order of ``names`` (the Newton
    #: fits; not written to JSON): the profile scans start each branch along its own tangent
    minima_hessians: tuple = field(default=(), repr=False, compare=False)

    @property
    def n_at_minimum(self) -> int:
        """How many starts of the multi-start design reached the reported minimum (0: it did not pass
        the KKT test from any)."""
        return int(self.minima[0]["n_starts"]) if self.minima and self.valid else 0

    @property
    def correlation(self) -> np.ndarray:
        """Correlation matrix (rows of parameters on a bound are zero, their diagonal 1)."""
        c = np.asarray(self.covariance, dtype=float)
        d = np.sqrt(np.clip(np.diag(c), 0.0, None))
        safe = np.where(d > 0, d, 1.0)
        r = c / np.outer(safe, safe)
        np.fill_diagonal(r, 1.0)
        return r

    def pulls(self, parameters) -> dict:
        """``(value − centre)/σ`` of every constrained parameter (Gaussian constraint terms of
        ``parameters``, a :class:`~nuejax.model.ParameterSet`), fitted or fixed."""
        out = {}
        for p in parameters.parameters:
            if p.constraint is not None and p.name in self.params:
                c, s = p.constraint
                out[p.name] = (float(self.params[p.name]) - c) / s
        return out


    def error_text(self, name: str) -> str:
        if name in self.at_bound:
            one = self.one_sided.get(name)
            sign = "+" if self.at_bound[name] == "lower" else "-"
            shown = "(no Δχ²=1 crossing in bounds)" if one is None else f"{sign}{one:.4g}"
            return f"{shown} one-sided, at {self.at_bound[name]} bound"
        e = self.errors.get(name)
        return "± n/a" if e is None else f"± {e:.4g}"

    def __str__(self) -> str:
        head = (f"{self.minimizer}: -2lnL = {self.fval:.6f}, valid = {self.valid}, EDM = {self.edm:.2e}, "
                f"{self.nfcn} calls, {self.ngrad} gradients, {self.seconds:.2f} s")
        lines = [head] + ([f"  invalid: {self.reason}"] if not self.valid and self.reason else [])
        if self.valid and self.reason:
            lines.append(f"  note: {self.reason}")
        for n in self.names:
            extra = ""
            if self.minos and n in self.minos:
                lo, hi = self.minos[n]
                fmt = lambda v: "none" if v is None else f"{v:+.4g}"  # noqa: E731
                extra = f"  profile (MINOS) [{fmt(lo)}, {fmt(hi)}]"
            lines.append(f"  {n:<16} {self.values[n]:>14.6g} {self.error_text(n)}{extra}")
        if self.n_starts > 1:
            lines.append(f"  {self.n_starts} starts, {self.n_at_minimum} reached this minimum; "
                         f"{len(self.minima)} distinct minim{'um' if len(self.minima) == 1 else 'a'} found")
            for m in self.minima[1:4]:
                lines.append(f"    another at -2lnL + {m['fval'] - self.fval:.4g} ({m['n_starts']} starts)")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Plain JSON-ready dict (no NaN: missing numbers are ``None``)."""
        return {
            "kind": "FitResult", "schema": SCHEMA, "names": list(self.names),
            "values": {k: float(v) for k, v in self.values.items()},
            "errors": {k: json_float(v) for k, v in self.errors.items()},
            "covariance": [[json_float(v) for v in row] for row in np.asarray(self.covariance, dtype=float)],
            "fval": json_float(self.fval), "valid": bool(self.valid), "nfcn": int(self.nfcn), "ngrad": int(self.ngrad),
            "edm": json_float(self.edm),
            "params": {k: (np.asarray(v, dtype=float).tolist()) for k, v in self.params.items()},
            "minos": None if self.minos is None else {k: [json_float(a), json_float(b)] for k, (a, b) in self.minos.items()},
            "minimizer": self.minimizer, "seconds": float(self.seconds), "at_bound": dict(self.at_bound),
            "one_sided": {k: json_float(v) for k, v in self.one_sided.items()}, "reason": self.reason,
            "diagnostics": _jsonable(self.diagnostics), "versions": dict(self.versions),
            "n_starts": int(self.n_starts), "minima": _jsonable(self.minima),
        }

    @classmethod
    def from_dict(cls, d: dict) -> "FitResult":
        _check_schema(d, "FitResult")
        _check_keys(d, "FitResult", ("names", "values", "errors", "covariance", "fval", "valid", "nfcn", "ngrad",
                                     "edm", "params", "minos", "minimizer", "seconds", "at_bound", "one_sided",
                                     "reason", "diagnostics", "versions"))
        return cls(
            names=tuple(d["names"]), values=dict(d["values"]), errors=dict(d["errors"]),
            covariance=np.array([[num_or_nan(v) for v in row] for row in d["covariance"]], dtype=float).reshape(
                len(d["names"]), len(d["names"])),
            # -2 ln L is finite or +inf (saved as null)
            fval=float("inf") if d["fval"] is None else float(d["fval"]), valid=d["valid"],
            nfcn=d["nfcn"], ngrad=d["ngrad"], edm=num_or_nan(d["edm"]),
            params=dict(d["params"]),
            minos=None if d["minos"] is None else {k: tuple(v) for k, v in d["minos"].items()},
            minimizer=d["minimizer"], seconds=d["seconds"], at_bound=dict(d["at_bound"]),
            one_sided=dict(d["one_sided"]), reason=d["reason"], diagnostics=dict(d["diagnostics"]),
            n_starts=int(d.get("n_starts", 1)), minima=list(d.get("minima", [])),
            versions=dict(d["versions"]))


def _check_schema(d, kind):
    if not isinstance(d, dict):
        raise ValueError(f"a saved {kind} is a JSON object, got {type(d).__name__}")
    if d.get("kind") != kind:
        raise ValueError(f"not a saved {kind} (kind = {d.get('kind')!r})")
    if d.get("schema") != SCHEMA:
        raise ValueError(f"saved {kind} has schema {d.get('schema')!r}; this nuejax reads schema {SCHEMA}")


def _check_keys(d, kind, keys):
    missing = [k for k in keys if k not in d]
    if missing:
        raise ValueError(f"saved {kind} lacks {', '.join(missing)}")


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.ndarray, np.generic)):
        return _jsonable(x.tolist())
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


@dataclass
class ScanResult(Saveable):
    """A 1-D profile-likelihood scan of ``name``: -2 ln L minimised over ``profiled`` at every
    point (``converged``: the KKT test of each point's fit), on the lower envelope of the branches
    (:mod:`~nuejax.inference.scan`: ``passes`` of neighbour refits ran, ``refitted`` points were
    lowered by them). ``best``: the best fit of ``name``; ``bounds`` are the parameter's bounds
    (``None`` for an infinite side)."""

    name: str
    values: np.ndarray
    nll: np.ndarray
    nll_min: float
    best: float
    profiled: tuple
    profiled_values: np.ndarray = field(repr=False)
    converged: np.ndarray = field(repr=False)
    seconds: float = 0.0
    unit: str = ""
    bounds: tuple = (None, None)
    versions: dict = field(default_factory=versions, repr=False)
    passes: int = 0
    refitted: int = 0

    @property
    def delta_chi2(self) -> np.ndarray:
        return self.nll - self.nll_min

    def interval(self, cl: float = 0.9) -> Interval:
        """Two-sided confidence set where Δχ² < χ²₁(cl) (2.706 at 90 % CL; Wilks): an
        :class:`~nuejax.inference.intervals.Interval` holding every region (``regions``), whose
        ``(lower, upper)`` is the region that contains the best fit. For a parameter bounded at
        zero whose best fit sits near the bound, use :meth:`upper_limit`."""
        level = two_sided_threshold(cl, 1)
        x, d = self._usable()
        regions = [tuple(r) for r in regions_from_profile(x, d, level)]
        around = region_containing(regions, float(self.best))
        lo, hi = around if around is not None else interval_from_profile(x, d, level)
        conv = f"two-sided, profile Δχ² = {level:.3f} (χ²₁ at {cl:.0%} CL, Wilks)"
        if len(regions) > 1:
            conv += f"; a union of {len(regions)} regions, (lower, upper) the one around the best fit"
        at_edge = self.bounds[0] is not None and np.isclose(float(np.min(self.values)), self.bounds[0]) and \
            self.delta_chi2[int(np.argmin(self.values))] < level
        if lo is None and at_edge:
            conv += f"; Δχ² stays below it down to the lower bound {self.bounds[0]:g}: lower end open, " \
                    "quote upper_limit() instead"
        elif lo is None or hi is None:
            conv += "; a side that does not cross inside the scanned range is None"
        return Interval(lo, hi, cl=cl, convention=conv, threshold=level, regions=regions or [(lo, hi)],
                        best=float(self.best))

    def regions(self, cl: float = 0.9) -> list:
        """All intervals where Δχ² < χ²₁(cl) (:func:`regions_from_profile`; same convention as
        :meth:`interval`, which gives only the one around the minimum)."""
        return regions_from_profile(*self._usable(), two_sided_threshold(cl, 1))

    def branches(self) -> list:
        """The profile's local minima on the scan grid (mirror minima, a second branch), lowest
        first: ``{"value", "delta_chi2"}`` at the grid point (the scan's resolution), the best fit
        itself as the first where the scan holds it."""
        x, d = self._usable()
        if x.size == 0:
            return []
        left = np.concatenate([[np.inf], d[:-1]])
        right = np.concatenate([d[1:], [np.inf]])
        at = np.nonzero((d < left) & (d <= right))[0]
        return [{"value": float(x[i]), "delta_chi2": float(d[i])} for i in at[np.argsort(d[at], kind="stable")]]

    def upper_limit(self, cl: float = 0.9):
        """One-sided upper limit (module docstring): where Δχ² (from the bounded best fit) crosses
        χ²₁(2 cl − 1) above the best fit; 1.642 at 90 % CL. ``None`` if it does not cross inside
        the scanned range."""
        level = one_sided_threshold(cl)
        return interval_from_profile(*self._usable(), level)[1]

    def _usable(self):
        """Scan points whose profile fit converged (a failed fit lies too high and would make an
        interval too narrow); warns when points are left out."""
        ok = np.asarray(self.converged, dtype=bool) & np.isfinite(self.nll)
        if not ok.all():
            import warnings

            warnings.warn(f"scan of {self.name}: {int((~ok).sum())} of {ok.size} profile fits did not converge and "
                          "are left out of the interval", RuntimeWarning, stacklevel=3)
        return np.asarray(self.values)[ok], np.asarray(self.delta_chi2)[ok]

    def at_bound_near(self, value, parameters, *, rtol: float = 1e-6) -> dict:
        """``{name: "lower"|"upper"}`` of the profiled parameters that sit on a bound of
        ``parameters`` (a :class:`~nuejax.model.ParameterSet`) in the converged profile fits at the
        two scan points around ``value`` (e.g. an upper limit): a limit set where a nuisance is held
        at its bound depends on that bound (a rate that cannot go below zero), which a reader
        should be told. Empty for ``value`` None or outside the scan."""
        if value is None:
            return {}
        x = np.asarray(self.values, dtype=float)
        ok = np.asarray(self.converged, dtype=bool)
        j = int(np.searchsorted(x, float(value)))
        near = [i for i in (j - 1, j) if 0 <= i < x.size and ok[i]]
        out = {}
        pv = np.asarray(self.profiled_values, dtype=float)
        for k, name in enumerate(self.profiled):
            if name not in parameters:
                continue
            p = parameters[name]
            for i in near:
                v = pv[i, k]
                tol = rtol * max(1.0, abs(v))
                if np.isfinite(p.lower) and abs(v - p.lower) <= tol:
                    out[name] = "lower"
                elif np.isfinite(p.upper) and abs(v - p.upper) <= tol:
                    out[name] = "upper"
        return out

    @property
    def upper_limit_convention(self) -> str:
        return ("one-sided upper limit with the boundary-aware statistic q~ (Cowan et al., EPJC 71 (2011) 1554, "
                "Eq. 16): profile Δχ² from the best fit inside the physical region = χ²₁ quantile at 2CL−1 "
                "(1.642 at 90 % CL)")


    def to_dict(self) -> dict:
        return {"kind": "ScanResult", "schema": SCHEMA, "name": self.name, "values": json_array(self.values),
                "nll": json_array(self.nll), "nll_min": json_float(self.nll_min), "best": json_float(self.best),
                "profiled": list(self.profiled), "profiled_values": json_array(self.profiled_values),
                "converged": np.asarray(self.converged, dtype=bool).tolist(), "seconds": float(self.seconds),
                "unit": self.unit, "bounds": list(self.bounds), "versions": dict(self.versions),
                "passes": int(self.passes), "refitted": int(self.refitted),
                "interval_90": list(self.interval(0.9)), "interval_90_convention": self.interval(0.9).convention,
                "regions_90": [list(r) for r in self.interval(0.9).regions], "branches": self.branches()}

    @classmethod
    def from_dict(cls, d: dict) -> "ScanResult":
        _check_schema(d, "ScanResult")
        return cls(d["name"], array_from_json(d["values"]), array_from_json(d["nll"]), num_or_nan(d["nll_min"]), num_or_nan(d["best"]),
                   tuple(d["profiled"]),
                   array_from_json(d["profiled_values"]), np.asarray(d["converged"], dtype=bool), d["seconds"], d["unit"],
                   tuple(d["bounds"]), dict(d["versions"]), int(d.get("passes", 0)), int(d.get("refitted", 0)))


def json_array(a):
    return [[json_float(v) for v in row] for row in np.asarray(a, dtype=float)] if np.ndim(a) == 2 else \
        [json_float(v) for v in np.asarray(a, dtype=float).ravel()]


def array_from_json(a):
    return np.array([[num_or_nan(v) for v in row] for row in a] if a and isinstance(a[0], list) else [num_or_nan(v) for v in a],
                    dtype=float)


@dataclass
class Scan2DResult(Saveable):
    """A 2-D profile-likelihood scan on the grid ``values_x`` × ``values_y`` (``nll[ix, iy]``) on the
    lower envelope of the branches (``passes``, ``refitted`` as for :class:`ScanResult`); contours
    at χ²₂(cl) (4.605 at 90 % CL, Wilks: two degrees of freedom); ``best`` the best fit."""

    names: tuple
    values_x: np.ndarray
    values_y: np.ndarray
    nll: np.ndarray
    nll_min: float
    profiled: tuple
    converged: np.ndarray = field(repr=False)
    seconds: float = 0.0
    versions: dict = field(default_factory=versions, repr=False)
    best: tuple = (None, None)
    passes: int = 0
    refitted: int = 0
    #: each point's profiled end point (n_x, n_y, len(profiled)); None in files written before it
    profiled_values: np.ndarray | None = field(default=None, repr=False)
    #: points settled by their seeds at a lower bound (:func:`~nuejax.inference.scan.profile_scan_2d`)
    certified: int = 0

    @property
    def delta_chi2(self) -> np.ndarray:
        return self.nll - self.nll_min

    def to_dict(self) -> dict:
        return {"kind": "Scan2DResult", "schema": SCHEMA, "names": list(self.names), "values_x": json_array(self.values_x),
                "values_y": json_array(self.values_y), "nll": json_array(self.nll), "nll_min": json_float(self.nll_min),
                "profiled": list(self.profiled), "converged": np.asarray(self.converged, dtype=bool).tolist(),
                "seconds": float(self.seconds), "versions": dict(self.versions), "best": [json_float(b) for b in self.best],
                "passes": int(self.passes), "refitted": int(self.refitted), "certified": int(self.certified),
                **({} if self.profiled_values is None or not len(self.profiled) else  # a row per point, x-major
                   {"profiled_values": json_array(np.reshape(self.profiled_values, (-1, len(self.profiled))))}),
                "convention": f"two-parameter profile Δχ² contours (χ²₂ quantile, Wilks; {DCHI2_90[2]:.3f} at 90 % CL)"}

    @classmethod
    def from_dict(cls, d: dict) -> "Scan2DResult":
        _check_schema(d, "Scan2DResult")
        vx, vy = array_from_json(d["values_x"]), array_from_json(d["values_y"])
        pv = d.get("profiled_values")
        pv = None if pv is None else array_from_json(pv).reshape(len(vx), len(vy), len(d["profiled"]))
        return cls(tuple(d["names"]), vx, vy, array_from_json(d["nll"]), num_or_nan(d["nll_min"]),
                   tuple(d["profiled"]), np.asarray(d["converged"], dtype=bool), d["seconds"], dict(d["versions"]),
                   tuple(d.get("best", (None, None))), int(d.get("passes", 0)), int(d.get("refitted", 0)),
                   pv, int(d.get("certified", 0)))


@dataclass(frozen=True)
class BatchFitResult:
    """Fits of a batch of data sets: one array per fitted parameter (``values[name]``, shape (n,)),
    ``fval``, ``converged`` (the KKT test), ``n_iter``, ``edm``, ``status`` (see
    :data:`~nuejax.inference.newton.STATUS`), and per parameter a bool array ``at_lower`` /
    ``at_upper`` (on that bound with an outward gradient). Multi-start (:mod:`~nuejax.inference.starts`):
    ``n_starts`` starts per data set, ``n_at_minimum`` (n,) how many reached the reported minimum,
    ``second_minimum_gap`` (n,) the Δ(−2 ln L) to the lowest other converged end point (+inf: none)."""

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
    n_starts: int = 1
    n_at_minimum: np.ndarray | None = None
    second_minimum_gap: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.fval.shape[0])

    def to_dict(self) -> dict:
        arr = lambda a: np.asarray(a).tolist()  # noqa: E731
        return {"names": list(self.names), "values": {k: arr(v) for k, v in self.values.items()},
                "fval": arr(self.fval), "converged": arr(self.converged), "n_iter": arr(self.n_iter),
                "edm": [None if not np.isfinite(e) else float(e) for e in self.edm], "status": arr(self.status),
                "at_lower": {k: arr(v) for k, v in self.at_lower.items()},
                "at_upper": {k: arr(v) for k, v in self.at_upper.items()}, "seconds": self.seconds,
                "diagnostics": self.diagnostics, "n_starts": self.n_starts,
                "n_at_minimum": None if self.n_at_minimum is None else arr(self.n_at_minimum),
                "second_minimum_gap": None if self.second_minimum_gap is None else json_array(self.second_minimum_gap)}

    def __str__(self) -> str:
        n = len(self)
        conv = int(np.sum(self.converged))
        lines = [f"batch_fit: {n} data sets, {conv} converged (KKT), median {np.median(self.n_iter):.0f} iterations, "
                 f"{self.n_starts} start{'s' if self.n_starts > 1 else ''} each, {self.seconds:.2f} s"]
        if self.second_minimum_gap is not None:
            close = int(np.sum(np.asarray(self.second_minimum_gap) < 1.0))
            if close:
                lines.append(f"  {close} data set(s) with a second minimum within 1 of the best in -2 ln L")
        for name in self.names:
            v = self.values[name]
            nb = int(np.sum(self.at_lower[name] | self.at_upper[name]))
            lines.append(f"  {name:<16} mean {np.mean(v):.6g}  std {np.std(v):.4g}" + (f"  ({nb} on a bound)" if nb else ""))
        return "\n".join(lines)


def json_pair(values) -> list:
    """Two numbers (an interval) as strict JSON: None for a missing or non-finite end."""
    return [json_float(v) for v in values]


@dataclass(frozen=True)
class FeldmanCousinsResult(Saveable):
    """A Feldman–Cousins construction on a grid (module docstring) in one or two parameters.

    Per grid point (``points``, shape (G, k); a 2-D grid is x-major: ``points.reshape(nx, ny, 2)``):
    ``t_obs`` the observed statistic, ``t_crit`` the critical value (the smallest t whose fraction
    of toys at or below it reaches CL: an order statistic, ties included, so the acceptance region
    holds at least CL of the toys on discrete data too) and ``t_crit_err`` its statistical
    uncertainty (the belt's Monte Carlo uncertainty), ``p_values`` (fraction of toys with
    t ≥ t_obs), ``accepted`` (t_obs ≤ t_crit), ``n_valid`` toys whose two fits passed the KKT test
    (only these count), ``discrete`` (the toys' statistic takes repeated values there),
    ``n_branch`` (with the critical values conditioned on the branch: the valid toys whose
    conditional fit stayed on the generating point's branch, the ones t_crit and the p-value use;
    None when every valid toy counts).
    ``regions``: 1-D, every accepted interval, a union; each end lies where acceptance changes:
    interpolated between the last accepted and the first rejected grid point where the statistic
    is continuous, on the last accepted point where the problem is discrete (no interpolation
    locates a jump: refine the grid there). An end on the first or last grid point stays there:
    widen the grid if it is not the parameter's bound. ``interval``: the region that contains the
    best fit.
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
    discrete: np.ndarray | None = None
    n_branch: np.ndarray | None = None

    @property
    def regions(self) -> list:
        if len(self.poi) != 1:
            raise ValueError("regions are for a 1-D construction; use accepted_grid for 2-D")
        return crossings(np.asarray(self.axes[0]), np.asarray(self.t_obs) - np.asarray(self.t_crit) - 1e-6,
                         exact=self.discrete)

    @property
    def interval(self) -> tuple:
        """1-D: (lower, upper) of the region of :attr:`regions` that contains the best fit (the
        nearest one where the best fit lies between grid points); (None, None) if nothing is accepted."""
        r = self.regions
        if not r:
            return (None, None)
        around = region_containing(r, float(self.best_fit[0]))
        if around is not None:
            return around
        return min(r, key=lambda reg: min(abs(reg[0] - self.best_fit[0]), abs(reg[1] - self.best_fit[0])))

    @property
    def accepted_grid(self) -> np.ndarray:
        return np.asarray(self.accepted).reshape(tuple(len(a) for a in self.axes))

    def to_dict(self) -> dict:
        return {"kind": type(self).__name__, "poi": list(self.poi), "axes": [np.asarray(a).tolist() for a in self.axes],
                "points": np.asarray(self.points).tolist(), "t_obs": json_array(self.t_obs), "t_crit": json_array(self.t_crit),
                "t_crit_err": json_array(self.t_crit_err), "p_values": json_array(self.p_values),
                "accepted": np.asarray(self.accepted).tolist(), "n_valid": np.asarray(self.n_valid).tolist(),
                "n_toys": self.n_toys, "cl": self.cl, "best_fit": list(self.best_fit),
                "bounds": [[None if not np.isfinite(v) else float(v) for v in b] for b in self.bounds],
                "seconds": self.seconds, "convention": self.convention,
                "versions": self.versions,
                "discrete": None if self.discrete is None else np.asarray(self.discrete, dtype=bool).tolist(),
                "n_branch": None if self.n_branch is None else np.asarray(self.n_branch).tolist(),
                **({"interval": json_pair(self.interval), "regions": [json_pair(r) for r in self.regions]}
                   if len(self.poi) == 1 else {})}

    @classmethod
    def from_dict(cls, d: dict):
        return cls(tuple(d["poi"]), tuple(np.asarray(a, dtype=float) for a in d["axes"]),
                   np.asarray(d["points"], dtype=float), array_from_json(d["t_obs"]), array_from_json(d["t_crit"]), array_from_json(d["t_crit_err"]),
                   array_from_json(d["p_values"]), np.asarray(d["accepted"], dtype=bool), np.asarray(d["n_valid"], dtype=int),
                   int(d["n_toys"]), float(d["cl"]), tuple(d["best_fit"]),
                   tuple((-np.inf if b[0] is None else float(b[0]), np.inf if b[1] is None else float(b[1]))
                         for b in d["bounds"]), float(d["seconds"]), d["convention"],
                   d.get("versions", {}), None if d.get("discrete") is None else np.asarray(d["discrete"], dtype=bool),
                   None if d.get("n_branch") is None else np.asarray(d["n_branch"], dtype=int))

    def __str__(self) -> str:
        head = f"Feldman–Cousins {self.cl:.0%} CL on {' x '.join(self.poi)}: {len(self.points)} points x {self.n_toys} toys"
        if len(self.poi) == 1:
            regs = ", ".join(f"[{a:.4g}, {b:.4g}]" for a, b in self.regions) or "empty"
            return f"{head}\n  accepted: {regs}  (best fit {self.best_fit[0]:.4g})"
        return f"{head}\n  accepted: {int(np.sum(self.accepted))} of {len(self.points)} grid points"


@dataclass(frozen=True)
class CLsResult(Saveable):
    """CLs upper limit on ``name`` (module docstring): per tested value ``values``, the observed
    q̃ (``q_obs``), ``clsb`` = p_{s+b}, ``clb`` = 1 − p_b and ``cls``; ``limit`` where CLs falls to
    1 − CL (log-linear interpolation; ``None`` if it does not inside the grid); ``expected``:
    the expected limits at the background-only outcomes −2σ … +2σ (keys ``"-2"`` … ``"2"``).
    ``method``: ``"asymptotic"`` or ``"toys"``. ``limit_sb`` and ``expected_sb``: the same from
    p_{s+b} alone (CLs+b), the one-sided Neyman construction with q̃ (no CLs protection).
    ``feldman_cousins``: the Feldman–Cousins interval from the same toys, where asked for
    (:func:`~nuejax.inference.cls_upper_limit`), else None."""

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
    limit_sb: float | None = None
    expected_sb: dict = field(default_factory=dict)
    feldman_cousins: FeldmanCousinsResult | None = None

    def to_dict(self) -> dict:
        return {"kind": type(self).__name__, "name": self.name, "values": json_array(self.values), "q_obs": json_array(self.q_obs),
                "clsb": json_array(self.clsb), "clb": json_array(self.clb), "cls": json_array(self.cls),
                "limit": None if self.limit is None else float(self.limit),
                "expected": {k: (None if v is None else float(v)) for k, v in self.expected.items()}, "cl": self.cl,
                "method": self.method, "n_toys": self.n_toys, "seconds": self.seconds, "convention": self.convention,
                "versions": self.versions, "limit_sb": None if self.limit_sb is None else float(self.limit_sb),
                "expected_sb": {k: (None if v is None else float(v)) for k, v in self.expected_sb.items()},
                "feldman_cousins": None if self.feldman_cousins is None else self.feldman_cousins.to_dict()}

    @classmethod
    def from_dict(cls, d: dict):
        return cls(d["name"], array_from_json(d["values"]), array_from_json(d["q_obs"]), array_from_json(d["clsb"]), array_from_json(d["clb"]), array_from_json(d["cls"]),
                   d["limit"], dict(d["expected"]), float(d["cl"]), d["method"], int(d["n_toys"]), float(d["seconds"]),
                   d["convention"], d.get("versions", {}), d.get("limit_sb"), dict(d.get("expected_sb", {})),
                   None if d.get("feldman_cousins") is None else FeldmanCousinsResult.from_dict(d["feldman_cousins"]))

    def __str__(self) -> str:
        lim = "not reached in the grid" if self.limit is None else f"{self.limit:.4g}"
        exp = self.expected.get("0")
        return (f"CLs {self.cl:.0%} CL upper limit on {self.name} ({self.method}): {lim}"
                + ("" if exp is None else f"  (expected median {exp:.4g})"))


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
    (the exact Neyman construction). Per toy: ``t``, the statistic at the truth (NaN without a valid
    fit), and ``nuisance_hat``, the conditional fit's values of ``nuisances`` there (with inner toys,
    their generating point), to see where coverage is lost or gained; ``t_crit_pooled``, where the
    critical values were conditioned on the branch (:func:`~nuejax.inference.coverage`), the ones
    every valid inner toy gives."""

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
    t: np.ndarray | None = None
    nuisances: tuple = ()
    nuisance_hat: np.ndarray | None = None
    t_crit_pooled: np.ndarray | None = None

    def to_dict(self) -> dict:
        return {"kind": type(self).__name__, "poi": list(self.poi), "truth": dict(self.truth), "n_toys": self.n_toys,
                "n_valid": self.n_valid, "n_covered": self.n_covered, "fraction": self.fraction, "error": self.error,
                "cl": self.cl, "inner_toys": self.inner_toys, "t_crit": json_array(self.t_crit), "seconds": self.seconds,
                "versions": self.versions, "t": None if self.t is None else json_array(self.t),
                "nuisances": list(self.nuisances),
                "nuisance_hat": None if self.nuisance_hat is None else json_array(self.nuisance_hat),
                "t_crit_pooled": None if self.t_crit_pooled is None else json_array(self.t_crit_pooled)}

    @classmethod
    def from_dict(cls, d: dict):
        return cls(tuple(d["poi"]), dict(d["truth"]), int(d["n_toys"]), int(d["n_valid"]), int(d["n_covered"]),
                   float(d["fraction"]), float(d["error"]), float(d["cl"]), int(d["inner_toys"]), array_from_json(d["t_crit"]),
                   float(d["seconds"]), d.get("versions", {}),
                   None if d.get("t") is None else array_from_json(d["t"]), tuple(d.get("nuisances", ())),
                   None if d.get("nuisance_hat") is None else array_from_json(d["nuisance_hat"]),
                   None if d.get("t_crit_pooled") is None else array_from_json(d["t_crit_pooled"]))

    def __str__(self) -> str:
        return (f"coverage of the {self.cl:.0%} CL Feldman–Cousins {' x '.join(self.poi)} at "
                f"{ {k: self.truth[k] for k in self.poi} }: {self.fraction:.4f} ± {self.error:.4f} "
                f"({self.n_covered}/{self.n_valid} toys)")


@dataclass(frozen=True)
class GoodnessOfFit:
    """Deviance ``deviance`` with ``ndof`` degrees of freedom, asymptotic ``p_chi2`` and, when
    toys were run, ``p_toys`` from ``n_toys_converged`` of ``n_toys`` toys (their deviances in
    ``toy_deviances``)."""

    deviance: float
    ndof: int
    p_chi2: float
    p_toys: float | None = None
    n_toys: int = 0
    n_toys_converged: int = 0
    toy_deviances: tuple = field(default=(), repr=False)

    def to_dict(self) -> dict:
        return {"deviance": self.deviance, "ndof": self.ndof, "p_chi2": self.p_chi2, "p_toys": self.p_toys,
                "n_toys": self.n_toys, "n_toys_converged": self.n_toys_converged,
                "toy_deviances": list(self.toy_deviances)}

    @classmethod
    def from_dict(cls, d: dict) -> "GoodnessOfFit":
        _check_keys(d, "GoodnessOfFit", ("deviance", "ndof", "p_chi2", "p_toys", "n_toys", "n_toys_converged",
                                         "toy_deviances"))
        return cls(d["deviance"], d["ndof"], d["p_chi2"], d["p_toys"], d["n_toys"], d["n_toys_converged"],
                   tuple(d["toy_deviances"]))


def _pair(v):
    return None if v is None else [json_float(v[0]), json_float(v[1])]


def _tuple(v):
    return None if v is None else tuple(None if a is None else float(a) for a in v)


@dataclass(frozen=True)
class ImpactsResult(Saveable):
    """Pulls, constraints and impacts of every fitted parameter other than ``poi``
    (:mod:`~nuejax.inference.impacts`), ``names`` ranked by the larger absolute post-fit impact. ``prefit[n]`` and
    ``postfit[n]`` are ``(down, up)``: the shift of the best-fit ``poi`` with ``n`` held at its
    lower and upper shifted value (``shifts[n]["prefit"|"postfit"]``); None where not computed
    (no pre-fit width; a side beyond a bound; a refit that failed, counted in ``n_failed``)."""

    poi: str
    poi_value: float
    poi_error: float | None
    names: tuple
    pulls: dict
    constraints: dict
    prefit: dict
    postfit: dict
    shifts: dict
    fval: float
    n_refits: int
    n_failed: int
    seconds: float = 0.0
    versions: dict = field(default_factory=versions, repr=False)

    def ranked(self, top: int | None = None) -> tuple:
        """The ``top`` highest-ranked names (all by default)."""
        return self.names if top is None else self.names[:int(top)]

    def to_dict(self) -> dict:
        return {"kind": type(self).__name__, "poi": self.poi, "poi_value": self.poi_value,
                "poi_error": json_float(self.poi_error), "names": list(self.names),
                "pulls": {k: json_float(v) for k, v in self.pulls.items()},
                "constraints": {k: json_float(v) for k, v in self.constraints.items()},
                "prefit": {k: _pair(v) for k, v in self.prefit.items()},
                "postfit": {k: _pair(v) for k, v in self.postfit.items()},
                "shifts": {k: {w: _pair(v) for w, v in d.items()} for k, d in self.shifts.items()},
                "fval": self.fval, "n_refits": self.n_refits, "n_failed": self.n_failed, "seconds": self.seconds,
                "versions": self.versions}

    @classmethod
    def from_dict(cls, d: dict) -> "ImpactsResult":
        return cls(d["poi"], float(d["poi_value"]), d["poi_error"], tuple(d["names"]), dict(d["pulls"]),
                   dict(d["constraints"]), {k: _tuple(v) for k, v in d["prefit"].items()},
                   {k: _tuple(v) for k, v in d["postfit"].items()},
                   {k: {w: _tuple(v) for w, v in s.items()} for k, s in d["shifts"].items()}, float(d["fval"]),
                   int(d["n_refits"]), int(d["n_failed"]), float(d["seconds"]), d.get("versions", {}))

    def __str__(self) -> str:
        def f(v):
            return "    n/a" if v is None else f"{v:+.3g}"

        def pair(n, what, table):  # "bound": no shift that side (a bound); "failed": the refit did not converge
            v, sh = table.get(n), self.shifts.get(n, {}).get(what)
            if v is None:
                return f"{'':>10} {'':>10}"
            cells = ["bound" if sh is not None and sh[k] is None else "failed" if v[k] is None else f(v[k])
                     for k in (0, 1)]
            return f"{cells[0]:>10} {cells[1]:>10}"

        err = "n/a" if self.poi_error is None else f"{self.poi_error:.4g}"
        lines = [f"impacts on {self.poi} = {self.poi_value:.4g} ± {err} (Hessian); {self.n_refits} refits in one "
                 f"launch, {self.n_failed} failed ('bound': a parameter on a bound is shifted inward only)",
                 f"{'parameter':<24}{'pull':>8}{'constr.':>9} {'post down':>10} {'post up':>10} "
                 f"{'pre down':>10} {'pre up':>10}"]
        for n in self.names:
            p, c = self.pulls.get(n), self.constraints.get(n)
            lines.append(f"{n:<24}{'' if p is None else f'{p:+.2f}':>8}{'' if c is None else f'{c:.2f}':>9} "
                         f"{pair(n, 'postfit', self.postfit)} {pair(n, 'prefit', self.prefit)}")
        return "\n".join(lines)
