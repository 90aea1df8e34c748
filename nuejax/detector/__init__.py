"""Detector layer: analytic scintillator response, toy-MC response histograms, backgrounds."""

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

__all__ = [name for name in dir() if not name.startswith("_")]
