"""Inference: MINUIT fits with autodiff gradients, a bound-constrained batched Newton solver,
profile scans, limits at a physical boundary, goodness of fit, Neyman constructions from toys
(Feldman–Cousins, CLs, coverage) sharded over devices and resumable."""

from .cost import NLLCost
from .fitting import BatchFitResult, batch_fit, newton_fit
from .gof import GoodnessOfFit, goodness_of_fit, saturated_deviance
from .minuit import fit
from .neyman import CLsResult, CoverageResult, FeldmanCousinsResult, cls_upper_limit, coverage, feldman_cousins, load_run
from .newton import NewtonResult, kkt, minimize_bounded, newton_minimize
from .results import FitResult, Interval, Scan2DResult, ScanResult, interval_from_profile, load_result
from .runner import merge_runs
from .scan import profile_scan, profile_scan_2d

__all__ = ["BatchFitResult", "CLsResult", "CoverageResult", "FeldmanCousinsResult", "FitResult", "GoodnessOfFit", "Interval", "NLLCost", "NewtonResult", "Scan2DResult", "ScanResult",
           "batch_fit", "cls_upper_limit", "coverage", "feldman_cousins", "fit", "goodness_of_fit", "interval_from_profile", "kkt", "load_result", "load_run", "merge_runs", "minimize_bounded", "newton_fit",
           "newton_minimize", "profile_scan", "profile_scan_2d", "saturated_deviance"]
