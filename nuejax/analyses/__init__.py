"""Analyses of published data sets built from nuejax's stages (``nuejax borexino``; XENONnT SR0)."""

from .borexino import borexino_phase3_model
from .xenonnt import xenonnt_sr0_background, xenonnt_sr0_model

__all__ = ["borexino_phase3_model", "xenonnt_sr0_background", "xenonnt_sr0_model"]
