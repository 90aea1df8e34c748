"""Inference: MINUIT fits with autodiff gradients, a JAX-native batched minimiser, profile scans."""

from .cost import NLLCost
from .minuit import fit
from .newton import newton_minimize
from .results import FitResult, Scan2DResult, ScanResult, interval_from_profile
from .scan import newton_fit, profile_scan, profile_scan_2d

__all__ = ["FitResult", "NLLCost", "Scan2DResult", "ScanResult", "fit", "interval_from_profile", "newton_fit",
           "newton_minimize", "profile_scan", "profile_scan_2d"]
