"""Analyses of published data sets built from nuejax's stages (``nuejax borexino``)."""

from .borexino import borexino_phase3_model

__all__ = ["borexino_phase3_model"]
