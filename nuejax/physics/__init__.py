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
    weak_kinematics,
)
from .general_nsi import (
    MEDIATOR_COUPLING_UNIT,
    GeneralPhysics,
    dsigma_dT_matrix,
    dsigma_dT_state,
    hermitian,
    scalar_mediator_dsigma_dT,
    vector_mediator_epsilon,
)
from .earth import DETECTOR_LATITUDES, EarthExposure, arrival_density_matrix, earth_exposure, night_density_matrix
from .oscillation import (
    OscillationParams,
    ProductionProfile,
    flavour_probabilities,
    mass_state_weights,
    pmns_abs2,
    production_profile,
    survival_probability,
    pmns_matrix,
    density_matrix,
    mass_state_weights_nsi,
    mass_state_weights_three_flavour,
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
    recoil_spectrum_general,
    event_rate_general,
    day_night_asymmetry,
    state_table,
)
from .rates import component_rates
from .atomic import XENON, AtomicTarget, active_electrons, atoms_per_tonne, electrons_per_tonne, solar_recoil_rate

__all__ = [
    "active_electrons", "AtomicTarget", "atoms_per_tonne", "electrons_per_tonne", "solar_recoil_rate", "XENON",
    "arrival_density_matrix", "binned_recoil_spectrum", "bks_couplings", "bks_qed_functions", "build_source",
    "CNO_NAMES", "COMPONENT_NAMES", "component_rates", "COMPONENTS", "day_night_asymmetry", "density_matrix",
    "DETECTOR_LATITUDES", "differential_rate", "dsigma_dT", "dsigma_dT_matrix", "dsigma_dT_mm", "dsigma_dT_state",
    "dsigma_dT_weak", "e_min", "earth_exposure", "EarthExposure", "event_rate", "event_rate_general",
    "flavour_probabilities", "flux", "GeneralPhysics", "get_component", "hermitian", "mass_state_weights",
    "mass_state_weights_nsi", "mass_state_weights_three_flavour", "MEDIATOR_COUPLING_UNIT", "MU_NU_UNIT",
    "NewPhysics", "night_density_matrix", "OscillationParams", "pmns_abs2", "pmns_matrix", "production_profile",
    "ProductionProfile", "recoil_bin_quadrature", "recoil_spectrum", "recoil_spectrum_general",
    "scalar_mediator_dsigma_dT", "sigma_total", "SOLAR_MODELS", "SolarSource", "state_table", "SUBCOMPONENT_NAMES",
    "survival_probability", "t_max", "tree_couplings", "uniform_recoil_edges", "vector_mediator_epsilon",
    "weak_kinematics",
]
