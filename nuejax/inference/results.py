r"""Typed result containers for fits and scans: plain data that prints, plots and round-trips
through JSON (``to_dict``/``from_dict``, ``save``/``load``).

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

__all__ = ["FitResult", "ScanResult", "Scan2DResult", "Interval", "interval_from_profile", "two_sided_threshold",
           "one_sided_threshold", "versions", "load_result"]

#: Delta chi^2 thresholds at 90 % CL for one and two parameters (Wilks).
DCHI2_90 = {1: 2.705543454095404, 2: 4.605170185988091}
SCHEMA = 1


def two_sided_threshold(cl: float, ndof: int = 1) -> float:
    """:math:`\\chi^2_{n}` quantile at ``cl`` (2.706 for one parameter at 90 % CL)."""
    from scipy.stats import chi2

    _check_cl(cl)
    return float(chi2.ppf(cl, ndof))


def one_sided_threshold(cl: float) -> float:
    """:math:`\\chi^2_1` quantile at 2 CL − 1 (1.642 at 90 % CL): one-sided limit with
    :math:`\\tilde q_\\mu` (module docstring)."""
    from scipy.stats import chi2

    _check_cl(cl)
    if cl <= 0.5:
        raise ValueError(f"a one-sided limit needs cl > 0.5, got {cl}")
    return float(chi2.ppf(2.0 * cl - 1.0, 1))


def _check_cl(cl):
    if not (isinstance(cl, (int, float)) and 0.0 < cl < 1.0):
        raise ValueError(f"confidence level must be a number in (0, 1), got {cl!r}")


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
    """Load any saved :class:`FitResult`, :class:`ScanResult` or :class:`Scan2DResult`."""
    d = json.loads(Path(path).read_text())
    kinds = {c.__name__: c for c in (FitResult, ScanResult, Scan2DResult)}
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

    def plot_correlation(self, ax=None, **kw):
        """Correlation-matrix heat map (:func:`nuejax.plotting.plot_correlation`)."""
        from ..plotting import plot_correlation

        return plot_correlation(self, ax=ax, **kw)

    def plot_pulls(self, parameters, ax=None, **kw):
        """Pulls of the constrained parameters (:func:`nuejax.plotting.plot_pulls`)."""
        from ..plotting import plot_pulls

        return plot_pulls(self, parameters, ax=ax, **kw)

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
                fmt = lambda v: "invalid" if v is None else f"{v:+.4g}"  # noqa: E731
                extra = f"  MINOS [{fmt(lo)}, {fmt(hi)}]"
            lines.append(f"  {n:<16} {self.values[n]:>14.6g} {self.error_text(n)}{extra}")
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


class Interval(tuple):
    """``(lower, upper)`` that unpacks like a tuple and says how it was obtained: ``cl``,
    ``convention`` (text), ``threshold`` (the Δχ² level). A side is ``None`` when the profile
    does not cross the threshold inside the scanned range."""

    def __new__(cls, lower, upper, *, cl: float, convention: str, threshold: float):
        obj = super().__new__(cls, (lower, upper))
        obj.cl, obj.convention, obj.threshold = cl, convention, threshold
        return obj

    def __reduce__(self):
        return (_make_interval, (self[0], self[1], self.cl, self.convention, self.threshold))

    @property
    def lower(self):
        return self[0]

    @property
    def upper(self):
        return self[1]

    def __repr__(self) -> str:
        return f"Interval({self[0]!r}, {self[1]!r}, cl={self.cl}, {self.convention})"


def _make_interval(lo, hi, cl, convention, threshold):
    return Interval(lo, hi, cl=cl, convention=convention, threshold=threshold)


def interval_from_profile(x, dchi2, level):
    """Where the profile crosses ``level``, by linear interpolation around its minimum.

    Returns ``(lower, upper)``; a side that does not cross inside the scanned range is ``None``.
    """
    x = np.asarray(x)
    d = np.asarray(dchi2)
    i0 = int(np.argmin(d))
    lo = hi = None
    for i in range(i0, 0, -1):
        if d[i - 1] >= level > d[i] or d[i - 1] > level >= d[i]:
            lo = float(x[i - 1] + (level - d[i - 1]) * (x[i] - x[i - 1]) / (d[i] - d[i - 1]))
            break
    for i in range(i0, len(x) - 1):
        if d[i] < level <= d[i + 1] or d[i] <= level < d[i + 1]:
            hi = float(x[i] + (level - d[i]) * (x[i + 1] - x[i]) / (d[i + 1] - d[i]))
            break
    return lo, hi


def regions_from_profile(x, dchi2, level) -> list:
    """Every interval where the profile lies below ``level`` (a list of ``[lower, upper]``, ends
    by linear interpolation, ``None`` where the region reaches the end of the scanned range): a
    profile with two minima below ``level`` (the ε^L_ee sign degeneracy) gives two regions."""
    x = np.asarray(x, dtype=float)
    d = np.asarray(dchi2, dtype=float)
    inside = d < level
    out, start, in_region = [], None, False
    for i in range(len(x)):
        if inside[i] and not in_region:
            in_region = True
            start = None if i == 0 else float(x[i - 1] + (level - d[i - 1]) * (x[i] - x[i - 1]) / (d[i] - d[i - 1]))
        if in_region and (i == len(x) - 1 or not inside[i + 1]):
            end = None if i == len(x) - 1 else float(x[i] + (level - d[i]) * (x[i + 1] - x[i]) / (d[i + 1] - d[i]))
            out.append([start, end])
            in_region = False
    return out


@dataclass
class ScanResult(Saveable):
    """A 1-D profile-likelihood scan of ``name``: -2 ln L minimised over ``profiled`` at every
    point (``converged``: the KKT test of each point's fit). ``bounds`` are the parameter's bounds
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

    @property
    def delta_chi2(self) -> np.ndarray:
        return self.nll - self.nll_min

    def interval(self, cl: float = 0.9) -> Interval:
        """Two-sided interval: where Δχ² crosses χ²₁(cl) (2.706 at 90 % CL; Wilks). For a
        parameter bounded at zero whose best fit sits near the bound, use :meth:`upper_limit`."""
        level = two_sided_threshold(cl, 1)
        x, d = self._usable()
        lo, hi = interval_from_profile(x, d, level)
        conv = f"two-sided, profile Δχ² = {level:.3f} (χ²₁ at {cl:.0%} CL, Wilks)"
        at_edge = self.bounds[0] is not None and np.isclose(float(np.min(self.values)), self.bounds[0]) and \
            self.delta_chi2[int(np.argmin(self.values))] < level
        if lo is None and at_edge:
            conv += f"; Δχ² stays below it down to the lower bound {self.bounds[0]:g}: lower end open, " \
                    "quote upper_limit() instead"
        elif lo is None or hi is None:
            conv += "; a side that does not cross inside the scanned range is None"
        return Interval(lo, hi, cl=cl, convention=conv, threshold=level)

    def regions(self, cl: float = 0.9) -> list:
        """All intervals where Δχ² < χ²₁(cl) (:func:`regions_from_profile`; same convention as
        :meth:`interval`, which gives only the one around the minimum)."""
        return regions_from_profile(*self._usable(), two_sided_threshold(cl, 1))

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

    @property
    def upper_limit_convention(self) -> str:
        return ("one-sided upper limit with the boundary-aware statistic q~ (Cowan et al., EPJC 71 (2011) 1554, "
                "Eq. 16): profile Δχ² from the best fit inside the physical region = χ²₁ quantile at 2CL−1 "
                "(1.642 at 90 % CL)")

    def plot(self, ax=None, *, injected=None, cl: float = 0.9, label=None, one_sided: bool | None = None):
        """Δχ² against the scanned value, with the CL line (one-sided when the parameter is
        bounded below and ``one_sided`` is true or left ``None`` with the best fit on that bound)."""
        from ..plotting import plot_scan

        return plot_scan(self, ax=ax, injected=injected, cl=cl, label=label, one_sided=one_sided)

    def to_dict(self) -> dict:
        return {"kind": "ScanResult", "schema": SCHEMA, "name": self.name, "values": json_array(self.values),
                "nll": json_array(self.nll), "nll_min": json_float(self.nll_min), "best": json_float(self.best),
                "profiled": list(self.profiled), "profiled_values": json_array(self.profiled_values),
                "converged": np.asarray(self.converged, dtype=bool).tolist(), "seconds": float(self.seconds),
                "unit": self.unit, "bounds": list(self.bounds), "versions": dict(self.versions),
                "interval_90": list(self.interval(0.9)), "interval_90_convention": self.interval(0.9).convention}

    @classmethod
    def from_dict(cls, d: dict) -> "ScanResult":
        _check_schema(d, "ScanResult")
        return cls(d["name"], array_from_json(d["values"]), array_from_json(d["nll"]), num_or_nan(d["nll_min"]), num_or_nan(d["best"]),
                   tuple(d["profiled"]),
                   array_from_json(d["profiled_values"]), np.asarray(d["converged"], dtype=bool), d["seconds"], d["unit"],
                   tuple(d["bounds"]), dict(d["versions"]))


def json_array(a):
    return [[json_float(v) for v in row] for row in np.asarray(a, dtype=float)] if np.ndim(a) == 2 else \
        [json_float(v) for v in np.asarray(a, dtype=float).ravel()]


def array_from_json(a):
    return np.array([[num_or_nan(v) for v in row] for row in a] if a and isinstance(a[0], list) else [num_or_nan(v) for v in a],
                    dtype=float)


@dataclass
class Scan2DResult(Saveable):
    """A 2-D profile-likelihood scan on the grid ``values_x`` × ``values_y`` (``nll[ix, iy]``);
    contours at χ²₂(cl) (4.605 at 90 % CL, Wilks)."""

    names: tuple
    values_x: np.ndarray
    values_y: np.ndarray
    nll: np.ndarray
    nll_min: float
    profiled: tuple
    converged: np.ndarray = field(repr=False)
    seconds: float = 0.0
    versions: dict = field(default_factory=versions, repr=False)

    @property
    def delta_chi2(self) -> np.ndarray:
        return self.nll - self.nll_min

    def plot(self, ax=None, *, cl: float = 0.9, injected=None):
        from ..plotting import plot_scan_2d

        return plot_scan_2d(self, ax=ax, cl=cl, injected=injected)

    def to_dict(self) -> dict:
        return {"kind": "Scan2DResult", "schema": SCHEMA, "names": list(self.names), "values_x": json_array(self.values_x),
                "values_y": json_array(self.values_y), "nll": json_array(self.nll), "nll_min": json_float(self.nll_min),
                "profiled": list(self.profiled), "converged": np.asarray(self.converged, dtype=bool).tolist(),
                "seconds": float(self.seconds), "versions": dict(self.versions),
                "convention": f"two-parameter profile Δχ² contours (χ²₂ quantile, Wilks; {DCHI2_90[2]:.3f} at 90 % CL)"}

    @classmethod
    def from_dict(cls, d: dict) -> "Scan2DResult":
        _check_schema(d, "Scan2DResult")
        return cls(tuple(d["names"]), array_from_json(d["values_x"]), array_from_json(d["values_y"]), array_from_json(d["nll"]), num_or_nan(d["nll_min"]),
                   tuple(d["profiled"]), np.asarray(d["converged"], dtype=bool), d["seconds"], dict(d["versions"]))

