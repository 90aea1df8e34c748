"""Typed result containers for fits and scans (they print and plot themselves)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["FitResult", "ScanResult", "Scan2DResult", "interval_from_profile"]

#: Delta chi^2 thresholds at 90 % CL for one and two parameters (Wilks).
DCHI2_90 = {1: 2.705543454095404, 2: 4.605170185988091}


@dataclass
class FitResult:
    """Result of a fit: best-fit values and errors of the free parameters, covariance (from the
    autodiff Hessian, cov = 2 H^-1 for -2 ln L), minimum, call counts and validity."""

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

    @property
    def correlation(self) -> np.ndarray:
        d = np.sqrt(np.diag(self.covariance))
        return self.covariance / np.outer(d, d)

    def __str__(self) -> str:
        lines = [f"{self.minimizer}: -2lnL = {self.fval:.6f}, valid = {self.valid}, EDM = {self.edm:.2e}, "
                 f"{self.nfcn} calls, {self.ngrad} gradients, {self.seconds:.2f} s"]
        for n in self.names:
            extra = ""
            if self.minos and n in self.minos:
                lo, hi = self.minos[n]
                extra = f"  MINOS [{lo:+.4g}, {hi:+.4g}]"
            lines.append(f"  {n:<16} {self.values[n]:>14.6g} ± {self.errors[n]:<12.4g}{extra}")
        return "\n".join(lines)


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


@dataclass
class ScanResult:
    """A 1-D profile-likelihood scan of ``name``: -2 ln L minimised over ``profiled`` at every point."""

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

    @property
    def delta_chi2(self) -> np.ndarray:
        return self.nll - self.nll_min

    def interval(self, cl: float = 0.9):
        """Confidence interval from Delta chi^2 (2.706 at 90 % CL for one parameter)."""
        from scipy.stats import chi2

        return interval_from_profile(self.values, self.delta_chi2, float(chi2.ppf(cl, 1)))

    def plot(self, ax=None, *, injected=None, cl: float = 0.9, label=None):
        import matplotlib.pyplot as plt
        from scipy.stats import chi2

        ax = ax or plt.gca()
        ax.plot(self.values, self.delta_chi2, "-", label=label or "profile likelihood")
        ax.axhline(chi2.ppf(cl, 1), ls=":", color="gray", label=f"{cl:.0%} CL")
        if injected is not None:
            ax.axvline(injected, ls="--", color="k", lw=1, label=f"injected {injected:g}")
        ax.set_xlabel(f"{self.name}" + (f" [{self.unit}]" if self.unit else ""))
        ax.set_ylabel(r"$\Delta\chi^2 = -2\Delta\ln\mathcal{L}$")
        # Delta chi^2 of mu_nu grows like mu^4: show the region that matters, not the far wall.
        level = chi2.ppf(cl, 1)
        ax.set_ylim(0, min(float(np.nanmax(self.delta_chi2)) * 1.05, 4 * level))
        ax.legend()
        return ax


@dataclass
class Scan2DResult:
    """A 2-D profile-likelihood scan on the grid ``values_x`` × ``values_y`` (``nll[ix, iy]``)."""

    names: tuple
    values_x: np.ndarray
    values_y: np.ndarray
    nll: np.ndarray
    nll_min: float
    profiled: tuple
    converged: np.ndarray = field(repr=False)
    seconds: float = 0.0

    @property
    def delta_chi2(self) -> np.ndarray:
        return self.nll - self.nll_min

    def plot(self, ax=None, *, cl: float = 0.9, injected=None):
        import matplotlib.pyplot as plt
        from scipy.stats import chi2

        ax = ax or plt.gca()
        cs = ax.contour(self.values_x, self.values_y, self.delta_chi2.T, levels=[chi2.ppf(cl, 2)])
        ax.clabel(cs, fmt={cs.levels[0]: f"{cl:.0%} CL"})
        if injected is not None:
            ax.plot(*injected, "k*", label="injected")
            ax.legend()
        ax.set_xlabel(self.names[0])
        ax.set_ylabel(self.names[1])
        return ax
