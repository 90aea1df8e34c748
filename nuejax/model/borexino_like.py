"""The default Borexino-like model: 8 solar components (9 reweighted spectra), 8 backgrounds.

Synthetic but realistic: the analytic liquid-scintillator response of
:mod:`nuejax.detector.response` (500 pe/MeV, Birks kB = 0.011 cm/MeV), unit N_p bins over the
Borexino-like window 90-950 photoelectrons, an exposure of 1431.6 d × 71.3 t (Borexino Phase III,
Basilico et al., PRD 108, 102005 (2023), before the TFC cut), and each solar spectrum on 2000
uniform recoil bins from 0 to its end point (the paper's default grid). Background rates are
illustrative Borexino Phase-II-like values (Borexino, Nature 562, 505 (2018); ¹⁴C at 40 Bq/100 t).
"""

from __future__ import annotations


import jax.numpy as jnp
import numpy as np

from ..detector.backgrounds import background_template
from ..detector.montecarlo import ResponseHistogram, expected_histogram
from ..detector.response import QuenchingTable, ResponseParams, quenching_table, unit_bin_edges
from ..physics.cross_section import NewPhysics
from ..physics.oscillation import OscillationParams
from ..physics.precomputed import precompute_spectrum
from ..physics.solar import SUBCOMPONENT_NAMES
from ..physics.spectra import build_source, event_rate, recoil_spectrum, uniform_recoil_edges
from ..precision import resolve_dtype
from ..reweighting import response_matrix, transfer_kernel
from .parameters import Parameter, ParameterSet
from .spectral_model import SignalComponent, SpectralModel

__all__ = ["DEFAULT_NORMS", "DEFAULT_BACKGROUND_RATES", "EXPOSURE_DAY_100T", "signal_component",
           "default_parameters", "borexino_like_model"]

#: reweighted spectrum -> flux-normalisation parameter (the two 7Be lines and the CNO trio share one)
DEFAULT_NORMS = {"pp": "norm_pp", "pep": "norm_pep", "hep": "norm_hep", "7Be_862": "norm_7Be",
                 "7Be_384": "norm_7Be", "8B": "norm_8B", "13N": "norm_CNO", "15O": "norm_CNO", "17F": "norm_CNO"}
#: counts/(day·100 t), total decay rates
DEFAULT_BACKGROUND_RATES = {"14C": 3.456e6, "210Bi": 17.5, "85Kr": 6.8, "210Po": 260.0, "11C": 26.8,
                            "ext_40K": 1.0, "ext_214Bi": 1.9, "ext_208Tl": 3.3}
EXPOSURE_DAY_100T = 1431.6 * 0.713
#: B16-GS98 fractional 1-sigma flux uncertainties (Vinyoles et al. 2017, `fluxes_b16.dat`), used as
#: Gaussian constraints on the flux normalisations; CNO takes the 15O value (the largest CNO flux).
FLUX_CONSTRAINTS = {"norm_pp": 0.006, "norm_pep": 0.010, "norm_hep": 0.30, "norm_7Be": 0.06, "norm_8B": 0.12,
                    "norm_CNO": 0.17}


def signal_component(label: str, obs_edges, *, norm: str, response: ResponseParams = ResponseParams(),
                     table: QuenchingTable | None = None, hist: ResponseHistogram | None = None,
                     n_T: int = 2000, solar_model: str = "gs98", radiative: bool = True, n_E: int = 1000,
                     osc: OscillationParams = OscillationParams(), mask=None, dtype=None) -> SignalComponent:
    """Build one reweighted signal: source, recoil bins, response (Eq. Rij) and kernel G.

    By default the response histogram is the analytic expectation on ``n_T`` uniform recoil
    bins over [0, T_end]; pass ``hist`` (a toy-MC or ROOT histogram whose x axis starts at 0 and
    ends at or beyond the component's end point) to use it instead.
    """
    dt = resolve_dtype(dtype)
    src = build_source(label, solar_model=solar_model, n_E=n_E, dtype=dt)
    if hist is None:
        t_edges = uniform_recoil_edges(float(src.t_end), n_T, dtype=dt)
        table = quenching_table(dtype=dt) if table is None else table
        hist = expected_histogram(src, t_edges, obs_edges, response, table, osc, radiative=radiative)
    else:
        if hist.counts.shape[1] != len(obs_edges) - 1 or not np.allclose(hist.obs_edges, np.asarray(obs_edges)):
            raise ValueError(f"{label}: response histogram's observable binning does not match the model's")
    R = response_matrix(hist, mask=mask)
    t_edges = np.asarray(hist.t_edges)
    t_mid = 0.5 * (t_edges[1:] + t_edges[:-1])
    # The reweighting weight of a bin is taken where the spectrum lives: clip to the end point.
    t_mid = np.minimum(t_mid, 0.5 * (t_edges[:-1] + np.minimum(t_edges[1:], float(src.t_end))))
    f_sm = np.asarray(recoil_spectrum(src, jnp.asarray(t_mid, dtype=dt), NewPhysics(), osc, radiative=radiative,
                                      in_sigma0_units=True))
    rate_sm = float(event_rate(src, osc=osc, radiative=radiative))
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


def borexino_like_model(*, n_T: int = 2000, window=(90, 950), exposure: float = EXPOSURE_DAY_100T,
                        solar_model: str = "gs98", radiative: bool = True, response: ResponseParams = ResponseParams(),
                        signals=SUBCOMPONENT_NAMES, backgrounds=tuple(DEFAULT_BACKGROUND_RATES), norms=DEFAULT_NORMS,
                        n_E: int = 1000, dtype=None) -> SpectralModel:
    """Build the default Borexino-like :class:`SpectralModel` (module docstring)."""
    dt = resolve_dtype(dtype)
    obs_edges = unit_bin_edges(window[0], window[1], dtype=dt)
    table = quenching_table(dtype=dt)
    sigs = tuple(signal_component(s, obs_edges, norm=norms[s], response=response, table=table, n_T=n_T,
                                  solar_model=solar_model, radiative=radiative, n_E=n_E, dtype=dt) for s in signals)
    if backgrounds:
        templates = np.stack([background_template(b, obs_edges, response, table) for b in backgrounds])
    else:
        templates = np.zeros((0, len(obs_edges) - 1))
    return SpectralModel(sigs, jnp.asarray(templates, dtype=dt), jnp.ones(len(obs_edges) - 1, dtype=dt), obs_edges,
                         float(exposure), tuple(backgrounds), default_parameters(signals, backgrounds, norms),
                         radiative)
