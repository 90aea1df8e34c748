"""Models: a pipeline of stages (signals → fold → observable transforms → templates and peaks →
exposure), a likelihood stage and constraint terms with their auxiliary measurements as data
(``docs/model.md`` draws the pipeline and lists the protocol)."""

from .borexino_like import borexino_like_model, default_parameters, signal_component
from .checks import NonIntegerCountsWarning
from .combine import CombinedModel, StackedLikelihood, combine
from .constraints import GaussianConstraint, HalfGaussianConstraint, LogNormalConstraint, PenaltyTerm, parameter_terms
from .fast import fast_model
from .floating import floating_response_model
from .folds import DiagonalFold, FloatingFold, KernelFold
from .likelihood import BinnedPoisson, UnbinnedPoisson, check_expected, poisson_nll
from .parameters import Parameter, ParameterSet
from .physics_params import osc_from_params, physics_from_params
from .pipeline import Model, components, expected, expected_direct
from .protocol import AbstractModel, nll
from .signals import FoldedPolynomial, PolynomialSignals, SignalComponent, SolarSignals
from .stages import AddPeaks, AddTemplates, Exposure, SumBins
from .template_model import template_model
from .templates import GaussianPeak, shape_template
from .variations import AddShapeVariations, ScaleBins, code4p, mc_stat_parameters, shape_variation_stage
from .xenon import xenon_model

__all__ = [
    "AbstractModel", "AddShapeVariations", "ScaleBins", "code4p", "mc_stat_parameters", "shape_variation_stage",
    "CombinedModel", "StackedLikelihood", "combine", "AddPeaks", "AddTemplates", "BinnedPoisson", "UnbinnedPoisson", "Exposure", "FloatingFold", "FoldedPolynomial",
    "DiagonalFold", "GaussianConstraint", "GaussianPeak", "HalfGaussianConstraint", "KernelFold", "LogNormalConstraint", "Model",
    "NonIntegerCountsWarning", "Parameter", "ParameterSet", "PenaltyTerm", "PolynomialSignals", "SignalComponent",
    "SolarSignals", "SumBins", "borexino_like_model", "check_expected", "components", "default_parameters", "expected",
    "expected_direct", "fast_model", "floating_response_model", "nll", "osc_from_params", "parameter_terms",
    "physics_from_params", "poisson_nll", "shape_template", "signal_component", "template_model", "xenon_model",
]
