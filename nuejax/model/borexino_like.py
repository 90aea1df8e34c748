"""The default Borexino-like model: 8 solar components (9 reweighted spectra), 8 backgrounds.

Synthetic but realistic: the analytic liquid-scintillator response of
:mod:`nuejax.detector.response` (500 pe/MeV, Birks kB = 0.011 cm/MeV), unit N_p bins over the
Borexino-like window 90-950 photoelectrons, an exposure of 1431.6 d × 71.3 t (Borexino Phase III,
Basilico et al., PRD 108, 102005 (2023), before the TFC cut), and each solar spectrum on 2000
uniform recoil bins from 0 to its end point (the paper's default grid). Background rates are
illustrative Borexino Phase-II-like values (Borexino, Nature 562, 505 (2018); ¹⁴C at 40 Bq/100 t).
"""

from __future__ import annotations

import difflib
import math
import operator
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from .._internal.build_jit import build_jit
from .._internal.ahead import ahead, wait
from ..cache import cached, is_cached
from ..detector.backgrounds import BACKGROUNDS, background_template
from ..detector.checks import check_edges
from ..detector.montecarlo import ResponseHistogram, expected_histogram
from ..detector.response import QuenchingTable, ResponseParams, quenching_table, unit_bin_edges
from ..errors import InputError
from ..io.borexino import packaged_borexino_shape
from ..physics.cross_section import NewPhysics
from ..physics.oscillation import OscillationParams
from ..physics.precomputed import precompute_spectrum
from ..physics.solar import COMPONENT_NAMES, SUBCOMPONENT_NAMES, is_line_label
from ..physics.spectra import build_source, event_rate, recoil_spectrum, shape_only, uniform_recoil_edges
from ..precision import resolve_dtype
from ..reweighting import response_matrix, transfer_kernel
from .folds import KernelFold
from .parameters import Parameter, ParameterSet
from .pipeline import Model
from .signals import SignalComponent, SolarSignals
from .stages import AddTemplates, Exposure

__all__ = ["DEFAULT_NORMS", "DEFAULT_BACKGROUND_RATES", "DEFAULT_WINDOW", "EXPOSURE_DAY_100T", "check_general_options", "general_case_fields",
           "signal_component",
           "default_parameters", "borexino_like_model"]

#: reweighted spectrum -> flux-normalisation parameter (the two 7Be lines and the CNO trio share one)
DEFAULT_NORMS = {"pp": "norm_pp", "pep": "norm_pep", "hep": "norm_hep", "7Be_862": "norm_7Be",
                 "7Be_384": "norm_7Be", "8B": "norm_8B", "13N": "norm_CNO", "15O": "norm_CNO", "17F": "norm_CNO"}
#: counts/(day·100 t), total decay rates
DEFAULT_BACKGROUND_RATES = {"14C": 3.456e6, "210Bi": 17.5, "85Kr": 6.8, "210Po": 260.0, "11C": 26.8,
                            "ext_40K": 1.0, "ext_214Bi": 1.9, "ext_208Tl": 3.3}
EXPOSURE_DAY_100T = 1431.6 * 0.713
#: the lowest and highest N_p bin centre of the default model's observable window (unit bins)
DEFAULT_WINDOW = (90, 950)
#: B16-GS98 fractional 1-sigma flux uncertainties (Vinyoles et al. 2017, `fluxes_b16.dat`), used as
#: Gaussian constraints on the flux normalisations; CNO takes the 15O value (the largest CNO flux).
FLUX_CONSTRAINTS = {"norm_pp": 0.006, "norm_pep": 0.010, "norm_hep": 0.30, "norm_7Be": 0.06, "norm_8B": 0.12,
                    "norm_CNO": 0.17}


#: labels :func:`signal_component` accepts: the nine spectra, and 7Be with both lines
_SIGNAL_LABELS = tuple(dict.fromkeys(SUBCOMPONENT_NAMES + COMPONENT_NAMES))


def _check_label(label, valid, kind: str) -> None:
    """Raise InputError for a ``label`` not in ``valid``, naming the closest valid one."""
    if isinstance(label, str) and label in valid:
        return
    close = difflib.get_close_matches(str(label), list(valid), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise InputError(f"unknown {kind} {label!r}; {hint}valid: {', '.join(valid)}")


def _check_count(value, name: str, minimum: int) -> int:
    """``value`` as an int >= ``minimum``, else InputError naming ``name``."""
    try:
        n = operator.index(value)
    except TypeError:
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}") from None
    if n < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {n}")
    return n


@build_jit(static_argnums=3)
def _sm_spectrum_and_rate(src, t_mid, osc, radiative):
    # compiled once per shape (eager dispatch compiles many small programs per component)
    f_sm = recoil_spectrum(src, t_mid, NewPhysics(), osc, radiative=radiative, in_sigma0_units=True)
    return f_sm, event_rate(src, osc=osc, radiative=radiative)


def signal_component(label: str, obs_edges, *, norm: str, response: ResponseParams = ResponseParams(),
                     table: QuenchingTable | None = None, hist: ResponseHistogram | None = None,
                     n_T: int = 2000, solar_model: str = "gs98", radiative: bool = True, n_E: int = 1000,
                     osc: OscillationParams = OscillationParams(), mask=None, dtype=None) -> SignalComponent:
    """Build one reweighted signal: source, recoil bins, response (Eq. Rij) and kernel G.

    By default the response histogram is the analytic expectation on ``n_T`` uniform recoil
    bins over [0, T_end]; pass ``hist`` (a toy-MC or ROOT histogram whose x axis starts at 0 and
    ends at or beyond the component's end point T_end) to use it instead. Recoil bins beyond
    T_end must be empty (their SM spectrum vanishes).

    The component is stored in the on-disk cache (:mod:`nuejax.cache`), keyed by every argument
    (a ``hist`` by its arrays), nuejax's code and data and the JAX environment; a later call with
    the same key loads it instead of building it (the same arrays, bit for bit).

    Raises:
        InputError: unknown ``label`` (names the closest valid one); ``n_T`` < 1; bad
            ``obs_edges``; a ``hist`` that is not a ResponseHistogram, whose observable binning
            differs from ``obs_edges`` (both named), whose recoil axis starts above 0 or ends
            below T_end, or that fails :meth:`ResponseHistogram.validate`; a bad ``mask``; entries
            in recoil bins where the SM spectrum vanishes. Messages name the component.
    """
    _check_label(label, _SIGNAL_LABELS, "signal component")
    check_edges(obs_edges, f"signal component {label!r}", "observable")
    dt = resolve_dtype(dtype)
    if hist is None:
        n_T = _check_count(n_T, f"{label}: n_T (number of recoil bins)", 1)
    elif not isinstance(hist, ResponseHistogram):
        raise InputError(f"{label}: hist must be a ResponseHistogram, got {type(hist).__name__}")
    # Everything the component depends on besides nuejax's code and data (nuejax.cache); a
    # user's histogram is keyed by its arrays like every other argument.
    arguments = dict(label=label, obs_edges=obs_edges, norm=norm, response=response, table=table, hist=hist,
                     n_T=n_T, solar_model=solar_model, radiative=radiative, n_E=n_E, osc=osc, mask=mask, dtype=dt)
    return cached("signal", label, arguments, lambda: _build_signal_component(**arguments))


#: The builds :func:`_warm_up_other_kind` started in this process (their programs' shapes).
_WARMED: set = set()


def _warm_up_other_kind(signals, obs_edges, norms, table, dt, **kw):
    """Where the first of ``signals`` is a continuum and a line follows (or the reverse), and
    neither is in the on-disk cache: build the first signal of the other kind in the background
    (:func:`nuejax._internal.ahead.ahead`, its result discarded, nothing stored), so that its
    programs compile beside the first signal's instead of after them. Returns ``(label, future)``,
    or ``(None, None)``."""
    kinds = [is_line_label(s) for s in signals]
    if len(set(kinds)) < 2:
        return None, None
    other = signals[kinds.index(not kinds[0])]
    args = {s: dict(label=s, obs_edges=obs_edges, norm=norms[s], table=table, hist=None, osc=OscillationParams(),
                    mask=None, dtype=dt, **kw) for s in (signals[0], other)}
    if any(is_cached("signal", s, a) for s, a in args.items()):
        return None, None
    shapes = (not kinds[0], len(obs_edges), str(np.dtype(dt)), tuple(sorted((k, repr(v)) for k, v in kw.items())))
    if shapes in _WARMED:  # this process compiled its programs already
        return None, None
    _WARMED.add(shapes)
    return other, ahead(_build_signal_component, **args[other])


def _build_signal_component(label, obs_edges, norm, response, table, hist, n_T, solar_model, radiative, n_E, osc,
                            mask, dtype) -> SignalComponent:
    """The body of :func:`signal_component` after its argument checks (uncached)."""
    dt = dtype
    src = build_source(label, solar_model=solar_model, n_E=n_E, dtype=dt)
    if hist is None:
        t_edges = uniform_recoil_edges(float(src.t_end), n_T, dtype=dt)
        table = quenching_table(dtype=dt) if table is None else table
        hist = expected_histogram(src, t_edges, obs_edges, response, table, osc, radiative=radiative)
    else:
        # the one check of a user histogram against this component, before anything uses it
        hist.validate(obs_edges=obs_edges, t_end=float(src.t_end), component=label)
    R = response_matrix(hist, mask=mask)
    t_edges = np.asarray(hist.t_edges)
    t_mid = 0.5 * (t_edges[1:] + t_edges[:-1])
    # The reweighting weight of a bin is taken where the spectrum lives: clip to the end point.
    t_mid = np.minimum(t_mid, 0.5 * (t_edges[:-1] + np.minimum(t_edges[1:], float(src.t_end))))
    f_sm, rate_sm = _sm_spectrum_and_rate(shape_only(src), jnp.asarray(t_mid, dtype=dt), osc, radiative)
    f_sm, rate_sm = np.asarray(f_sm), float(rate_sm)
    G = transfer_kernel(R, f_sm, rate_sm, name=label)
    t_mid = jnp.asarray(t_mid, dtype=dt)
    pre = precompute_spectrum(src, t_mid, radiative=radiative)
    return SignalComponent(src, t_mid, jnp.asarray(G, dtype=dt), pre, label, norm)


def default_parameters(signals=SUBCOMPONENT_NAMES, backgrounds=tuple(DEFAULT_BACKGROUND_RATES),
                       norms=DEFAULT_NORMS) -> ParameterSet:
    """The parameter description of the default model.

    New physics (``eps_<ee|mumu|tautau>_<L|R>``, ``mu_nu`` in 1e-11 μ_B) and oscillations
    (``sin2_theta12``, ``dm2_21`` in 1e-5 eV², with NuFIT 6.0 Gaussian constraints; θ13, θ23
    fixed) start fixed: release what you test. Flux normalisations (1 = B16-GS98) are free with
    Gaussian constraints of the B16-GS98 uncertainties (:data:`FLUX_CONSTRAINTS`; without them
    an NSI shift of ν_e couplings is almost degenerate with the normalisations); hep is fixed.
    Background rates [counts/(day·100 t)] are free and unconstrained.
    """
    ps = []
    for flav in ("ee", "mumu", "tautau"):
        for ch in ("L", "R"):
            ps.append(Parameter(f"eps_{flav}_{ch}", 0.0, -2.0, 2.0, fixed=True, doc=f"NSI epsilon^{ch}_{flav}"))
    ps.append(Parameter("mu_nu", 0.0, 0.0, 100.0, fixed=True, unit="1e-11 mu_B", doc="effective magnetic moment"))
    ps += [
        Parameter("sin2_theta12", 0.308, 0.2, 0.45, fixed=True, constraint=(0.308, 0.012), doc="NuFIT 6.0"),
        Parameter("dm2_21", 7.49, 3.0, 12.0, fixed=True, constraint=(7.49, 0.19), unit="1e-5 eV^2", doc="NuFIT 6.0"),
        Parameter("sin2_theta13", 0.02215, 0.0, 0.1, fixed=True, doc="NuFIT 6.0"),
        Parameter("sin2_theta23", 0.470, 0.0, 1.0, fixed=True, doc="NuFIT 6.0"),
    ]
    for n in dict.fromkeys(norms[s] for s in signals):
        sigma = FLUX_CONSTRAINTS.get(n)
        ps.append(Parameter(n, 1.0, 0.0, 10.0, fixed=(n == "norm_hep"),
                            constraint=None if sigma is None else (1.0, sigma), doc="flux / B16-GS98"))
    for b in backgrounds:
        r = DEFAULT_BACKGROUND_RATES.get(b, 1.0)
        ps.append(Parameter("rate_" + b, r, 0.0, max(100.0 * r, 1e3), unit="cpd/100t", doc=f"{b} decay rate"))
    return ParameterSet(tuple(ps))


def _check_build_inputs(n_T, window, exposure, signals, backgrounds, norms, progress):
    """The checks of :func:`borexino_like_model`, before anything is built."""
    n_T = _check_count(n_T, "n_T (number of recoil bins)", 1)
    try:
        if isinstance(window, (str, bytes)) or any(isinstance(w, (str, bytes)) for w in window):
            raise TypeError
        lo, hi = (float(w) for w in window)
    except (TypeError, ValueError):
        raise InputError(f"window must be two numbers (lowest, highest N_p bin), got {window!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InputError(f"window must be two finite increasing numbers (lowest, highest N_p bin), got {window!r}")
    try:
        if isinstance(exposure, (str, bytes)):
            raise TypeError
        exposure = float(exposure)
    except (TypeError, ValueError):
        raise InputError(f"exposure must be a number [day x 100 t], got {exposure!r}") from None
    if not (math.isfinite(exposure) and exposure > 0):
        raise InputError(f"exposure must be finite and > 0 [day x 100 t], got {exposure}")
    if isinstance(signals, str) or isinstance(backgrounds, str):
        raise InputError("signals and backgrounds must be sequences of labels, not a single string; "
                         "write signals=('7Be_862',)")
    signals, backgrounds = tuple(signals), tuple(backgrounds)
    for kind, labels, valid in (("signal", signals, _SIGNAL_LABELS), ("background", backgrounds, BACKGROUNDS)):
        for label in labels:
            _check_label(label, tuple(valid), kind)
        dup = [b for i, b in enumerate(labels) if b in labels[:i]]
        if dup:
            raise InputError(f"{kind} {dup[0]!r} is listed twice")
    missing = [s for s in signals if s not in norms]
    if missing:
        raise InputError(f"signal {missing[0]!r} has no flux-normalisation parameter in norms "
                         f"(norms has: {', '.join(norms)})")
    if progress is not None and not callable(progress):
        raise InputError(f"progress must be None or a callable taking one string, got {type(progress).__name__}")
    return n_T, (lo, hi), exposure, signals, backgrounds


def borexino_like_model(*, n_T: int = 2000, window=DEFAULT_WINDOW, exposure: float = EXPOSURE_DAY_100T,
                        solar_model: str = "gs98", radiative: bool = True, response: ResponseParams = ResponseParams(),
                        signals=SUBCOMPONENT_NAMES, backgrounds=tuple(DEFAULT_BACKGROUND_RATES), norms=DEFAULT_NORMS,
                        n_E: int = 1000, dtype=None, progress: Callable[[str], object] | None = None,
                        nsi=None, mediators=(), propagation_nsi: bool = False, day_night: str | None = None,
                        latitude="borexino") -> Model:
    """Build the default Borexino-like model (module docstring): a :class:`~nuejax.model.pipeline.Model`
    whose stages are the signals' recoil spectra (:class:`~nuejax.model.signals.SolarSignals`), their
    fold through fixed kernels (:class:`~nuejax.model.folds.KernelFold`), the background templates
    (:class:`~nuejax.model.stages.AddTemplates`) and the exposure (:class:`~nuejax.model.stages.Exposure`).

    ``window`` (lowest, highest) N_p bin centre (unit bins); ``exposure`` [day × 100 t]; ``signals``
    from :data:`~nuejax.physics.solar.SUBCOMPONENT_NAMES`, ``backgrounds`` from
    :data:`~nuejax.detector.backgrounds.BACKGROUNDS`. ``progress``, if given, is called with one
    line per component as it is built (``"building 7Be_862 (4/9)"``, then
    ``"building background 85Kr (3/8)"``); by default nothing is printed. ``progress=print``
    shows it.

    The general case (:mod:`nuejax.model.flavour`; any of these makes the model one): ``nsi``
    (``'all'`` or names of :data:`~nuejax.model.flavour.GENERAL_NSI_NAMES` to add, fixed at 0),
    ``mediators`` (``'zprime'``, ``'phi'``), ``propagation_nsi`` (the NSI also in the matter
    potential of the Sun and the Earth), ``day_night`` (``'day'``, ``'night'`` or ``'average'``
    data; the last two with the Earth crossing at ``latitude``, degrees or a detector name of
    :data:`~nuejax.physics.earth.DETECTOR_LATITUDES`).

    Raises:
        InputError: before anything is built: ``n_T`` < 1; ``window`` not two finite increasing
            numbers; ``exposure`` not finite or <= 0; an unknown or repeated signal or background
            label (names the closest valid one and lists them); a signal missing from ``norms``;
            a ``progress`` that is not callable. While building: a template that is empty in the
            window (names the background).
    """
    n_T, window, exposure, signals, backgrounds = _check_build_inputs(n_T, window, exposure, signals, backgrounds,
                                                                      norms, progress)
    general_case = nsi is not None or bool(mediators) or propagation_nsi or day_night is not None
    if general_case:  # checked before anything is built
        check_general_options(nsi, mediators, day_night, latitude)
    report = progress if progress is not None else (lambda message: None)
    dt = resolve_dtype(dtype)
    obs_edges = unit_bin_edges(window[0], window[1], dtype=dt)
    table = quenching_table(dtype=dt)
    sigs = []
    # a continuum's and a line's programs differ: the first of the other kind compiles beside the first
    warm, warming = _warm_up_other_kind(signals, obs_edges, norms, table, dt, response=response, n_T=n_T,
                                        solar_model=solar_model, radiative=radiative, n_E=n_E)
    for k, s in enumerate(signals, start=1):
        if s == warm:
            wait(warming)  # its programs are compiled: not a second time here
        report(f"building {s} ({k}/{len(signals)})")
        sigs.append(signal_component(s, obs_edges, norm=norms[s], response=response, table=table, n_T=n_T,
                                     solar_model=solar_model, radiative=radiative, n_E=n_E, dtype=dt))
    templates = []
    for k, b in enumerate(backgrounds, start=1):
        report(f"building background {b} ({k}/{len(backgrounds)})")
        kind, args = BACKGROUNDS[b]
        shape = packaged_borexino_shape(args[0]) if kind == "file" else None
        templates.append(background_template(b, obs_edges, response, table, shape=shape))
    templates = np.stack(templates) if templates else np.zeros((0, len(obs_edges) - 1))
    params = default_parameters(signals, backgrounds, norms)
    general = dict()
    if general_case:
        general = general_case_fields(sigs, params, nsi, mediators, propagation_nsi, day_night, latitude, radiative, dt)
        params = general.pop("parameters")
    physics = (SolarSignals.create(sigs, params, radiative=radiative, **general), KernelFold.create(sigs)) if sigs else ()
    stages = physics + (AddTemplates(jnp.asarray(templates, dtype=dt), tuple("rate_" + b for b in backgrounds)),
                        Exposure(jnp.ones(len(obs_edges) - 1, dtype=dt), exposure))
    return Model.create(stages, params, obs_edges=obs_edges, check_shape=False)


def check_general_options(nsi, mediators, day_night, latitude):
    """Check the general-case options of :func:`borexino_like_model` (InputError naming the problem)."""
    from ..physics.earth import DETECTOR_LATITUDES
    from .flavour import FlavourOptions, general_parameters

    if isinstance(mediators, str):
        raise InputError(f"mediators must be a sequence of names, not a string; write mediators=({mediators!r},)")
    if isinstance(nsi, str) and nsi != "all":
        raise InputError(f"nsi must be 'all' or a sequence of names, not {nsi!r}; write nsi=({nsi!r},)")
    general_parameters("all" if nsi is None or nsi == "all" else nsi, tuple(mediators))
    FlavourOptions(period=day_night or "day")
    if isinstance(latitude, str) and latitude.lower() not in DETECTOR_LATITUDES:
        raise InputError(f"unknown detector {latitude!r}: known are {sorted(DETECTOR_LATITUDES)}, or give degrees")
    if not isinstance(latitude, str) and not (-90.0 <= float(latitude) <= 90.0):
        raise InputError(f"latitude must lie in [-90, 90] degrees, got {latitude}")


def general_case_fields(sigs, params: ParameterSet, nsi, mediators, propagation, day_night, latitude, radiative, dt) -> dict:
    """The fields of a general-case model (:mod:`nuejax.model.flavour`) and its parameter set."""
    from ..physics.earth import earth_exposure
    from .flavour import FlavourOptions, general_parameters, state_nodes

    extra = general_parameters("all" if nsi is None or nsi == "all" else nsi, tuple(mediators))
    if nsi is None:  # only what the other options need: the diagonal NSI are there already
        extra = tuple(p for p in extra if not p.name.startswith("eps_"))
    new = tuple(p for p in extra if p.name not in params)
    opts = FlavourOptions(propagation=bool(propagation), period=day_night or "day")
    earth = None if opts.period == "day" else earth_exposure(latitude, dtype=dt)
    nodes = tuple(state_nodes(s.pre, s.t_mid, radiative=radiative) for s in sigs)
    return dict(parameters=ParameterSet(params.parameters + new), flavour=opts, state_nodes=nodes, earth=earth)
