"""Inference: MINUIT fits with autodiff gradients, a bound-constrained batched Newton solver,
profile scans, limits at a physical boundary, goodness of fit."""

from .cost import NLLCost
from .fitting import BatchFitResult, batch_fit, newton_fit
from .gof import GoodnessOfFit, goodness_of_fit, saturated_deviance
from .minuit import fit
from .newton import NewtonResult, kkt, minimize_bounded, newton_minimize
from .results import FitResult, Interval, Scan2DResult, ScanResult, interval_from_profile, load_result
from .scan import profile_scan, profile_scan_2d

__all__ = ["BatchFitResult", "FitResult", "GoodnessOfFit", "Interval", "NLLCost", "NewtonResult", "Scan2DResult", "ScanResult",
           "batch_fit", "fit", "goodness_of_fit", "interval_from_profile", "kkt", "load_result", "minimize_bounded", "newton_fit",
           "newton_minimize", "profile_scan", "profile_scan_2d", "saturated_deviance"]
