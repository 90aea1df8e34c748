r"""The Borexino Phase-III analysis on the open data: CNO, then NSI and μ_ν from the same fit.

Data: the TFC-subtracted energy spectrum of D. Basilico et al. (Borexino), Phys. Rev. D 108,
102005 (2023), arXiv:2205.15975 (817 bins of 2.4–3.3 keV, 320–2640 keV), exposure
1431.6 d × 71.3 t × 0.6397 (TFC), and the Monte Carlo shapes of the open data
(arXiv:2005.12829) on their 185 keV bins (:mod:`nuejax.io.borexino`; ``docs/borexino.md``
gives every modelling choice and how much it moves the results).

Model (a template analysis, :func:`~nuejax.model.template_model.template_model`):

* pp, ⁷Be, pep, CNO: the published shapes (drawn at the zero-threshold rates 131.1, 47.9, 2.74
  and 4.92 cpd/100 t, arXiv:2005.12829 Table 2) plus nuejax's folded difference
  :math:`f(\varepsilon,\mu_\nu) - f(\mathrm{SM})` through a response calibrated on those shapes
  (:mod:`nuejax.detector.calibration`), so the SM point reproduces the shapes exactly;
* ⁸B: no published shape: nuejax's SM spectrum folded through the calibrated response;
* ²¹⁰Bi (drawn at 10.0 cpd/100 t), ¹¹C, ⁸⁵Kr and the external ²¹⁴Bi, ⁴⁰K, ²⁰⁸Tl γ: the published
  shapes, the last five normalised to their integral above 87.6 keV (the files' convention);
* ²¹⁰Po: no published shape: a Gaussian peak on the data axis with free rate, position and width;
* all of it on the MC energy scale, mapped to the data by a response transform with floating
  scale, offset and extra resolution (:mod:`nuejax.detector.transforms`);
* constraints: ²¹⁰Bi half-Gaussian above 10.8 ± 1.0 cpd/100 t, pep 2.74 ± 0.04, pp 131.1 ± 10,
  ⁸B 12 % (B16-GS98) around nuejax's SM rate.
"""

from __future__ import annotations

import dataclasses
import time
from importlib import resources

import numpy as np

from .._internal.placement import on_host, to_default_device
from ..cache import cached
from ..detector.calibration import CalibrationTarget, KeVResponse, as_photoelectron_axis, calibrate_response
from ..detector.montecarlo import expected_histogram
from ..detector.response import quenching_table
from ..detector.transforms import ResponseTransform
from ..errors import InputError
from ..io.borexino import ObservedSpectrum, packaged_borexino_shape, packaged_borexino_spectrum
from ..model.borexino_like import signal_component
from ..model.constraints import HalfGaussianConstraint
from ..model.fast import fast_model
from ..model.flavour import FlavourOptions, general_parameters, state_nodes
from ..model.folds import KernelFold
from ..model.parameters import Parameter, ParameterSet
from ..model.pipeline import Model, expected
from ..model.signals import MediatorSignals, SolarSignals
from ..model.template_model import template_model
from ..model.templates import GaussianPeak, shape_template
from ..physics.oscillation import OscillationParams
from ..physics.rates import source_rates
from ..physics.spectra import build_source, uniform_recoil_edges

__all__ = ["EXPOSURE", "SOLAR", "BACKGROUNDS", "PUBLISHED_CNO", "SSM_UNCERTAINTY", "Phase3Choices", "phase3_data",
           "calibration_targets", "phase3_calibration", "borexino_phase3_model", "sm_rates", "ssm_constrained"]

#: day x 100 t after the TFC cut (FORMAT.md: 1431.6 d x 71.3 t x 63.97 %)
EXPOSURE = 1431.6 * 0.713 * 0.6397
#: published solar shapes: rate parameter -> (file stem, nuejax spectra, zero-threshold rate drawn)
SOLAR = {"rate_pp": ("pp", ("pp",), 131.1), "rate_7Be": ("Be7", ("7Be_862", "7Be_384"), 47.9),
         "rate_pep": ("pep", ("pep",), 2.74), "rate_CNO": ("CNO", ("13N", "15O", "17F"), 4.92)}
#: background shapes: rate parameter -> (file stem, zero-threshold rate drawn, or None: integral)
BACKGROUNDS = {"rate_210Bi": ("Bi210", 10.0), "rate_11C": ("C11", None), "rate_85Kr": ("Kr85", None),
               "rate_ext_214Bi": ("Ext_Bi214", None), "rate_ext_40K": ("Ext_K40", None),
               "rate_ext_208Tl": ("Ext_Tl208", None)}
#: Borexino's result with systematics (PRD 108, 102005): 6.7 +2.0 -0.8 cpd/100 t
PUBLISHED_CNO = (6.7, 2.0, 0.8)


@dataclasses.dataclass(frozen=True)
class Phase3Choices:
    """The modelling choices that docs/borexino.md varies (defaults: the analysis of ``nuejax borexino``).

    ``rebin``: data bins merged per fit bin (the 2.4–3.3 keV bins are far below the resolution);
    ``e_max``: highest data edge [keV] (the shapes end at 2610.8 keV); ``pp_sigma``: width of the
    pp constraint (None: pp free); ``res_start``: starting extra resolution a [√keV];
    ``fit_calibration_norms``: fit one normalisation per shape in the calibration;
    ``bi210_constraint``: apply the ²¹⁰Bi half-Gaussian; ``n_T``: recoil bins per spectrum in the
    calibration and the reweighting kernels; ``general_nsi``: NSI parameters beyond ε^{L,R}_ee
    (names of :data:`~nuejax.model.flavour.GENERAL_NSI_NAMES`, e.g. the off-diagonal
    ``eps_etau_L_re``), which make the reweighted physics a general-case model (fixed at 0 until
    released); ``mediators``: add a light vector (``zprime_coupling``, ``zprime_mass``) and scalar
    (``phi_coupling``, ``phi_mass``) mediator, evaluated on the fast path by
    :class:`~nuejax.model.signals.MediatorSignals` (ε^{L,R}_ee are then not parameters).
    """

    rebin: int = 4
    e_max: float = 2610.79
    pp_sigma: float | None = 10.0
    pep_sigma: float = 0.04
    b8_sigma: float = 0.12
    bi210_constraint: bool = True
    res_start: float = 0.5
    fit_calibration_norms: bool = True
    n_T: int = 150
    general_nsi: tuple = ()
    mediators: bool = False


#: B16-GS98 fractional flux uncertainties (Vinyoles et al. 2017), the SSM constraints of the NSI and
#: magnetic-moment fits (as Borexino's NSI analysis, arXiv:1905.03512, constrains the fluxes to the SSM)
SSM_UNCERTAINTY = {"rate_pp": 0.006, "rate_7Be": 0.06, "rate_pep": 0.010, "rate_CNO": 0.17, "rate_8B": 0.12}
_GROUPS = {**{k: v[1] for k, v in SOLAR.items()}, "rate_8B": ("8B",)}


def sm_rates(solar_model: str = "gs98") -> dict:
    """nuejax's SM rate [cpd/100 t, zero threshold] of each solar rate parameter (B16 fluxes,
    NuFIT 6.0 oscillations, BKS cross section): what the rate parameters mean at the SSM."""
    rate = _label_rates(solar_model)
    return {n: float(sum(rate[label] for label in group)) for n, group in _GROUPS.items()}


def _label_rates(solar_model: str = "gs98", radiative: bool = True) -> dict:
    """nuejax's SM rate [cpd/100 t, zero threshold] of each spectrum of :data:`_GROUPS`."""
    labels = [label for group in _GROUPS.values() for label in group]
    sources = [build_source(label, solar_model=solar_model) for label in labels]
    return dict(zip(labels, source_rates(sources, radiative=radiative)))


def ssm_constrained(model: Model, rates: dict | None = None) -> Model:
    """``model`` with every solar rate Gaussian-constrained to its SSM value (:data:`SSM_UNCERTAINTY`),
    replacing the CNO analysis' pp, pep and ⁸B constraints: without it a change of the cross
    section's normalisation by NSI or μ_ν is absorbed by the free rates."""
    rates = sm_rates() if rates is None else rates
    ps = model.parameters
    for n, f in SSM_UNCERTAINTY.items():
        ps = ps.update(n, constraint=(rates[n], f * rates[n]), value=rates[n])
    return model.with_parameters(ps)


def _shape_error(stem: str) -> np.ndarray:
    """Column 4 (uncertainty of the density) of a packaged shape file; 0 in empty bins."""
    folder = resources.files("nuejax") / "data" / "borexino_phase3"
    match = [f for f in folder.iterdir() if f.name.startswith(stem + "_pdfkeV")]
    with resources.as_file(match[0]) as path:
        return np.loadtxt(path, delimiter=",")[:, 3]


def phase3_data(choices: Phase3Choices = Phase3Choices(), spectrum: ObservedSpectrum | None = None) -> ObservedSpectrum:
    """The TFC-subtracted spectrum inside the shapes' range, ``choices.rebin`` bins merged."""
    s = packaged_borexino_spectrum() if spectrum is None else spectrum
    s = s.select(s.edges[0], choices.e_max)
    return s.rebin(choices.rebin, drop_remainder=True) if choices.rebin > 1 else s


def calibration_targets() -> tuple:
    """The four published solar shapes as calibration targets, per unit of zero-threshold rate."""
    out = []
    for name, (stem, labels, drawn) in SOLAR.items():
        sh = packaged_borexino_shape(stem)
        w = np.diff(sh.edges)
        err = np.where(sh.density > 0, _shape_error(stem), 0.0)
        out.append(CalibrationTarget(name, labels, sh.density * w / drawn, err * w / drawn))
    return tuple(out)


def _physics(edges, response: KeVResponse, n_T: int, radiative: bool = True, general_nsi: tuple = (),
             mediators: bool = False, fast: bool = True):
    """The reweighted physics on the MC keV bins (signals and their fixed kernel fold): each
    solar group's spectra folded through the calibrated response, per unit of the group's SM rate
    (norm = its rate parameter). With ``mediators`` and ``fast`` the signals are the fast
    mediator evaluation (:class:`~nuejax.model.signals.MediatorSignals`) taken from the general one."""
    params, pe_edges = as_photoelectron_axis(response, edges)
    pe_edges = np.asarray(pe_edges)
    table = quenching_table()
    osc = OscillationParams()
    groups = _GROUPS
    signals = []
    rate = _label_rates(radiative=radiative)
    for rate_name, labels in groups.items():
        members = []
        for label in labels:
            src = build_source(label)
            hist = expected_histogram(src, uniform_recoil_edges(float(src.t_end), n_T), pe_edges, params, table, osc,
                                      radiative=radiative)
            members.append((signal_component(label, pe_edges, norm=rate_name, hist=hist, radiative=radiative),
                            rate[label]))
        total = sum(r for _, r in members)
        signals += [dataclasses.replace(s, kernel=s.kernel / total) for s, _ in members]
    names = tuple(groups)
    rates = [Parameter(n, 1.0, 0.0, 1e4) for n in names]
    ps = ParameterSet(tuple(rates + _physics_parameters(general_nsi, mediators)))
    general = {}
    if general_nsi or mediators:  # the general case: the trace form of nuejax.model.flavour
        general = dict(flavour=FlavourOptions(),
                       state_nodes=tuple(state_nodes(s.pre, s.t_mid, radiative=radiative) for s in signals))
    stage = SolarSignals.create(signals, ps, radiative=radiative, **general)
    if mediators and fast:
        stage = MediatorSignals.from_general(stage, ps.defaults())
        ps = ParameterSet(tuple(rates + _physics_parameters((), mediators, fast=True)))
    stages = (stage, KernelFold.create(signals))
    return Model.create(stages, ps, obs_edges=pe_edges, check_shape=False), names


def _physics_parameters(general_nsi: tuple = (), mediators: bool = False, fast: bool = False) -> list:
    """The new-physics parameters (all fixed at 0): ε^{L,R}_ee, μ_ν, the released ``general_nsi``
    and, with ``mediators``, both mediators' couplings and masses (with ``fast`` only μ_ν and the
    mediators: what :class:`~nuejax.model.signals.MediatorSignals` reads)."""
    base = [Parameter("eps_ee_L", 0.0, -2.0, 2.0, fixed=True, doc="NSI epsilon^L_ee"),
            Parameter("eps_ee_R", 0.0, -2.0, 2.0, fixed=True, doc="NSI epsilon^R_ee"),
            Parameter("mu_nu", 0.0, 0.0, 100.0, fixed=True, unit="1e-11 mu_B", doc="effective magnetic moment")]
    have = {p.name for p in base}
    extra = [p for p in general_parameters(tuple(general_nsi), ("zprime", "phi") if mediators else ())
             if p.name not in have]
    out = base + extra
    if fast and mediators:
        out = [p for p in out if p.name in MediatorSignals.reads]
    return out


def phase3_calibration(choices: Phase3Choices = Phase3Choices(), *, progress=None):
    """The detector response calibrated on the published shapes for ``choices`` (its
    ``fit_calibration_norms`` and ``n_T``; :func:`~nuejax.detector.calibration.calibrate_response`
    on :func:`calibration_targets`, a cached entry): what :func:`borexino_phase3_model` fits where
    it is given none, for a caller that builds several models on one calibration and wants it
    first (``nuejax combine`` starts its mediator models' builds on it)."""
    say = progress or (lambda msg: None)
    edges = packaged_borexino_shape("pp").edges  # all ten shapes share these bins
    with on_host():  # a few hundred small programs, compiled faster for the CPU (nuejax._internal.placement)
        t0 = time.perf_counter()
        calibration = calibrate_response(calibration_targets(), edges, fit_norms=choices.fit_calibration_norms,
                                         n_T=choices.n_T)
    say(f"calibrated the response on the published pp, 7Be, pep, CNO shapes in {time.perf_counter() - t0:.1f} s")
    return calibration


def borexino_phase3_model(choices: Phase3Choices = Phase3Choices(), *, calibration=None, fast: bool = True,
                          progress=None):
    """Build the Phase-III model (module docstring) and return ``(model, data, calibration)``.

    ``calibration``: a :class:`~nuejax.detector.calibration.CalibrationResult` to reuse (else it
    is fitted here, ~20 s); ``fast``: the reweighted physics on the fast path (folded basis
    templates) or the general one (recoil spectra recomputed per call).
    """
    say = progress or (lambda msg: None)
    if choices.rebin < 1:
        raise InputError(f"rebin must be >= 1, got {choices.rebin}")
    if isinstance(choices.general_nsi, str):
        raise InputError(f"general_nsi must be a sequence of names, not a string; write ({choices.general_nsi!r},)")
    if choices.mediators and choices.general_nsi and fast:
        raise InputError("Phase3Choices: mediators with general_nsi have no fast path; build with fast=False")
    data = phase3_data(choices)
    edges = packaged_borexino_shape("pp").edges  # all ten shapes share these bins
    if calibration is None:
        calibration = phase3_calibration(choices, progress=say)
    with on_host():  # a few hundred small programs, compiled faster for the CPU (nuejax._internal.placement)
        t0 = time.perf_counter()
        built = []

        def build():
            built.append(True)
            return _assemble(choices, data.edges, edges, calibration.response, fast)

        # the whole model is one cache entry: a warm run loads its few arrays instead of running the
        # build's programs again (the calibration and the spectra below are cached entries too)
        model = cached("phasethree", "model", {"choices": choices, "response": calibration.response, "fast": fast},
                       build)
    model = to_default_device(model)
    how = "built" if built else "loaded from the cache"
    say(f"{how} the model ({sum(len(v) for v in _GROUPS.values())} reweighted spectra, {len(BACKGROUNDS)} shapes, "
        f"210Po peak, {data.n_bins} fit bins) in {time.perf_counter() - t0:.1f} s")
    return model, data, calibration


def _assemble(choices: Phase3Choices, data_edges, edges, response, fast: bool):
    """The Phase-III model (module docstring) for the calibrated ``response`` (the build of
    :func:`borexino_phase3_model`, which caches its result)."""
    physics, physics_names = _physics(edges, response, choices.n_T, general_nsi=tuple(choices.general_nsi),
                                      mediators=choices.mediators, fast=fast)
    folded_sm = {}
    sm = physics.parameters.defaults()
    for n in physics_names:
        folded_sm[n] = np.asarray(expected(physics, {**sm, **{m: 0.0 * sm[m] for m in physics_names if m != n}}))
    offset = []
    for n in physics_names:
        if n in SOLAR:
            stem, _, drawn = SOLAR[n]
            sh = packaged_borexino_shape(stem)
            offset.append(shape_template(sh.edges, sh.density, edges, normalisation="zero_threshold",
                                         drawn_rate=drawn, name=stem) - folded_sm[n])
        else:  # no published shape: nuejax's folded spectrum is the template
            offset.append(np.zeros(len(edges) - 1))
    templates, tnames = [], []
    for n, (stem, drawn) in BACKGROUNDS.items():
        sh = packaged_borexino_shape(stem)
        conv = dict(normalisation="zero_threshold", drawn_rate=drawn) if drawn else dict(normalisation="integral")
        templates.append(shape_template(sh.edges, sh.density, edges, name=stem, **conv))
        tnames.append(n)
    b8_rate = _label_rates()["8B"]
    starts = {"rate_pp": 131.1, "rate_7Be": 47.9, "rate_pep": 2.74, "rate_CNO": 5.0, "rate_8B": b8_rate,
              "rate_210Bi": 10.0, "rate_11C": 2.0, "rate_85Kr": 4.0, "rate_ext_214Bi": 0.65, "rate_ext_40K": 0.26,
              "rate_ext_208Tl": 1.86}
    cons = {"rate_pep": (2.74, choices.pep_sigma), "rate_8B": (b8_rate, choices.b8_sigma * b8_rate)}
    if choices.pp_sigma is not None:
        cons["rate_pp"] = (131.1, choices.pp_sigma)
    ps = [Parameter(n, v, 0.0, max(1e3, 20 * v), constraint=cons.get(n), unit="cpd/100t") for n, v in starts.items()]
    ps += _physics_parameters(tuple(choices.general_nsi), choices.mediators, fast)
    ps += [Parameter("e_scale", 1.0, 0.9, 1.1, doc="data energy / MC energy"),
           Parameter("e_offset", 0.0, -60.0, 60.0, unit="keV"),
           # lower bound > 0: as sigma -> 0 the likelihood is flat to all orders in the resolution
           # (exp(-d^2/2 sigma^2)), a plateau a fit could stop on; 0.2 gives sigma >= 3.6 keV at 320 keV
           Parameter("e_res_a", choices.res_start, 0.2, 4.0, unit="sqrt(keV)", doc="extra resolution, sigma^2 = a^2 E"),
           Parameter("rate_210Po", 45.0, 0.0, 1e3, unit="cpd/100t"),
           Parameter("po_mean", 440.0, 380.0, 500.0, unit="keV", doc="210Po peak position (data scale)"),
           Parameter("po_sigma", 40.0, 10.0, 90.0, unit="keV", doc="210Po peak width")]
    parameters = ParameterSet(tuple(ps))
    transform = ResponseTransform.create(edges, data_edges, scale="e_scale", offset="e_offset", res_a="e_res_a")
    constraints = (HalfGaussianConstraint.create("rate_210Bi", 10.8, 1.0, side="upper"),) \
        if choices.bi210_constraint else ()
    # the mediators' masses enter non-polynomially: their fast path is the signal stage itself
    inner = fast_model(physics) if fast and not choices.mediators else physics
    return template_model(in_edges=edges, obs_edges=data_edges, templates=np.stack(templates),
                          template_names=tuple(tnames), parameters=parameters, exposure=EXPOSURE,
                          physics=inner, physics_offset=np.stack(offset), physics_names=physics_names,
                          transform=transform, peaks=(GaussianPeak(("rate_210Po", "po_mean", "po_sigma")),),
                          constraints=constraints)
