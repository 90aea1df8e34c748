r"""Calibrate a recoil-energy → observable response on published 1-D Monte Carlo shapes.

Experiments often publish only the SM shapes of the solar components in their observable (the
Borexino Phase-III open data: densities per keV of an electron-equivalent energy), not the
response that made them. To reweight those shapes with nuejax's NSI and magnetic-moment spectra
(:mod:`nuejax.model.template_model`) a response :math:`P(E \mid T)` is needed; it is fitted here so
that nuejax's SM recoil spectra folded through it reproduce the published shapes.

The response is the analytic liquid-scintillator one of :mod:`nuejax.detector.response`,
written on a keV-like axis:

.. math::
    \bar E(T) = s\,E_q(T; k_B),\qquad
    \sigma^2(T) = \kappa\,\bar E + (v\,\bar E)^2,

with :math:`E_q` the Birks-quenched energy (quenching), :math:`s` the light scale [keV per MeV
of quenched energy] (light yield), :math:`\kappa` [keV] the photo-statistics term and :math:`v`
a relative term (resolution). The Birks term carries the non-linearity. It is exactly the
photoelectron response with :math:`N_p = \bar E/\kappa` (light yield :math:`s/\kappa` pe/MeV),
so the fixed-kernel machinery (:func:`~nuejax.detector.montecarlo.expected_histogram`,
:func:`~nuejax.model.borexino_like.signal_component`) builds the kernels at the calibrated point.

The fit minimises :math:`\chi^2 = \sum_g\sum_j [(n_g p_{gj}(\theta) - t_{gj})/\delta_{gj}]^2` over
the response parameters :math:`\theta` and, optionally, one normalisation :math:`n_g` per shape,
with :math:`t_{gj}` the published content per unit rate and :math:`\delta_{gj}` its published
uncertainty, by trust-region least squares (``scipy.optimize.least_squares``) with the exact Jacobian from
``jax.jacfwd``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..cache import cached
from ..errors import InputError
from ..physics.cross_section import NewPhysics
from ..physics.oscillation import OscillationParams
from ..physics.spectra import build_source, event_rate, shape_only, uniform_recoil_edges
from .checks import check_edges
from .montecarlo import joint_response
from .response import ResponseParams, quenching_table

__all__ = ["KeVResponse", "CalibrationTarget", "CalibrationResult", "calibrate_response", "as_photoelectron_axis"]


class KeVResponse(NamedTuple):
    """Response on a keV-like axis (module docstring): ``scale`` [keV/MeV quenched], ``kB``
    [cm/MeV], ``stochastic`` κ [keV], ``relative`` v."""

    scale: float | jax.Array = 1000.0
    kB: float | jax.Array = 0.011
    stochastic: float | jax.Array = 2.5
    relative: float | jax.Array = 0.0


def as_photoelectron_axis(r: KeVResponse, edges):
    """The equivalent photoelectron response and bin edges: (ResponseParams, edges / κ)."""
    return (ResponseParams(light_yield=r.scale / r.stochastic, kB=r.kB, var_const=0.0, var_rel=r.relative),
            jnp.asarray(edges) / r.stochastic)


@dataclass(frozen=True)
class CalibrationTarget:
    """One published shape: its name, the nuejax spectra it is made of (``labels``, e.g.
    ``("13N", "15O", "17F")``, summed with their SM rates), its content per unit rate on the
    calibration bins and the uncertainty of that content (0 where the shape is empty)."""

    name: str
    labels: tuple
    template: np.ndarray
    error: np.ndarray


@dataclass(frozen=True)
class CalibrationResult:
    """Plain result of :func:`calibrate_response`."""

    response: KeVResponse
    norms: dict  # target -> fitted normalisation (1 if not fitted)
    chi2: dict  # target -> chi^2 over its fitted bins
    n_bins: dict  # target -> number of fitted bins
    pulls: dict  # target -> (n_in,) (prediction - template)/error, NaN outside the fitted bins
    relative_residual: dict  # target -> (n_in,) (prediction - template)/max(template)
    converged: bool
    n_par: int
    extra: dict = field(default_factory=dict)

    @property
    def chi2_total(self) -> float:
        return float(sum(self.chi2.values()))

    @property
    def ndf(self) -> int:
        return int(sum(self.n_bins.values()) - self.n_par)

    def summary(self) -> str:
        r = self.response
        lines = [f"response: scale {float(r.scale):.2f} keV/MeV, kB {float(r.kB):.4f} cm/MeV, "
                 f"stochastic {float(r.stochastic):.3f} keV, relative {float(r.relative):.4f}; "
                 f"chi2/ndf = {self.chi2_total:.1f}/{self.ndf}; converged: {self.converged}"]
        for g in self.chi2:
            rel = self.relative_residual[g]
            ok = np.isfinite(self.pulls[g])
            lines.append(f"  {g:>8}: norm {self.norms[g]:.4f}, chi2/bins = {self.chi2[g]:.1f}/{self.n_bins[g]}, "
                         f"max |prediction - shape| = {np.nanmax(np.abs(np.where(ok, rel, np.nan))):.3g} of the peak bin")
        return "\n".join(lines)


@partial(jax.jit, static_argnums=(4, 5))
def _member_constants(src, t_edges, table, osc, radiative, n_bin_quad):
    # compiled once per shape (eager dispatch compiles dozens of small programs per source)
    params, everything = as_photoelectron_axis(KeVResponse(), jnp.asarray([-1e9, 1e9]))
    # the same quadrature as the fold, over one bin that holds every event
    full = joint_response(src, t_edges, everything, params, table, osc, radiative=radiative,
                          n_bin_quad=n_bin_quad).sum()
    return full, event_rate(src, NewPhysics(), osc=osc, radiative=radiative)


def _sources(targets, solar_model, n_E, n_T, osc, radiative, table, n_bin_quad):
    """Per target: (source, recoil edges, SM rate, SM recoil integral in sigma0 units) of each member."""
    out = []
    for t in targets:
        members = []
        for label in t.labels:
            src = build_source(label, solar_model=solar_model, n_E=n_E)
            t_edges = uniform_recoil_edges(float(src.t_end), n_T)
            full, rate = _member_constants(shape_only(src), t_edges, table, osc, radiative, n_bin_quad)
            members.append((shape_only(src), t_edges, float(rate), float(full)))
        out.append(members)
    return out


def group_prediction(members, edges, r: KeVResponse, table, osc, radiative, n_bin_quad: int = 2):
    """Content per unit of the group's SM rate on ``edges`` of nuejax's SM spectra folded through ``r``."""
    params, pe_edges = as_photoelectron_axis(r, edges)
    total_rate = sum(m[2] for m in members)
    pred = 0.0
    for src, t_edges, rate, full in members:
        J = joint_response(src, t_edges, pe_edges, params, table, osc, radiative=radiative, n_bin_quad=n_bin_quad)
        pred = pred + (rate / total_rate) * J.sum(axis=0) / full
    return pred


_NAMES = ("scale", "kB", "stochastic", "relative")


def calibrate_response(targets, edges, *, start: KeVResponse = KeVResponse(), lower: KeVResponse | None = None,
                       upper: KeVResponse | None = None, fit_norms: bool = True, n_T: int = 300, n_E: int = 400,
                       solar_model: str = "gs98", osc: OscillationParams = OscillationParams(),
                       radiative: bool = True, max_iter: int = 100) -> CalibrationResult:
    """Fit a :class:`KeVResponse` (and per-shape normalisations) to published shapes (module docstring).

    Args:
        targets: :class:`CalibrationTarget` objects on the bins ``edges`` [keV].
        lower, upper: bounds of the response parameters (defaults: a broad physical box).
        fit_norms: fit one normalisation per target (reported; 1 = the declared convention holds).
    Raises:
        InputError: no targets, a template/error of the wrong shape, negative or non-finite,
            a target with no bin of positive error, bad edges, or ``start`` outside the bounds.
    """
    e = check_edges(edges, "response calibration", "observable")
    if not targets:
        raise InputError("response calibration: no targets")
    for t in targets:
        for what in ("template", "error"):
            a = np.asarray(getattr(t, what), dtype=float)
            if a.shape != (e.size - 1,) or not np.all(np.isfinite(a)) or np.any(a < 0):
                raise InputError(f"response calibration: target {t.name!r}: {what} must be ({e.size - 1},) finite "
                                 f"and >= 0, got shape {a.shape}")
        if not np.any(np.asarray(t.error) > 0):
            raise InputError(f"response calibration: target {t.name!r} has no bin with a positive error")
    lower = lower or KeVResponse(scale=800.0, kB=0.0, stochastic=0.05, relative=0.0)
    upper = upper or KeVResponse(scale=1400.0, kB=0.05, stochastic=20.0, relative=0.2)
    lo = np.array(list(lower) + ([0.5] * len(targets) if fit_norms else []), dtype=float)
    hi = np.array(list(upper) + ([2.0] * len(targets) if fit_norms else []), dtype=float)
    x0 = np.array(list(start) + ([1.0] * len(targets) if fit_norms else []), dtype=float)
    if np.any(x0 < lo) or np.any(x0 > hi):
        raise InputError(f"response calibration: start {start} outside the bounds {lower} .. {upper}")
    arguments = dict(targets=tuple(targets), edges=e, start=start, lower=lower, upper=upper, fit_norms=fit_norms,
                     n_T=n_T, n_E=n_E, solar_model=solar_model, osc=osc, radiative=radiative, max_iter=max_iter)
    # deterministic and ~20 s of a fresh process on 2 cores (mostly compiling the predictions and
    # their Jacobian): stored in the on-disk cache of nuejax.cache, keyed by every argument
    fields = cached("calibration", "response", arguments,
                    lambda: dataclasses.asdict(_calibrate(targets, e, start, lo, hi, x0, fit_norms, n_T, n_E,
                                                          solar_model, osc, radiative, max_iter)))
    return CalibrationResult(**{k: (KeVResponse(*v) if k == "response" else v) for k, v in fields.items()})


def _calibrate(targets, e, start, lo, hi, x0, fit_norms, n_T, n_E, solar_model, osc, radiative, max_iter):
    # Newton works on parameters of order one
    unit = np.array([1000.0, 0.01, 1.0, 0.01] + [1.0] * (len(targets) if fit_norms else 0))
    table = quenching_table()
    members = _sources(targets, solar_model, n_E, n_T, osc, radiative, table, 2)
    tmpl = jnp.asarray(np.stack([t.template for t in targets]))
    err = np.stack([t.error for t in targets])
    w = jnp.asarray(np.where(err > 0, 1.0 / np.where(err > 0, err, 1.0), 0.0))
    edges_j = jnp.asarray(e)

    def predictions(y):
        r = KeVResponse(*(y[:4] * unit[:4]))
        p = jnp.stack([group_prediction(m, edges_j, r, table, osc, radiative) for m in members])
        if fit_norms:
            p = p * (y[4:] * unit[4:])[:, None]
        return p

    # A chi^2 of published contents is a least-squares problem: trust-region reflective with the
    # exact (forward-mode) Jacobian compiles in a fraction of the time of a jitted Newton loop.
    from scipy.optimize import least_squares

    # The residuals, their Jacobian and the predictions in one program (one compilation: the
    # Jacobian's program computes the predictions anyway; evaluated eagerly at the end point they
    # cost some 220 small compilations, 14 s on 2 cores), kept for the last point: the trust
    # region asks for the Jacobian where it last evaluated the residuals.
    @jax.jit
    def both(y):
        p, tangent = jax.linearize(predictions, y)
        dp = jax.vmap(tangent, out_axes=-1)(jnp.eye(y.shape[0], dtype=y.dtype))
        return ((p - tmpl) * w).ravel(), (dp * w[..., None]).reshape(p.size, y.shape[0]), p

    last = {}

    def at(y):
        key = np.asarray(y, dtype=float).tobytes()
        if key not in last:
            last.clear()
            last[key] = tuple(np.asarray(a) for a in both(jnp.asarray(y)))
        return last[key]

    # copies: scipy may scale what it is given in place
    res = least_squares(lambda y: at(y)[0].copy(), x0 / unit, jac=lambda y: at(y)[1].copy(),
                        bounds=(lo / unit, hi / unit), method="trf", x_scale="jac", xtol=1e-12, ftol=1e-12,
                        gtol=1e-10, max_nfev=max_iter)
    # converged: scipy's criteria met and the estimated distance to the minimum on the free
    # parameters, EDM = r^T J (J^T J)^-1 J^T r (chi^2 units, scale-free), below 1e-6
    g = 2.0 * res.jac.T @ res.fun
    free = res.active_mask == 0
    J = res.jac[:, free]
    Jr = J.T @ res.fun
    edm = float(Jr @ np.linalg.lstsq(J.T @ J, Jr, rcond=None)[0]) if free.any() else 0.0
    converged = bool(res.success and edm < 1e-6)
    y = np.asarray(res.x)
    pred = at(y)[2]  # the end point is usually the last point evaluated
    tm = np.asarray(tmpl)
    pulls, rel, chi, nb, norms = {}, {}, {}, {}, {}
    for k, t in enumerate(targets):
        ok = err[k] > 0
        pulls[t.name] = np.where(ok, (pred[k] - tm[k]) / np.where(ok, err[k], 1.0), np.nan)
        rel[t.name] = (pred[k] - tm[k]) / tm[k].max()
        chi[t.name] = float(np.nansum(pulls[t.name] ** 2))
        nb[t.name] = int(ok.sum())
        norms[t.name] = float(y[4 + k] * unit[4 + k]) if fit_norms else 1.0
    response = KeVResponse(*(float(v) for v in y[:4] * unit[:4]))
    return CalibrationResult(response, norms, chi, nb, pulls, rel, converged, int(len(x0)),
                             extra=dict(n_iter=int(res.nfev), prediction=pred, gradient=g, edm=edm))
