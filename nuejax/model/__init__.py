"""Model and likelihood: parameters, the expected spectrum (Eq. mu_total), -2 ln L (Eq. logL)."""

from .borexino_like import borexino_like_model, default_parameters, signal_component
from .likelihood import check_expected, poisson_nll
from .parameters import Parameter, ParameterSet
from .spectral_model import (
    SignalComponent,
    SpectralModel,
    expected,
    expected_direct,
    nll,
    osc_from_params,
    physics_from_params,
)

__all__ = [name for name in dir() if not name.startswith("_")]
