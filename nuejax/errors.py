"""nuejax's error types: every problem with what a user passes in is an :class:`InputError` whose
message names the thing at fault (file, key, histogram, bin, parameter) and the problem.

They subclass :class:`ValueError` (and :class:`TypeError` for a model that does not follow the
protocol), so ``except ValueError`` keeps working.
"""

from __future__ import annotations

__all__ = ["NuejaxError", "InputError", "DataError", "ParameterError", "FileFormatError", "ModelProtocolError"]


class NuejaxError(Exception):
    """Base class of nuejax's own errors."""


class InputError(NuejaxError, ValueError):
    """Something a user passed in is unusable; the message says what and where."""


class DataError(InputError):
    """Observed counts are unusable: wrong shape, not finite, negative."""


class ParameterError(InputError):
    """A parameter name is unknown, or a value, start or bound is invalid."""


class FileFormatError(InputError):
    """A file cannot be read or does not hold what nuejax needs; names the file, key and problem."""


class ModelProtocolError(InputError, TypeError):
    """An object passed as a model lacks what the inference functions need."""
