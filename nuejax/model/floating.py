r"""A floating detector response: the analytic scintillator kernel recomputed in every call.

The fixed-kernel model (:mod:`nuejax.model.spectral_model`) folds each signal through a kernel
:math:`G^{(k)}` built once with the nominal response (light yield, Birks :math:`k_B`, resolution).
Here the response parameters are fit parameters, and the fold is redone per call:

.. math::
    \mu_j = \mathrm{MT}\,M_j\Big[\mathcal T(\theta)\Big(\sum_k a_k\,C_k
            \sum_i f_T^{(k)}(T_i;\varepsilon,\mu_\nu,\theta_{osc})
            \sum_q w^{(k)}_{iq}\, P(j \mid T^{(k)}_{iq};\, Y, k_B, v_0, v_1)
            + \sum_b \text{rate}_b\,t_b\Big)\Big]_j

* :math:`f_T^{(k)}(T_i)`: the recoil spectrum of signal :math:`k` at its recoil-bin centres
  (σ0 units). General path: :func:`~nuejax.model.spectral_model.signal_spectra` (the model's
  precomputed cross sections, oscillations recomputed). Fast path: the 17 *unfolded* basis spectra
  :math:`B_{kb}(T_i)` of the NSI/μ_ν polynomial (:mod:`nuejax.model.fast`), extracted once at
  fixed oscillations from probe evaluations of the same precomputed route
  (:func:`~nuejax.physics.precomputed.coefficients_from_probes`), and
  :math:`f_T^{(k)} = \sum_b c_b(\varepsilon, \mu_\nu) B_{kb}` with
  :func:`~nuejax.model.fast.basis_coefficients`.
* :math:`P(j\mid T)`: :func:`~nuejax.detector.response.bin_probabilities` (Bethe stopping power,
  Birks quenching, light yield, Gaussian resolution :math:`\sigma^2 = N + v_0 + (v_1 N)^2`),
  recomputed from the parameters ``light_yield``, ``kB``, ``var_const``, ``var_rel`` in every call.
* Recoil-bin quadrature (``quadrature="bin"``, the default): the nodes :math:`T_{iq}` and weights
  :math:`w_{iq} = \mathrm{wf}^{SM}_{iq}/f_T^{SM}(T_i)` are those of
  :func:`~nuejax.physics.spectra.recoil_bin_quadrature` (``n_bin_quad`` end-point regularised
  Gauss-Legendre nodes per bin, lines cut at their end points), the rule with which the fixed
  kernels were integrated (:func:`~nuejax.detector.montecarlo.joint_response`). So the within-bin
  SM shape is kept and the parameter dependence of the spectrum enters, as in the paper's
  reweighting, through its value at the bin centre: at the nominal response this *is* the fixed
  model's :math:`\sum_i G_{ij} f_T(T_i)`, for every ε, μ_ν and oscillation point. The kernels
  agree with the fixed ones to rounding (1e-12 of their largest entry); the expected spectra to
  1.2e-7 relative (3 signals, 100 recoil bins, N_p 150-350), the difference of the normalisations
  below. ``quadrature="midpoint"`` takes one node per bin, the centre, with the bin width as
  weight (n_bin_quad× fewer Gaussian integrals; at the nominal response it differs from the
  fixed model by up to 2.3e-3 relative on the same test model, where a line's Compton edge or the
  spectrum's curvature sits).
* :math:`C_k = N_e\Phi_k\cdot 86400\,\mathrm{s}\cdot\sigma_0` (counts/(day·100 t) per σ0·MeV,
  :func:`~nuejax.physics.spectra.rate_per_day_factor`), computed directly. The fixed kernels carry
  it as event rate over binned SM integral (:func:`~nuejax.reweighting.transfer_kernel`), two
  numerical integrals whose ratio equals it to 5e-8 to 5e-7 (7Be, pep, 13N on 100 recoil bins):
  that is the agreement with the fixed model at the nominal response.
* :math:`t_b`: the model's background templates, **fixed**: they were folded with the nominal
  response when the model was built, and do not follow the floating response. A floating response
  for the β backgrounds is out of scope here.
* :math:`\mathcal T(\theta)`: an optional :class:`~nuejax.detector.transforms.ResponseTransform`
  (observable-level scale, offset, non-linearity, extra resolution) whose input bins are the
  model's observable bins; applied before the exposure and mask, which then live on its output
  bins. Without it :math:`\mathcal T` is the identity.

Stage kinds: the fold with :math:`P` is a linear map that moves
events between bins and depends on parameters, so nothing of it can be multiplied out ahead of
time; the transform is another such map; exposure and mask are elementwise.

Cost and the two folds: the exact fold (``fold="exact"``,
:func:`~nuejax.detector.response.gaussian_fold`) needs :math:`n_{sig}\times n_T\times
n_q\times(n_{obs}+1)` Gaussian tail integrals per call, one erfc each (6 × 10⁷ on the paper
workload), and one exp each for a gradient. The default grid fold (``fold="grid"``,
:mod:`~nuejax.detector.mean_grid`) uses that the resolution is a function of the mean number of
photoelectrons alone: it evaluates the bin probabilities, with two derivatives, on a fixed grid
of ~360 means (from 0 to the largest node mean the light-yield and k_B bounds allow) and
interpolates them at the nodes (quintic Hermite), so a call costs ~360 × (n_obs + 1) Gaussian
integrals whatever the number of signals and nodes. It differs from the exact fold by < 4 × 10⁻⁸
relative on the expected spectra (tests: 1e-7 asked), −2 ln L by < 10⁻⁶ (the derivation of the
bound is in :mod:`~nuejax.detector.mean_grid`), and is smooth in all response parameters.
``benchmarks/timings/floating_response.py`` measures both against the fixed-response model.

A :class:`FloatingResponseModel` is a PyTree with the :class:`~nuejax.model.spectral_model.ModelMethods`
front door, so ``.expected``, ``.nll``, ``.parameters``, ``jax.grad`` and the fits of
:mod:`nuejax.inference` apply unchanged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ..detector.mean_grid import DEFAULT_STEP, MeanGrid, grid_fold, mean_grid
from ..detector.response import (QuenchingTable, ResponseParams, bin_probabilities, gaussian_fold, mean_photoelectrons,
                                 photoelectron_variance, quenching_table)
from ..detector.transforms import ResponseTransform
from ..errors import InputError, ParameterError
from ..physics.cross_section import NewPhysics
from ..physics.oscillation import OscillationParams
from ..physics.precomputed import group_probe_coefficients, group_recoil_spectra
from ..physics.spectra import rate_per_day_factor, recoil_bin_quadrature, shape_only, uniform_recoil_edges
from .fast import N_BASIS, OSC_PARAMS, baked_values, basis_coefficients
from .likelihood import poisson_nll
from .parameters import Parameter, ParameterSet, unknown_name_message
from .spectral_model import ModelMethods, SpectralModel, osc_from_params, signal_spectra

__all__ = ["FloatingResponseModel", "floating_response_model", "floating_expected", "floating_nll",
           "floating_signal_spectra", "response_kernels", "response_parameters", "transform_parameters",
           "RESPONSE_TERMS", "RESPONSE_BOUNDS", "TRANSFORM_DEFAULTS"]

#: The response parameters, named like the fields of :class:`~nuejax.detector.response.ResponseParams`.
RESPONSE_TERMS = ("light_yield", "kB", "var_const", "var_rel")
#: (lower, upper) bounds of the response parameters.
RESPONSE_BOUNDS = {"light_yield": (350.0, 650.0), "kB": (0.005, 0.02), "var_const": (0.0, 1e3),
                   "var_rel": (0.0, 0.2)}
_RESPONSE_UNITS = {"light_yield": "pe/MeV", "kB": "cm/MeV", "var_const": "pe^2", "var_rel": ""}
_RESPONSE_DOCS = {"light_yield": "photoelectrons per MeV of quenched energy", "kB": "Birks constant",
                  "var_const": "constant extra variance of N_p", "var_rel": "relative extra width of N_p"}
#: (value, lower, upper) of a transform term's generated parameter, in N_p units for unit N_p bins.
#: The resolution terms start, and are bounded, away from sigma = 0, where the likelihood is flat
#: to all orders (:mod:`nuejax.detector.transforms`): their floors keep the extra width at about
#: half a bin or more over N_p ~ 100-1000. Pass Parameters of your own for other axes.
TRANSFORM_DEFAULTS = {"scale": (1.0, 0.8, 1.2), "offset": (0.0, -50.0, 50.0), "nonlin": (0.0, -0.5, 0.5),
                      "res_a": (0.1, 0.05, 10.0), "res_b": (0.005, 0.002, 0.5), "res_c": (0.5, 0.3, 50.0)}
_QUADRATURES = ("bin", "midpoint")
_FOLDS = ("grid", "exact")


def _static(**kw):
    return field(metadata=dict(static=True), **kw)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class FloatingResponseModel(ModelMethods):
    """A spectral model whose analytic detector response floats (module docstring).

    Build with :func:`floating_response_model`. Arrays: ``nodes``/``weights`` (n_sig, n_T, n_q)
    recoil quadrature nodes [MeV] and weights (times C_k; zero-padded where signals differ in
    n_T or n_q); ``templates`` (n_bkg, n_obs_in) fixed background templates; ``mask`` (n_obs,) on
    the output bins; ``obs_edges`` (n_obs_in + 1,) the bins of the fold; ``table`` the stopping-power
    table of the Birks integral; general path: ``groups`` (the model's stacked spectra), fast path:
    ``basis`` (n_sig, 17, n_T) unfolded basis spectra; ``transform`` None or a ResponseTransform;
    ``baked_pulls`` the Gaussian pulls of the oscillation parameters baked into the fast path;
    ``grid`` the grid of means of the interpolated fold (None: the exact fold), derived from the
    nodes and the response parameters' bounds (:meth:`with_parameters` rederives it).
    """

    nodes: jax.Array
    weights: jax.Array
    templates: jax.Array
    mask: jax.Array
    obs_edges: jax.Array
    table: QuenchingTable
    groups: tuple
    basis: jax.Array | None
    transform: ResponseTransform | None
    baked_pulls: jax.Array
    #: the grid of means of the interpolated fold (``fold="grid"``); None: the exact fold
    grid: MeanGrid | None
    #: the SpectralModel's signal components (identity-hashed), read by ``signal_spectra``
    signals: tuple = _static()
    group_members: tuple = _static()
    n_T: tuple = _static()  # recoil bins per signal (before padding)
    norms: tuple = _static()
    background_names: tuple = _static()
    exposure: float = _static()
    parameters: ParameterSet = _static()
    fast: bool = _static()
    quadrature: str = _static()
    osc_values: tuple = _static(default=())  # fast path: the baked-in oscillation parameters

    @property
    def n_obs(self) -> int:
        """Observable bins of the expectation (the transform's output bins when there is one)."""
        if self.transform is not None:
            return int(self.transform.out_edges.shape[0] - 1)
        return int(self.obs_edges.shape[0] - 1)

    @property
    def out_edges(self) -> jax.Array:
        """Edges of the bins of :meth:`expected`."""
        return self.obs_edges if self.transform is None else self.transform.out_edges

    @property
    def signal_names(self) -> tuple:
        return tuple(s.name for s in self.signals)

    @property
    def linear_parameters(self) -> tuple:
        """The parameters in which the expectation is jointly affine, the signal normalisations
        and background rates: :func:`~nuejax.inference.fitting.value_grad_hessian` builds the
        exact Hessian from this structure."""
        return tuple(dict.fromkeys(tuple(self.norms) + tuple("rate_" + b for b in self.background_names)))

    def with_parameters(self, parameters: ParameterSet):
        """The same model with a different parameter description; the grid of the interpolated
        fold follows the new bounds of the light yield, k_B and var_const."""
        m = super().with_parameters(parameters)
        if self.grid is not None:
            m = dataclasses.replace(m, grid=_grid(np.asarray(self.nodes), np.asarray(self.obs_edges), m.parameters, self.table, self.grid.step,
                                                  self.nodes.dtype))
        return m

    def constraint_nll(self, params) -> jax.Array:
        """The terms of -2 ln L besides the Poisson term: ``nll = poisson_nll(expected) + constraint_nll``."""
        return self.parameters.pulls(params) + self.baked_pulls

    def expected(self, params) -> jax.Array:
        """Expected counts per observable bin; checked front door (see ModelMethods)."""
        self._check_call(params)
        return floating_expected(self, params)

    def nll(self, params, data) -> jax.Array:
        """-2 ln L (Poisson + Gaussian pulls); checked front door."""
        self._check_call(params, data)
        return floating_nll(self, params, data)


# -- per call ------------------------------------------------------------------------------------
def floating_signal_spectra(model: FloatingResponseModel, p) -> jax.Array:
    """Recoil spectra of all signals at their bin centres, σ0 units: (n_sig, n_T) (zero-padded).

    General path: :func:`~nuejax.model.spectral_model.signal_spectra`; fast path:
    :math:`\\sum_b c_b B_{kb}`."""
    if model.basis is not None:
        return jnp.einsum("b,kbi->ki", basis_coefficients(p), model.basis)
    n = model.nodes.shape[1]
    f = signal_spectra(model, p)
    return jnp.stack([jnp.pad(fk, (0, n - fk.shape[0])) for fk in f])


def _response(p) -> ResponseParams:
    return ResponseParams(*(p[n] for n in RESPONSE_TERMS))


def response_kernels(model: FloatingResponseModel, p) -> jax.Array:
    r"""The floating kernels :math:`K_{kij} = C_k \sum_q w_{iq} P(j\mid T_{iq}; p)` (n_sig, n_T, n_obs_in):
    at the nominal response, the fixed model's kernels :math:`G^{(k)}` (for inspection; a call of
    :func:`floating_expected` contracts the same sum directly)."""
    P = bin_probabilities(model.nodes, model.obs_edges, _response(p), model.table)
    return jnp.sum(model.weights[..., None] * P, axis=2)


def _folded_signals(model: FloatingResponseModel, p) -> jax.Array:
    a = jnp.stack([p[n] for n in model.norms])
    w = (a[:, None] * floating_signal_spectra(model, p))[..., None] * model.weights  # (n_sig, n_T, n_q)
    resp = _response(p)
    mean = mean_photoelectrons(model.nodes, resp, model.table)
    if model.grid is not None:
        return grid_fold(w, mean, resp, model.obs_edges, model.grid)
    return gaussian_fold(w, mean, photoelectron_variance(mean, resp), model.obs_edges)


@jax.jit
def floating_expected(model: FloatingResponseModel, p) -> jax.Array:
    """Expected counts per observable bin (module docstring)."""
    total = _folded_signals(model, p)
    if model.background_names:
        total = total + jnp.stack([p["rate_" + b] for b in model.background_names]) @ model.templates
    if model.transform is not None:
        total = model.transform(p, total)
    return model.exposure * model.mask * total


@jax.jit
def floating_nll(model: FloatingResponseModel, p, data) -> jax.Array:
    """-2 ln L: Poisson term, Gaussian pulls, and (fast path) the pulls of the baked-in oscillations."""
    return poisson_nll(floating_expected(model, p), data) + model.parameters.pulls(p) + model.baked_pulls


# -- building -------------------------------------------------------------------------------------
def response_parameters(response: ResponseParams = ResponseParams(), free=RESPONSE_TERMS) -> tuple:
    """The four response parameters at the values of ``response`` (bounds :data:`RESPONSE_BOUNDS`),
    free if named in ``free``, else fixed.

    Raises:
        ParameterError: an unknown name in ``free``; a nominal value outside its bounds.
    """
    if isinstance(free, str):
        free = (free,)
    for n in free:
        if n not in RESPONSE_TERMS:
            raise ParameterError(unknown_name_message(n, RESPONSE_TERMS, "response parameter"))
    out = []
    for n in RESPONSE_TERMS:
        lo, hi = RESPONSE_BOUNDS[n]
        out.append(Parameter(n, float(getattr(response, n)), lo, hi, fixed=n not in free, unit=_RESPONSE_UNITS[n],
                             doc=_RESPONSE_DOCS[n]))
    return tuple(out)


def transform_parameters(transform: ResponseTransform, given=()) -> tuple:
    """Parameters of the names ``transform`` reads: those in ``given`` as passed, the others
    generated from :data:`TRANSFORM_DEFAULTS` (free).

    Raises:
        ParameterError: a ``given`` parameter that the transform does not read.
    """
    given = {p.name: p for p in given}
    reads = dict((n, t) for t, n in transform.names)
    extra = sorted(set(given) - set(reads))
    if extra:
        raise ParameterError(f"transform_parameters: {extra} are not read by the transform (it reads "
                             f"{', '.join(reads) or 'nothing'})")
    out = []
    for n, t in reads.items():
        if n in given:
            out.append(given[n])
        else:
            v, lo, hi = TRANSFORM_DEFAULTS[t]
            out.append(Parameter(n, v, lo, hi, doc=f"response transform: {t}"))
    return tuple(out)


def _merge(*groups) -> ParameterSet:
    seen, out = {}, []
    for what, ps in groups:
        for p in ps:
            if p.name in seen:
                raise ParameterError(f"parameter {p.name!r} is defined twice: by the {seen[p.name]} and by the {what}")
            seen[p.name] = what
            out.append(p)
    return ParameterSet(tuple(out))


@partial(jax.jit, static_argnums=(3, 4))
def _bin_nodes(source, t_edges, osc, radiative, n_bin_quad):
    # one compiled program per shape (line or continuum), not dozens of eager ones per component
    return recoil_bin_quadrature(source, t_edges, NewPhysics(), osc, radiative=radiative, n_bin_quad=n_bin_quad,
                                 in_sigma0_units=True)


@jax.jit
def _sm_spectra(groups, osc):
    return [group_recoil_spectra(g, NewPhysics(), osc) for g in groups]


def _basis_spectra(groups, osc):
    return [group_probe_coefficients(g, osc) for g in groups]


def _ungroup(per_group, members, n_sig):
    out = [None] * n_sig
    for arr, idx in zip(per_group, members):
        for j, i in enumerate(idx):
            out[i] = np.asarray(arr[j] if arr.ndim == 2 else arr[:, j])
    return out


def _recoil_edges(sig, recoil_edges):
    """The recoil-bin edges of a signal: given, or the uniform bins on [0, T_end] of the builder."""
    n = int(sig.t_mid.shape[0])
    t_mid = np.asarray(sig.t_mid)
    if recoil_edges is not None and sig.name in recoil_edges:
        e = np.asarray(recoil_edges[sig.name], dtype=float)
        what = f"recoil_edges[{sig.name!r}]"
    else:
        e = np.asarray(uniform_recoil_edges(float(sig.source.t_end), n), dtype=float)
        what = f"the uniform recoil bins on [0, T_end] of signal {sig.name!r}"
    if e.shape != (n + 1,):
        raise InputError(f"{what}: {e.size} edges for the signal's {n} recoil bins")
    mid = np.minimum(0.5 * (e[1:] + e[:-1]), 0.5 * (e[:-1] + np.minimum(e[1:], float(sig.source.t_end))))
    if not np.allclose(mid, t_mid, rtol=1e-9, atol=1e-12):
        raise InputError(f"{what}: bin centres do not match the signal's recoil-bin centres t_mid (a model built "
                         "from a histogram with other recoil bins: pass recoil_edges={name: edges})")
    return e


def _grid(nodes, edges, parameters: ParameterSet, table, step, dtype) -> MeanGrid:
    """The grid of means up to the largest node mean that the bounds allow: the highest light
    yield and the lowest k_B (the quenched energy falls as k_B grows)."""
    lo_v0 = parameters["var_const"].lower
    if lo_v0 < 0:
        raise InputError(f"the grid fold needs var_const >= 0 (its grid spacing assumes the width is at least the "
                         f"photoelectron statistics), but its lower bound is {lo_v0}; use fold='exact'")
    top = ResponseParams(parameters["light_yield"].upper, parameters["kB"].lower)
    mu_max = float(mean_photoelectrons(jnp.asarray(float(np.max(nodes))), top, table))
    return mean_grid(mu_max, float(np.max(edges)), float(step), dtype=dtype)


def floating_response_model(model: SpectralModel, *, fast: bool, response_names=RESPONSE_TERMS,
                            response: ResponseParams = ResponseParams(), table: QuenchingTable | None = None,
                            osc: OscillationParams = OscillationParams(), osc_params: Mapping | None = None,
                            quadrature: str = "bin", n_bin_quad: int = 4, transform: ResponseTransform | None = None,
                            transform_params=(), mask=None, recoil_edges: Mapping | None = None,
                            fold: str = "grid", grid_step: float = DEFAULT_STEP) -> FloatingResponseModel:
    """Build the floating-response version of ``model`` (module docstring).

    Args:
        model: a :class:`SpectralModel` built with the analytic response ``response`` (e.g.
            :func:`~nuejax.model.borexino_like_model`), without a live-time mask inside its kernels.
        fast: the fast path (unfolded basis spectra at fixed oscillations) or the general one.
        response_names: the response parameters that are free; the others of
            :data:`RESPONSE_TERMS` are parameters too, fixed at their nominal values.
        response: the nominal response, the one ``model`` was built with (the parameters' defaults).
        table: the quenching table (default :func:`~nuejax.detector.response.quenching_table`).
        osc: the oscillation parameters the model's kernels were built with (the within-bin SM
            shape of the quadrature weights); the builder's default is ``OscillationParams()``.
        osc_params: fast path only: the oscillation parameters to bake in, as in
            :func:`~nuejax.model.fast.fast_model` (default: the parameter set's values).
        quadrature: ``"bin"`` (the fixed kernels' nodes, ``n_bin_quad`` per recoil bin) or
            ``"midpoint"`` (the bin centre, weight the bin width).
        transform: None, or a ResponseTransform whose input bins are ``model.obs_edges``.
        transform_params: :class:`Parameter` s for names the transform reads; the others get
            :data:`TRANSFORM_DEFAULTS`.
        mask: live-time mask on the output bins; default: the model's mask (which must be all
            ones when a transform changes the bins).
        recoil_edges: ``{signal name: edges}`` where the recoil bins are not the builder's uniform
            bins on [0, T_end].
        fold: ``"grid"`` (the default: the Gaussian integrals on a fixed grid of means,
            interpolated at the nodes, :mod:`nuejax.detector.mean_grid`) or ``"exact"`` (one
            Gaussian integral per node and edge, :func:`~nuejax.detector.response.gaussian_fold`).
        grid_step: the grid's step in 2√μ (error ∝ step⁶; module docstring).

    Raises:
        InputError: an unknown quadrature or fold, ``n_bin_quad`` < 1, a grid step outside (0, 1],
            a negative lower bound of ``var_const`` with the grid fold, ``osc_params`` on the general path
            or with an unknown name, a transform whose input bins differ from the model's, a mask
            of the wrong shape, recoil bins that do not match the signals'.
        ParameterError: a response or transform parameter name that the model already has.
    """
    if not isinstance(model, SpectralModel):
        raise InputError(f"floating_response_model needs a SpectralModel, got {type(model).__name__}")
    if model.flavour is not None:
        raise InputError("floating_response_model does not support general-case models (general NSI, mediators, "
                         "NSI in propagation, day-night) yet: its recoil spectra are the flavour-diagonal ones")
    if quadrature not in _QUADRATURES:
        raise InputError(f"quadrature must be one of {_QUADRATURES}, got {quadrature!r}")
    if not (isinstance(n_bin_quad, int) and n_bin_quad >= 1):
        raise InputError(f"n_bin_quad must be an integer >= 1, got {n_bin_quad!r}")
    if fold not in _FOLDS:
        raise InputError(f"fold must be one of {_FOLDS}, got {fold!r}")
    if fold == "grid" and not (isinstance(grid_step, (int, float)) and 0 < grid_step <= 1):
        raise InputError(f"grid_step must be a number in (0, 1] (the grid fold's error grows as grid_step**6), "
                         f"got {grid_step!r}")
    if not model.signals:
        raise InputError("floating_response_model: the model has no signal component")
    dt = model.templates.dtype
    table = quenching_table(dtype=dt) if table is None else table
    sigs = model.signals
    n_sig = len(sigs)

    # quadrature nodes and weights of every signal
    if quadrature == "bin":
        f_sm = _ungroup(_sm_spectra(model.groups, osc), model.group_members, n_sig)
    nodes, weights = [], []
    for k, sig in enumerate(sigs):
        e = _recoil_edges(sig, recoil_edges)
        c = float(rate_per_day_factor(sig.source, in_sigma0_units=True))
        if quadrature == "bin":
            T, wf = _bin_nodes(shape_only(sig.source), jnp.asarray(e, dtype=dt), osc, model.radiative, n_bin_quad)
            T = np.moveaxis(np.asarray(T), 0, 1).reshape(len(e) - 1, -1)  # (n_T, L * q)
            wf = np.moveaxis(np.asarray(wf), 0, 1).reshape(len(e) - 1, -1)
            fs = f_sm[k]
            w = np.where(fs[:, None] > 0, wf / np.where(fs > 0, fs, 1.0)[:, None], 0.0)
        else:
            T = np.asarray(sig.t_mid)[:, None]
            w = (np.minimum(e[1:], float(sig.source.t_end)) - e[:-1]).clip(min=0.0)[:, None]
        nodes.append(T)
        weights.append(c * w)
    n_T = max(t.shape[0] for t in nodes)
    n_q = max(t.shape[1] for t in nodes)
    nodes = np.stack([np.pad(t, ((0, n_T - t.shape[0]), (0, n_q - t.shape[1])), mode="edge") for t in nodes])
    weights = np.stack([np.pad(w, ((0, n_T - w.shape[0]), (0, n_q - w.shape[1]))) for w in weights])

    # recoil spectra: the model's groups (general) or the unfolded basis (fast)
    base_params = model.parameters
    groups, basis, baked_pulls, osc_values = model.groups, None, jnp.zeros((), dtype=dt), ()
    if fast:
        base = baked_values(model, osc_params)
        b = _ungroup(_basis_spectra(model.groups, osc_from_params(base)), model.group_members, n_sig)
        basis = jnp.asarray(np.stack([np.pad(x, ((0, 0), (0, n_T - x.shape[1]))) for x in b]), dtype=dt)
        assert basis.shape[1] == N_BASIS
        base_params = ParameterSet(tuple(p for p in model.parameters.parameters if p.name not in OSC_PARAMS))
        baked = ParameterSet(tuple(p for p in model.parameters.parameters if p.name in OSC_PARAMS))
        baked_pulls = baked.pulls({k: base[k] for k in baked.names}).astype(dt)
        osc_values = tuple((k, float(base[k])) for k in OSC_PARAMS if k in base)
        groups = ()
    elif osc_params:
        raise InputError("osc_params is for the fast path (fast=True); the general path reads the oscillation "
                         "parameters from the parameter dict")

    # the transform and the bins of the expectation
    groups_of_params = [("model", base_params.parameters), ("response", response_parameters(response, response_names))]
    in_edges = np.asarray(model.obs_edges)
    if transform is not None:
        if not isinstance(transform, ResponseTransform):
            raise InputError(f"transform must be a ResponseTransform or None, got {type(transform).__name__}")
        t_in = np.asarray(transform.in_edges)
        if t_in.shape != in_edges.shape or not np.allclose(t_in, in_edges, rtol=1e-12, atol=1e-9):
            raise InputError("floating_response_model: the transform's input bins differ from the model's "
                             f"observable bins ({in_edges.size - 1} bins [{in_edges[0]:g}, {in_edges[-1]:g}])")
        groups_of_params.append(("response transform", transform_parameters(transform, transform_params)))
        out_edges = np.asarray(transform.out_edges)
    elif transform_params:
        raise InputError("transform_params given without a transform")
    else:
        out_edges = in_edges
    n_out = out_edges.size - 1
    if mask is None:
        m = np.asarray(model.mask)
        same = out_edges.shape == in_edges.shape and np.allclose(out_edges, in_edges)
        if not same and not np.all(m == 1.0):
            raise InputError("floating_response_model: the model has a live-time mask on its own bins and the "
                             "transform changes the bins; pass mask= on the transform's output bins")
        mask = m if same else np.ones(n_out)
    mask = np.asarray(mask, dtype=float)
    if mask.shape != (n_out,) or not np.all(np.isfinite(mask)) or np.any(mask < 0):
        raise InputError(f"mask must be finite, >= 0, of shape ({n_out},), got shape {mask.shape}")
    parameters = _merge(*groups_of_params)
    grid = _grid(nodes, in_edges, parameters, table, grid_step, dt) if fold == "grid" else None

    return FloatingResponseModel(
        jnp.asarray(nodes, dtype=dt), jnp.asarray(weights, dtype=dt), model.templates, jnp.asarray(mask, dtype=dt),
        model.obs_edges, table, groups, basis, transform, baked_pulls, grid, sigs, model.group_members if not fast else (),
        tuple(int(s.t_mid.shape[0]) for s in sigs), tuple(s.norm for s in sigs), model.background_names,
        model.exposure, parameters, bool(fast), quadrature, osc_values)
