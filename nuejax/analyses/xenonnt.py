"""The XENONnT SR0 electronic-recoil analysis on its open data (E. Aprile et al. (XENON),
Phys. Rev. Lett. 129, 161805 (2022), arXiv:2207.11330; data in ``nuejax/data/xenonnt_sr0/``).

The released background model B0 (detected events/(t·yr·keV), efficiency included) contains the
Standard-Model solar-neutrino component, which is not released separately. The model here replaces
it by the package's own prediction, so that new physics acts on it: the background template is
B0 minus the SM solar-neutrino prediction of the same model at its nominal parameters (binned as
the data), and the solar signals are the pipeline's own (:func:`~nuejax.model.xenon.xenon_model`).
What the template keeps is then everything else B0 holds (²¹⁴Pb, ⁸⁵Kr, materials, ¹³⁶Xe, ¹²⁴Xe,
¹³³Xe, ...), with one free scale.
"""

from __future__ import annotations

import numpy as np

from .._internal.placement import on_host, to_default_device
from ..cache import argument_key, cached
from ..errors import InputError
from ..io.xenonnt import packaged_xenonnt_sr0
from ..model.xenon import xenon_model

__all__ = ["UNBINNED_CAPACITY", "UNBINNED_STEP_KEV", "xenonnt_sr0_background", "xenonnt_sr0_model"]


def xenonnt_sr0_background(edges_kev, sm_detected_per_t_yr) -> np.ndarray:
    """B0 integrated over each bin of ``edges_kev`` (detected events per t·yr; B0 is given on
    0.1-keV steps, integrated exactly where the edges fall on steps, linearly inside a step) minus
    the SM solar-neutrino prediction ``sm_detected_per_t_yr`` on the same bins.

    Raises:
        InputError: the edges leave B0's 1–30 keV, or the difference is negative in a bin (names it).
    """
    d = packaged_xenonnt_sr0()
    e = np.asarray(edges_kev, dtype=float)
    if e[0] < d.window[0] - 1e-9 or e[-1] > d.window[1] + 1e-9:
        raise InputError(f"XENONnT SR0: bins must lie inside B0's window {d.window} keV, got [{e[0]}, {e[-1]}]")
    steps = np.append(d.b0_energy - 0.05, d.b0_energy[-1] + 0.05)
    cum = np.concatenate([[0.0], np.cumsum(d.b0_rate * 0.1)])
    b0 = np.diff(np.interp(e, steps, cum))
    out = b0 - np.asarray(sm_detected_per_t_yr, dtype=float)
    bad = np.nonzero(out < 0)[0]
    if bad.size:
        j = int(bad[0])
        raise InputError(f"XENONnT SR0: the SM solar-neutrino prediction exceeds B0 in bin [{e[j]}, {e[j + 1]}] keV "
                         f"({sm_detected_per_t_yr[j]:.4g} > {b0[j]:.4g} events/(t yr))")
    return out


#: Fine bins of the unbinned SR0 model's density [keV].
UNBINNED_STEP_KEV = 0.05
#: Events the unbinned SR0 model's data arrays hold (433 observed; toys up to about 600 expected).
UNBINNED_CAPACITY = 1000


def xenonnt_sr0_model(edges_kev=None, *, unbinned: bool = False, **kw):
    """The SR0 model on ``edges_kev`` (default: 1-keV bins over 1–30 keV, as the paper's Fig. 5;
    unbinned: bins of :data:`UNBINNED_STEP_KEV` for the density):
    :func:`~nuejax.model.xenon.xenon_model` with the SR0 efficiency and exposure (1.16 t·yr) and the
    background template :func:`xenonnt_sr0_background` (module docstring). ``kw`` go to
    :func:`~nuejax.model.xenon.xenon_model`. ``unbinned``: the extended unbinned likelihood
    (:class:`~nuejax.model.likelihood.UnbinnedPoisson`, efficiency at each fine bin's centre) and
    the 433 events as data. Returns ``(model, data)``: the observed counts per bin, or the events."""
    d = packaged_xenonnt_sr0()
    if edges_kev is not None:
        e = np.asarray(edges_kev, dtype=float)
    elif unbinned:
        e = np.linspace(d.window[0], d.window[1], int(round((d.window[1] - d.window[0]) / UNBINNED_STEP_KEV)) + 1)
    else:
        e = np.arange(1.0, 31.0, 1.0)
    if unbinned:
        kw = {"sub": 1, "capacity": UNBINNED_CAPACITY, **kw, "unbinned": True}

    def build():
        base = {k: v for k, v in kw.items() if k not in ("unbinned", "capacity")}
        sm = xenon_model(e, 1.0, efficiency=d.efficiency_at, **base)
        sm_detected = np.asarray(sm.expected(sm.parameters.values()))  # per t·yr
        bkg = xenonnt_sr0_background(e, sm_detected)
        return xenon_model(e, d.exposure, efficiency=d.efficiency_at, background=bkg, **kw)

    # one cache entry for the whole model (as the Phase-III one), built on the host on a GPU
    # (nuejax._internal.placement); options the cache cannot key (a callable) build uncached
    arguments = {"edges_kev": e, "options": kw}
    try:
        argument_key("xenonnt", arguments)
    except TypeError:
        keyable = False
    else:
        keyable = True
    with on_host():
        model = cached("xenonnt", "model", arguments, build) if keyable else build()
    model = to_default_device(model)
    if unbinned:
        return model, model.likelihood.events(d.events)
    return model, np.histogram(d.events, bins=e)[0].astype(float)
