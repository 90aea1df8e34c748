"""nuejax: differentiable new-physics searches in solar neutrino-electron scattering spectra."""
from .precision import PrecisionError, enable_x64, x64_enabled
from .runtime import gpu_settings

__version__ = "0.1.0"
__all__ = ["PrecisionError", "enable_x64", "gpu_settings", "x64_enabled", "__version__"]
