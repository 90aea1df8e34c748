"""Input/output: ROOT files through uproot, Borexino open-data text shapes."""

from .borexino import BorexinoShape, packaged_borexino_shape, read_borexino_shape
from .root import RootInputError, read_response_histogram, read_template, read_th1, read_th2, write_hists

__all__ = ["BorexinoShape", "RootInputError", "packaged_borexino_shape", "read_borexino_shape",
           "read_response_histogram", "read_template", "read_th1", "read_th2", "write_hists"]
