"""Input/output: ROOT files through uproot, Borexino open data (spectral shapes, the observed
spectrum, the published CNO profile), observed spectra from histogram objects."""

from .borexino import (BorexinoShape, ObservedSpectrum, PublishedProfile, packaged_borexino_cno_profile,
                       packaged_borexino_shape, packaged_borexino_spectrum, read_borexino_cno_profile,
                       read_borexino_shape, read_borexino_spectrum)
from .histograms import read_spectrum_th1, spectrum_from_hist
from .xenonnt import XENONNT_SR0_EXPOSURE, XenonntSR0, packaged_xenonnt_sr0
from .root import RootInputError, read_response_histogram, read_template, read_th1, read_th2, write_hists

__all__ = ["BorexinoShape", "ObservedSpectrum", "PublishedProfile", "RootInputError",
           "packaged_borexino_cno_profile", "packaged_borexino_shape", "packaged_borexino_spectrum",
           "read_borexino_cno_profile", "read_borexino_shape", "read_borexino_spectrum",
           "read_response_histogram", "read_spectrum_th1", "read_template", "read_th1", "read_th2",
           "spectrum_from_hist", "write_hists", "XENONNT_SR0_EXPOSURE", "XenonntSR0", "packaged_xenonnt_sr0"]
