r"""A floating detector response: the analytic scintillator kernel recomputed in every call.

The fixed-kernel model (:func:`~nuejax.model.borexino_like_model`) folds each signal through a
kernel :math:`G^{(k)}` built once with the nominal response (light yield, Birks :math:`k_B`,
resolution). :func:`floating_response_model` replaces that fold stage by
:class:`~nuejax.model.folds.FloatingFold`, whose response parameters are fit parameters, so the
fold is redone per call:

.. math::
    \mu_j = \mathrm{MT}\,M_j\Big[\mathcal T(\theta)\Big(\sum_k a_k\,C_k
            \sum_i f_T^{(k)}(T_i;\varepsilon,\mu_\nu,\theta_{osc})
            \sum_q w^{(k)}_{iq}\, P(j \mid T^{(k)}_{iq};\, Y, k_B, v_0, v_1)
            + \sum_b \text{rate}_b\,t_b\Big)\Big]_j

* :math:`f_T^{(k)}(T_i)`: the recoil spectrum of signal :math:`k` at its recoil-bin centres
  (σ0 units), from the model's signal stage. General path:
  :class:`~nuejax.model.signals.SolarSignals` (the precomputed cross sections, oscillations
  recomputed; the general case of :mod:`nuejax.model.flavour` too). Fast path
  (:func:`~nuejax.model.fast.fast_model` of the floating model): the *unfolded* basis spectra
  :math:`B_{kb}(T_i)` of the new-physics polynomial, extracted once at fixed oscillations from
  the same precomputed route, and :math:`f_T^{(k)} = \sum_b c_b(\varepsilon, \mu_\nu) B_{kb}`
  (:class:`~nuejax.model.signals.PolynomialSignals`).
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

The result is a :class:`~nuejax.model.pipeline.Model` like any other (signals → floating fold →
backgrounds → transform → exposure), so ``.expected``, ``.nll``, ``.parameters``, ``jax.grad`` and
the fits of :mod:`nuejax.inference` apply unchanged, and its stages combine with any other
(templates, peaks: :meth:`~nuejax.model.pipeline.Model.create`).
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from .._internal.build_jit import build_jit
from ..detector.mean_grid import DEFAULT_STEP
from ..detector.response import QuenchingTable, ResponseParams, quenching_table
from ..detector.transforms import ResponseTransform
from ..errors import InputError, ParameterError
from ..physics.cross_section import NewPhysics
from ..physics.oscillation import OscillationParams
from ..physics.precomputed import group_recoil_spectra
from ..physics.spectra import rate_per_day_factor, recoil_bin_quadrature, shape_only, uniform_recoil_edges
from .fast import fast_model
from .folds import RESPONSE_TERMS, FloatingFold, KernelFold, response_grid
from .parameters import Parameter, ParameterSet, unknown_name_message
from .pipeline import Model
from .signals import SolarSignals
from .stages import Exposure

__all__ = ["floating_response_model", "floating_signal_spectra", "response_kernels", "response_parameters",
           "transform_parameters", "RESPONSE_TERMS", "RESPONSE_BOUNDS", "TRANSFORM_DEFAULTS"]

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


def floating_signal_spectra(model: Model, p) -> jax.Array:
    """Recoil spectra of all signals at their bin centres, σ0 units: (n_sig, n_T) (zero-padded),
    from the model's signal stage (general or fast)."""
    fold = model.stage(FloatingFold)
    return fold.stacked(model.stages[model.stages.index(fold) - 1](p, None))


def response_kernels(model: Model, p) -> jax.Array:
    r"""The floating kernels :math:`K_{kij} = C_k \sum_q w_{iq} P(j\mid T_{iq}; p)` (n_sig, n_T, n_obs_in)
    of the model's floating fold (:meth:`~nuejax.model.folds.FloatingFold.kernels`)."""
    return model.stage(FloatingFold).kernels(p)


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


@build_jit(static_argnums=(3, 4))
def _bin_nodes(source, t_edges, osc, radiative, n_bin_quad):
    # one compiled program per shape (line or continuum), not dozens of eager ones per component
    return recoil_bin_quadrature(source, t_edges, NewPhysics(), osc, radiative=radiative, n_bin_quad=n_bin_quad,
                                 in_sigma0_units=True)


@build_jit
def _sm_spectra(groups, osc):
    return [group_recoil_spectra(g, NewPhysics(), osc) for g in groups]


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


def floating_response_model(model: Model, *, fast: bool, response_names=RESPONSE_TERMS,
                            response: ResponseParams = ResponseParams(), table: QuenchingTable | None = None,
                            osc: OscillationParams = OscillationParams(), osc_params: Mapping | None = None,
                            quadrature: str = "bin", n_bin_quad: int = 4, transform: ResponseTransform | None = None,
                            transform_params=(), mask=None, recoil_edges: Mapping | None = None,
                            fold: str = "grid", grid_step: float = DEFAULT_STEP) -> Model:
    """Build the floating-response version of ``model`` (module docstring).

    Args:
        model: a model with a general signal stage and a fixed kernel fold built with the analytic
            response ``response`` (e.g. :func:`~nuejax.model.borexino_like_model`, the general case
            too), without a live-time mask inside its kernels. Its fold stage is replaced by
            :class:`~nuejax.model.folds.FloatingFold`; the stages after it on the model's bins
            (the backgrounds) stay; the transform and the exposure follow.
        fast: the fast path (:func:`~nuejax.model.fast.fast_model` of the floating model: unfolded
            basis spectra at fixed oscillations) or the general one.
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
    signals_stage = model.stage(SolarSignals) if isinstance(model, Model) else None
    kernel_fold = model.stage(KernelFold) if isinstance(model, Model) else None
    if signals_stage is None or kernel_fold is None:
        raise InputError("floating_response_model needs a model with a general signal stage and a fixed kernel fold "
                         f"(e.g. borexino_like_model()), got {type(model).__name__}"
                         + (f" with stages {[type(s).__name__ for s in model.stages]}" if isinstance(model, Model) else ""))
    if quadrature not in _QUADRATURES:
        raise InputError(f"quadrature must be one of {_QUADRATURES}, got {quadrature!r}")
    if not (isinstance(n_bin_quad, int) and n_bin_quad >= 1):
        raise InputError(f"n_bin_quad must be an integer >= 1, got {n_bin_quad!r}")
    if fold not in _FOLDS:
        raise InputError(f"fold must be one of {_FOLDS}, got {fold!r}")
    if fold == "grid" and not (isinstance(grid_step, (int, float)) and 0 < grid_step <= 1):
        raise InputError(f"grid_step must be a number in (0, 1] (the grid fold's error grows as grid_step**6), "
                         f"got {grid_step!r}")
    if not fast and osc_params:
        raise InputError("osc_params is for the fast path (fast=True); the general path reads the oscillation "
                         "parameters from the parameter dict")
    sigs = signals_stage.signals
    if not sigs:
        raise InputError("floating_response_model: the model has no signal component")
    dt = model.obs_edges.dtype
    table = quenching_table(dtype=dt) if table is None else table
    n_sig = len(sigs)

    # quadrature nodes and weights of every signal
    if quadrature == "bin":
        f_sm = _ungroup(_sm_spectra(signals_stage.groups, osc), signals_stage.group_members, n_sig)
    nodes, weights = [], []
    for k, sig in enumerate(sigs):
        e = _recoil_edges(sig, recoil_edges)
        c = float(rate_per_day_factor(sig.source, in_sigma0_units=True))
        if quadrature == "bin":
            T, wf = _bin_nodes(shape_only(sig.source), jnp.asarray(e, dtype=dt), osc, signals_stage.radiative,
                               n_bin_quad)
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

    # the transform and the bins of the expectation
    groups_of_params = [("model", model.parameters.parameters), ("response", response_parameters(response, response_names))]
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
    exposure = model.stage(Exposure)
    if mask is None:
        m = np.asarray(exposure.mask) if exposure is not None else np.ones(in_edges.size - 1)
        same = out_edges.shape == in_edges.shape and np.allclose(out_edges, in_edges)
        if not same and not np.all(m == 1.0):
            raise InputError("floating_response_model: the model has a live-time mask on its own bins and the "
                             "transform changes the bins; pass mask= on the transform's output bins")
        mask = m if same else np.ones(n_out)
    mask = np.asarray(mask, dtype=float)
    if mask.shape != (n_out,) or not np.all(np.isfinite(mask)) or np.any(mask < 0):
        raise InputError(f"mask must be finite, >= 0, of shape ({n_out},), got shape {mask.shape}")
    parameters = _merge(*groups_of_params)
    grid = response_grid(nodes, in_edges, parameters, table, grid_step, dt) if fold == "grid" else None

    floating = FloatingFold(jnp.asarray(nodes, dtype=dt), jnp.asarray(weights, dtype=dt), table, grid,
                            model.obs_edges, kernel_fold.norms, quadrature)
    i = model.stages.index(kernel_fold)
    # everything after the fold on the model's own bins (backgrounds), then the transform and the exposure
    middle = tuple(s for s in model.stages[i + 1:] if not isinstance(s, Exposure))
    stages = model.stages[:i] + (floating,) + middle + ((transform,) if transform is not None else ()) \
        + (Exposure(jnp.asarray(mask, dtype=dt), exposure.exposure if exposure is not None else 1.0),)
    out = Model.create(stages, parameters, obs_edges=out_edges, constraints=model.constraints, baked=model.baked,
                       check_shape=False)
    return fast_model(out, osc_params) if fast else out
