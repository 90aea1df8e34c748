"""Detector layer: analytic scintillator response, toy-MC response histograms, backgrounds,
observable-level response transforms and the calibration of a response on published shapes."""

from .response import (
    PSEUDOCUMENE,
    QuenchingTable,
    ResponseParams,
    Scintillator,
    bin_probabilities,
    electron_stopping_power,
    mean_photoelectrons,
    photoelectron_variance,
    quenched_energy,
    quenching_table,
    unit_bin_edges,
)
from .calibration import CalibrationTarget, KeVResponse, calibrate_response
from .transforms import ResponseTransform

__all__ = [
    "bin_probabilities", "calibrate_response", "CalibrationTarget", "electron_stopping_power", "KeVResponse",
    "mean_photoelectrons", "photoelectron_variance", "PSEUDOCUMENE", "quenched_energy", "quenching_table",
    "QuenchingTable", "ResponseParams", "ResponseTransform", "Scintillator", "unit_bin_edges",
]
