r"""A liquid-xenon detector model: solar neutrinos scattering on xenon atoms, seen in keV.

The pipeline (:mod:`nuejax.model.pipeline`) is the Borexino-like one with other stages:

.. code-block:: text

    params ──► signals ──► fold ──► keV response ──► × efficiency ──► + background ──► × exposure ──► μ
               (recoil     (stepping,  (Gaussian σ(E),   (on sub-bins,    (detected,       (t·yr)
               spectra)    N_atoms Φ)   floating a, b)    then summed)     per t·yr)

* signals: :class:`~nuejax.model.signals.SolarSignals` (the general evaluation) at the centres of
  uniform recoil bins in T;
* fold: :class:`~nuejax.model.folds.DiagonalFold` (diagonal kernels) on recoil bins whose edges
  include the shells' binding energies, each recoil bin's counts per t·yr: :math:`N_{\rm atoms}\,\Phi_k\,\Delta T_i\,\sum_s n_s\Theta(T_i - B_s)`
  (:mod:`nuejax.physics.atomic`, the stepping approximation, or free electrons), times the flux
  normalisation ``norm_*`` (1 = B16-GS98);
* keV response: :class:`~nuejax.detector.transforms.ResponseTransform` from recoil bins to
  reconstructed-energy bins, σ(E) = a√E + bE (``resolution_form="linear"``) with ``res_a``,
  ``res_b`` constrained nuisances;
* efficiency: :class:`~nuejax.model.stages.Exposure` with the efficiency's mean over each of
  up to :data:`SUB` sub-bins per reconstructed bin as its mask, then
  :class:`~nuejax.model.stages.SumBins` (the efficiency rises steeply at threshold: a bin's mean
  would be 1 % off in XENONnT's 1-2 keV bin);
* background: :class:`~nuejax.model.stages.AddTemplates`, detected counts per t·yr with its
  scale ``bkg_scale`` (1 = the template);
* :class:`~nuejax.model.stages.Exposure`: the exposure in t·yr.
"""

from __future__ import annotations

import numpy as np
import jax.numpy as jnp

from ..detector.transforms import ResponseTransform
from ..errors import InputError
from ..physics.atomic import DAYS_PER_YEAR, XENON, AtomicTarget, active_electrons, atoms_per_tonne
from ..physics.precomputed import precompute_spectrum
from ..physics.spectra import build_source, rate_per_day_factor
from ..precision import resolve_dtype
from .borexino_like import DEFAULT_NORMS, check_general_options, default_parameters, general_case_fields
from .folds import DiagonalFold
from .likelihood import UnbinnedPoisson
from .parameters import Parameter, ParameterSet
from .pipeline import Model
from .physics_params import NEW_PHYSICS_NAMES, OSC_PARAMS
from .signals import MediatorSignals, SignalComponent, SolarSignals
from .stages import AddTemplates, Exposure, SumBins

__all__ = ["EFFICIENCY_STEP", "SUB", "efficiency_sub_bins", "XENON_SIGNALS", "XENON1T_RESOLUTION", "xenon_model"]

#: The solar components of a xenon model (all that give recoils in a keV window).
XENON_SIGNALS = ("pp", "pep", "hep", "7Be_862", "7Be_384", "8B", "13N", "15O", "17F")
#: Sub-bins per reconstructed bin on which the efficiency is applied.
SUB = 20
#: Largest change of the efficiency across one sub-bin with ``sub="auto"``.
EFFICIENCY_STEP = 0.005
#: σ(E) = a√E + bE of XENON1T (a in √keV, b dimensionless; arXiv:2006.09721, Eq. 1).
XENON1T_RESOLUTION = (0.310, 0.0037)


def efficiency_sub_bins(edges_kev, efficiency, step: float = EFFICIENCY_STEP, most: int = SUB) -> tuple:
    """Sub-bins per bin of ``edges_kev`` on which to apply ``efficiency`` (a callable of energy, or
    None: one each): per bin, ceil(|range of the efficiency inside the bin| / ``step``), between 1
    and ``most``; the range is read on 200 points per bin. The efficiency is taken at each
    sub-bin's mean, so what is neglected is the correlation of the spectrum's and the efficiency's
    variations inside a sub-bin."""
    e = np.asarray(edges_kev, dtype=float)
    if efficiency is None:
        return (1,) * (e.size - 1)
    out = []
    for lo, hi in zip(e[:-1], e[1:]):
        v = np.asarray(efficiency(np.linspace(lo, hi, 200)), float)
        out.append(int(np.clip(np.ceil((v.max() - v.min()) / step), 1, most)))
    return tuple(out)


def xenon_model(e_edges_kev, exposure_t_yr: float, *, efficiency=None, background=None, t_max_kev: float | None = None,
                t_step_kev: float = 0.1, target: AtomicTarget = XENON, stepping: bool = True,
                signals=XENON_SIGNALS, resolution=XENON1T_RESOLUTION, resolution_uncertainty: float = 0.1,
                solar_model: str = "gs98", radiative: bool = True, sub="auto", unbinned: bool = False,
                capacity: int = 0, mediators=(), fast_mediators: bool = False, nsi=None, propagation_nsi: bool = False,
                day_night: str | None = None, latitude="xenonnt", dtype=None) -> Model:
    """Build a xenon model (module docstring) on the reconstructed-energy bins ``e_edges_kev``.

    ``efficiency``: a callable of reconstructed energy [keV] (e.g.
    :meth:`~nuejax.io.xenonnt.XenonntSR0.efficiency_at`), applied on :data:`SUB` sub-bins of each
    bin, or None (1). ``background``: detected counts/(t·yr) per reconstructed bin (efficiency
    included, as XENONnT's B0), or None.
    Recoil bins of ``t_step_kev`` from 0 to ``t_max_kev`` (default: the top edge plus 8 σ).
    ``resolution`` (a, b) nominal, each with a Gaussian constraint of ``resolution_uncertainty``
    of its value (an assumption: the analysis's own uncertainties are not in the open data).

    The general case, as :func:`~nuejax.model.borexino_like.borexino_like_model` has it:
    ``mediators`` (``'zprime'``, ``'phi'``), ``nsi`` (``'all'`` or names of
    :data:`~nuejax.model.flavour.GENERAL_NSI_NAMES`), ``propagation_nsi`` (the NSI also in the
    matter potential), ``day_night`` (``'day'``, ``'night'``, ``'average'``; Earth crossing at
    ``latitude``, degrees or a name of :data:`~nuejax.physics.earth.DETECTOR_LATITUDES`).

    Raises:
        InputError: bad edges (not increasing, not finite, below 0), an exposure that is not
            finite and > 0, a background of the wrong length or negative, a recoil range that
            does not cover the window.
    """
    e = np.asarray(e_edges_kev, dtype=float)
    if e.ndim != 1 or e.size < 2 or not np.all(np.isfinite(e)) or np.any(np.diff(e) <= 0) or e[0] < 0:
        raise InputError(f"xenon model: e_edges_kev must be finite, >= 0 and increasing, got {e_edges_kev!r}")
    if not (np.isfinite(exposure_t_yr) and exposure_t_yr > 0):
        raise InputError(f"xenon model: exposure_t_yr must be finite and > 0, got {exposure_t_yr!r}")
    dt = resolve_dtype(dtype)
    a, b = (float(v) for v in resolution)
    if t_max_kev is None:
        t_max_kev = e[-1] + 8.0 * (a * np.sqrt(e[-1]) + b * e[-1])
    if t_max_kev <= e[-1]:
        raise InputError(f"xenon model: the recoil range (to {t_max_kev} keV) must reach beyond the window's top {e[-1]}")
    n_T = int(np.ceil(t_max_kev / t_step_kev))
    # the shells' edges are bin edges: the stepping factor is then constant inside every bin
    shells = target.binding_energies_mev * 1e3 if stepping else np.zeros(0)
    t_edges = np.union1d(np.arange(n_T + 1) * t_step_kev, shells[shells < n_T * t_step_kev])  # keV
    t_edges = t_edges[np.concatenate([[True], np.diff(t_edges) > 1e-9])]
    t_mid = 0.5 * (t_edges[1:] + t_edges[:-1])
    steps = np.asarray(active_electrons(t_mid * 1e-3, target, stepping=stepping))
    per_bin = atoms_per_tonne(target) * DAYS_PER_YEAR * steps * np.diff(t_edges) * 1e-3  # atoms·day/yr·MeV
    sigs = []
    for name in signals:
        src = build_source(name, solar_model=solar_model, dtype=dt)
        t = jnp.asarray(t_mid * 1e-3, dtype=dt)
        kernel = np.diag(float(rate_per_day_factor(src, 1.0, in_sigma0_units=True)) * per_bin)
        sigs.append(SignalComponent(src, t, jnp.asarray(kernel, dtype=dt), precompute_spectrum(src, t, radiative=radiative),
                                    name, DEFAULT_NORMS[name]))
    params = default_parameters(signals, (), DEFAULT_NORMS)
    general = {}
    if mediators or nsi is not None or propagation_nsi or day_night is not None:
        check_general_options(nsi, mediators, day_night, latitude)
        general = general_case_fields(sigs, params, nsi, mediators, propagation_nsi, day_night, latitude, radiative, dt)
        params = general.pop("parameters")
    extra = [Parameter("res_a", a, 0.2 * a, 5.0 * a, constraint=(a, resolution_uncertainty * a), unit="sqrt(keV)",
                       doc="resolution a: sigma = a sqrt(E) + b E")]
    if b > 0:
        extra.append(Parameter("res_b", b, 0.0, 10.0 * b, constraint=(b, resolution_uncertainty * b),
                               doc="resolution b: sigma = a sqrt(E) + b E"))
    names = dict(res_a="res_a", res_b="res_b" if b > 0 else None)
    # the response maps onto sub-bins of each analysis bin, where the efficiency is applied (it rises
    # from 0.07 to 0.70 across 1-2 keV in XENONnT SR0), then sums them
    if isinstance(sub, str):
        if sub != "auto":
            raise InputError(f"xenon model: sub must be an int >= 1 or 'auto', got {sub!r}")
        sizes = efficiency_sub_bins(e, efficiency)
    else:
        if int(sub) < 1:
            raise InputError(f"xenon model: sub must be >= 1, got {sub}")
        sizes = (int(sub),) * (e.size - 1)
    fine = np.append(np.concatenate([e[j] + np.arange(m) / m * (e[j + 1] - e[j]) for j, m in enumerate(sizes)]), e[-1])
    if efficiency is None:
        eff = np.ones(fine.size - 1)
    else:  # each sub-bin's mean efficiency (midpoint rule on 32 points): the tabulated efficiency is noisy
        q = fine[:-1, None] + (np.arange(32)[None, :] + 0.5) / 32 * np.diff(fine)[:, None]
        eff = np.asarray(efficiency(q.ravel()), float).reshape(q.shape).mean(axis=1)
    summed = sizes[0] if len(set(sizes)) == 1 else sizes
    signal_stage = SolarSignals.create(sigs, params, radiative=radiative, **general)
    baked = ()
    if fast_mediators:
        if set(mediators) != {"zprime", "phi"}:
            raise InputError("xenon model: fast_mediators needs mediators=('zprime', 'phi')")
        signal_stage = MediatorSignals.from_general(signal_stage, params.defaults())
        keep = set(MediatorSignals.reads)
        baked = tuple(p for p in params.parameters if p.name in OSC_PARAMS)
        params = ParameterSet(tuple(p for p in params.parameters if p.name not in OSC_PARAMS and
                                    (p.name in keep or p.name not in NEW_PHYSICS_NAMES)))
    stages = (signal_stage, DiagonalFold.create(sigs),
              ResponseTransform.create(t_edges, fine, dtype=dt, resolution_form="linear", **names),
              Exposure(jnp.asarray(eff, dtype=dt), 1.0)) + ((SumBins(summed),) if fine.size > e.size else ())
    if background is not None:
        bkg = np.asarray(background, dtype=float)
        if bkg.shape != (e.size - 1,) or not np.all(np.isfinite(bkg)) or np.any(bkg < 0):
            raise InputError(f"xenon model: background must be {e.size - 1} finite counts >= 0 per bin, "
                             f"got shape {bkg.shape}")
        extra.append(Parameter("bkg_scale", 1.0, 0.0, 10.0, doc="background template scale"))
        stages += (AddTemplates(jnp.asarray(bkg[None, :], dtype=dt), ("bkg_scale",)),)
    stages += (Exposure(jnp.ones(e.size - 1, dtype=dt), float(exposure_t_yr)),)
    params = ParameterSet(tuple(params.parameters) + tuple(extra))
    lik = UnbinnedPoisson.create(e, capacity) if unbinned else None
    return Model.create(stages, params, obs_edges=jnp.asarray(e, dtype=dt), check_shape=False, likelihood=lik,
                        baked=baked)
