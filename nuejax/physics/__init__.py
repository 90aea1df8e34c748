"""Physics layer: cross sections, solar neutrinos, oscillations, recoil spectra and rates."""

from .cross_section import (
    MU_NU_UNIT,
    NewPhysics,
    bks_couplings,
    bks_qed_functions,
    dsigma_dT,
    dsigma_dT_mm,
    dsigma_dT_weak,
    e_min,
    sigma_total,
    t_max,
    tree_couplings,
)
from .oscillation import (
    OscillationParams,
    ProductionProfile,
    flavour_probabilities,
    mass_state_weights,
    pmns_abs2,
    production_profile,
    survival_probability,
)
from .solar import CNO_NAMES, COMPONENT_NAMES, COMPONENTS, SOLAR_MODELS, SUBCOMPONENT_NAMES, flux, get_component
from .spectra import (
    SolarSource,
    binned_recoil_spectrum,
    build_source,
    differential_rate,
    event_rate,
    recoil_bin_quadrature,
    recoil_spectrum,
    uniform_recoil_edges,
)
from .rates import component_rates

__all__ = [name for name in dir() if not name.startswith("_")]
