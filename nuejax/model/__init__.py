"""Model and likelihood: parameters, the expected spectrum (Eq. mu_total), -2 ln L (Eq. logL)."""

from .borexino_like import borexino_like_model, default_parameters, signal_component
from .likelihood import check_expected, poisson_nll
from .constraints import GaussianConstraint, HalfGaussianConstraint, LogNormalConstraint, PenaltyTerm
from .floating import FloatingResponseModel, floating_response_model
from .parameters import Parameter, ParameterSet
from .template_model import TemplateModel
from .templates import GaussianPeak, shape_template
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
