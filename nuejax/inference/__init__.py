"""Inference: MINUIT fits with autodiff gradients, a bound-constrained batched Newton solver,
profile scans, limits at a physical boundary, goodness of fit, Neyman constructions from toys
(Feldman–Cousins, CLs, coverage) sharded over devices and resumable, nuisance-parameter ranking
(pulls and impacts), profile-likelihood (MINOS-like) errors. Every entry point checks its
inputs once into a :class:`FitProblem`."""

from .cls import cls_upper_limit
from .cost import NLLCost
from .coverage import coverage
from .feldman_cousins import feldman_cousins
from .fitting import FlatParameterWarning, batch_fit, newton_fit
from .gof import goodness_of_fit, saturated_deviance
from .impacts import impacts
from .intervals import Interval, interval_from_profile, one_sided_threshold, two_sided_threshold
from .minuit import fit
from .newton import NewtonResult, kkt, minimize_bounded, newton_minimize
from .problem import FitProblem
from .profile_errors import profile_errors
from .results import (BatchFitResult, CLsResult, CoverageResult, FeldmanCousinsResult, FitResult, GoodnessOfFit,
                      ImpactsResult,
                      Scan2DResult, ScanResult, load_result)
from .runner import merge_runs
from .scan import profile_scan, profile_scan_2d, refine_scan
from .starts import DEFAULT_STARTS, SecondMinimumWarning, start_design
from .stored_runs import load_run

__all__ = ["DEFAULT_STARTS", "BatchFitResult", "CLsResult", "CoverageResult", "FeldmanCousinsResult", "FitProblem", "FitResult",
           "FlatParameterWarning",
           "GoodnessOfFit", "ImpactsResult", "Interval", "NLLCost", "NewtonResult", "Scan2DResult", "ScanResult", "batch_fit",
           "cls_upper_limit", "coverage", "feldman_cousins", "fit", "goodness_of_fit", "impacts", "interval_from_profile", "kkt",
           "load_result", "load_run", "merge_runs", "minimize_bounded", "newton_fit", "newton_minimize",
           "one_sided_threshold", "profile_errors", "profile_scan", "profile_scan_2d", "refine_scan", "saturated_deviance", "SecondMinimumWarning", "start_design", "two_sided_threshold"]
