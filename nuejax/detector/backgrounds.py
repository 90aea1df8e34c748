r"""Fixed 1-D background templates in the observable (N_p) binning.

Built from the analytic β spectra listed below (Q value and shape factor C) folded through the
same analytic response as the signals (:mod:`nuejax.detector.response`), or read from files:

* ¹⁴C: β⁻, Q = 0.156 MeV, shape factor C = 1 + 0.19418 W;
* ²¹⁰Bi: β⁻, Q = 1.162 MeV, first-forbidden non-unique, C = 1 + 28.466/W + 0.578 W − 0.658 W²;
* ⁸⁵Kr: β⁻, Q = 0.687 MeV, unique first-forbidden, C = p² + q²;
* ¹¹C: β⁺, Q = 0.960 MeV (allowed), plus the two 511 keV annihilation γ, whose deposit is
  approximated as two electrons of 511 keV each (quenched like electrons; a Compton cascade is
  quenched somewhat more -- an approximation of this synthetic template);
* ²¹⁴Pb (²²²Rn chain): β⁻, Q = 1.019 MeV, approximated as allowed (C = 1) -- the ninth
  background of the benchmark workload, not in the default model;
* ²¹⁰Po: the 5.3 MeV α, quenched to a peak at an electron-equivalent energy (default 0.40 MeV),
  with the photoelectron-statistics width;
* external γ (⁴⁰K, ²¹⁴Bi, ²⁰⁸Tl): the Borexino Phase-III Monte Carlo shapes (keV
  electron-equivalent scale, resolution included), mapped to N_p through the electron response
  :math:`N_p = Y\,E_q(E)`.

W, p, q in units of :math:`m_e` (W the electron's total energy). Each template is normalised
to one decay: its sum over the observable window is the fraction of decays seen there, so the
template times a rate [counts/(day·100 t)] is the expected rate per bin.
"""

from __future__ import annotations

import difflib

import jax.numpy as jnp
import numpy as np

from .._internal.build_jit import build_jit
from ..cache import cached
from ..constants import M_E
from ..errors import InputError
from ..physics.beta import beta_kinetic_spectrum
from .checks import check_edges, check_entries, describe_edges
from .response import (
    QuenchingTable,
    ResponseParams,
    gaussian_bin_probabilities,
    mean_photoelectrons,
    photoelectron_variance,
)

__all__ = ["BACKGROUNDS", "background_template", "template_from_shape", "beta_template", "check_template"]


def _c_bi210(W, p, q):
    return 1.0 + 28.466 / W + 0.578 * W - 0.658 * W**2


def _c_kr85(W, p, q):
    return p**2 + q**2


def _c_c14(W, p, q):
    return 1.0 + 0.19418 * W


#: name -> (kind, parameters); beta entries are (Q [MeV], Z_daughter, A, positron, shape factor).
BACKGROUNDS = {
    "14C": ("beta", (0.156, 7, 14, False, _c_c14)),
    "210Bi": ("beta", (1.162, 84, 210, False, _c_bi210)),
    "85Kr": ("beta", (0.687, 37, 85, False, _c_kr85)),
    "11C": ("beta+gamma", (0.960, 5, 11, True, None)),
    "210Po": ("peak", (0.40,)),
    "214Pb": ("beta", (1.019, 83, 214, False, None)),
    "ext_40K": ("file", ("Ext_K40",)),
    "ext_214Bi": ("file", ("Ext_Bi214",)),
    "ext_208Tl": ("file", ("Ext_Tl208",)),
}


def check_template(values, obs_edges, what: str) -> np.ndarray:
    """A built template as a float64 (n_obs,) array, checked: one entry per bin of ``obs_edges``,
    finite, >= 0, not all zero.

    Raises:
        InputError: naming ``what`` (e.g. ``"background template '85Kr'"``), the bin and the problem;
            an empty template also names the binning it is empty on.
    """
    edges = np.asarray(obs_edges, dtype=float)
    v = np.asarray(values, dtype=float)
    if v.shape != (edges.size - 1,):
        raise InputError(f"{what}: has shape {v.shape}, expected ({edges.size - 1},) for the observable "
                         f"binning {describe_edges(edges)}")
    v = check_entries(v, what, allow_empty=True)
    if not np.any(v > 0):
        raise InputError(f"{what}: is empty on the observable binning {describe_edges(edges)} "
                         "(no decay is seen there)")
    return v


def beta_template(obs_edges, params: ResponseParams, table: QuenchingTable, Q: float, Z: int, A: int, *,
                  positron: bool = False, shape_factor=None, extra_electrons=(), n_nodes: int = 4000,
                  name: str | None = None):
    """Fold a β spectrum (kinetic energy T) through the response: fraction of decays per N_p bin.

    ``extra_electrons`` [MeV]: energies of further particles deposited with every decay, each
    quenched like an electron (the ¹¹C annihilation γ: ``(0.511, 0.511)``). Midpoint rule on ``n_nodes`` T panels, normalised to the exact
    discrete sum of the spectrum, so the template of a decay sums to one over all N_p.

    Raises:
        InputError: bad ``obs_edges``, ``Q`` not finite and > 0, ``n_nodes`` < 1, or a template that
            is empty on ``obs_edges`` or has a negative or non-finite bin (names ``name`` and the bin).
    """
    what = f"background template {name!r}" if name else f"beta template (Q = {Q:g} MeV, Z = {Z})"
    check_edges(obs_edges, what, "observable")
    if not (np.isfinite(Q) and Q > 0):
        raise InputError(f"{what}: Q = {Q} MeV must be finite and > 0")
    if not n_nodes >= 1:
        raise InputError(f"{what}: n_nodes must be >= 1, got {n_nodes}")
    T = (np.arange(n_nodes) + 0.5) * Q / n_nodes
    dens = beta_kinetic_spectrum(T, Q, Z, A, positron=positron, shape_factor=shape_factor)
    w = dens / dens.sum()
    extra = np.asarray(() if extra_electrons is None else extra_electrons, dtype=float).reshape(-1)
    return check_template(np.asarray(_folded_beta(w, T, extra, jnp.asarray(obs_edges), params, table)), obs_edges,
                          what)


@build_jit
def _folded_beta(w, T, extra, obs_edges, params, table):
    # One compiled program per shape: called eagerly, the same steps compiled a few dozen small
    # programs per template (a second or two of a model's first build on 2 CPU cores).
    # light from the extra particles (the 11C annihilation gammas) adds to the electron's
    mu = mean_photoelectrons(T, params, table) + jnp.sum(mean_photoelectrons(extra, params, table))
    return w @ gaussian_bin_probabilities(mu, photoelectron_variance(mu, params), obs_edges)


_mean_photoelectrons = build_jit(mean_photoelectrons)


def template_from_shape(shape, obs_edges, params: ResponseParams, table: QuenchingTable,
                        n_grid: int = 20001, *, name: str | None = None):
    """Map a keV-scale shape (electron-equivalent) to N_p bins via N_p = Y E_q(E); normalised to one.

    ``shape``: keV ``edges``, a ``cdf(energy_kev)`` and its ``integral`` (e.g. a
    :class:`~nuejax.io.borexino.BorexinoShape`).

    Raises:
        InputError: bad ``obs_edges``, a non-monotonic electron response, or a template that is
            empty on ``obs_edges`` (names ``name``, or the shape's file).
    """
    what = f"background template {name!r}" if name else f"template from {shape.source or 'a Borexino shape'}"
    edges = check_edges(obs_edges, what, "observable")
    if not n_grid >= 2:
        raise InputError(f"{what}: n_grid must be >= 2, got {n_grid}")
    e_hi = shape.edges[-1] / 1000.0
    grid = np.linspace(0.0, e_hi, n_grid)
    np_grid = np.asarray(_mean_photoelectrons(grid, params, table))
    bad = np.nonzero(np.diff(np_grid) <= 0)[0]
    if bad.size:
        raise InputError(f"{what}: the electron response N_p(E) is not increasing at E = {grid[bad[0] + 1]:g} MeV; "
                         "cannot map the keV scale")
    e_of_edges = np.interp(edges, np_grid, grid, left=0.0, right=e_hi) * 1000.0
    cdf = shape.cdf(e_of_edges)
    return check_template(np.diff(cdf) / shape.integral, edges, what)


def background_template(name: str, obs_edges, params: ResponseParams, table: QuenchingTable, *,
                        shape=None) -> np.ndarray:
    """The template of background ``name`` (see :data:`BACKGROUNDS`) on ``obs_edges``; numpy (n_obs,).

    A background of kind ``"file"`` (the external γ) is a published keV shape: pass it as
    ``shape`` (:func:`~nuejax.io.borexino.packaged_borexino_shape` of the file stem in
    :data:`BACKGROUNDS`; the detector layer reads no files).

    Stored in the on-disk cache (:mod:`nuejax.cache`), keyed by the arguments, nuejax's code and
    data and the JAX environment; a later call with the same key loads it (the same bits).

    Raises:
        KeyError: unknown ``name`` (the message suggests the closest known one and lists them all).
        InputError: bad ``obs_edges`` (names the template and the edge), or a template that is
            empty on ``obs_edges`` or has a negative or non-finite bin (names the template and bin).
    """
    if name not in BACKGROUNDS:
        close = difflib.get_close_matches(str(name), list(BACKGROUNDS), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise KeyError(f"unknown background {name!r}; {hint}known: {', '.join(BACKGROUNDS)}")
    what = f"background template {name!r}"
    check_edges(obs_edges, what, "observable")
    arguments = dict(name=name, obs_edges=obs_edges, params=params, table=table)
    kind, args = BACKGROUNDS[name]
    if kind == "file":
        if shape is None:
            raise InputError(f"{what}: a published shape (file {args[0]!r} of the Borexino open data); pass "
                             f"shape=nuejax.io.packaged_borexino_shape({args[0]!r})")
        arguments.update(shape_edges=np.asarray(shape.edges, dtype=float), shape_density=np.asarray(shape.density,
                                                                                                    dtype=float))
    elif shape is not None:
        raise InputError(f"{what}: is built from its decay ({kind}), not from a shape; drop shape=")
    return cached("background", name, arguments,
                  lambda: _build_background_template(name=name, obs_edges=obs_edges, params=params, table=table,
                                                     shape=shape))


def _build_background_template(name, obs_edges, params, table, shape) -> np.ndarray:
    """The body of :func:`background_template` after its argument checks (uncached)."""
    what = f"background template {name!r}"
    kind, args = BACKGROUNDS[name]
    if kind == "beta":
        Q, Z, A, positron, C = args
        return beta_template(obs_edges, params, table, Q, Z, A, positron=positron, shape_factor=C, name=name)
    if kind == "beta+gamma":
        Q, Z, A, positron, C = args
        return beta_template(obs_edges, params, table, Q, Z, A, positron=positron, shape_factor=C,
                             extra_electrons=(M_E, M_E), name=name)
    if kind == "peak":
        (e_eq,) = args
        mu = params.light_yield * e_eq
        return check_template(gaussian_bin_probabilities(mu, photoelectron_variance(mu, params), obs_edges),
                              obs_edges, what)
    return template_from_shape(shape, obs_edges, params, table, name=name)
