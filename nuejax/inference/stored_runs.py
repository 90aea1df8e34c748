"""The result of a Neyman construction stored on disk (:mod:`nuejax.inference.runner`): a run whose
chunks were computed by several processes (``shard``) and gathered with
:func:`~nuejax.inference.runner.merge_runs`, or a finished run read back."""

from __future__ import annotations

from ..errors import InputError
from .cls import cls_assemble
from .construction import read_run
from .feldman_cousins import fc_assemble

__all__ = ["load_run"]


def load_run(folder):
    """The result of a stored run whose chunks are all on disk: a
    :class:`~nuejax.inference.results.FeldmanCousinsResult` or :class:`~nuejax.inference.results.CLsResult`."""
    config, st, res = read_run(folder)
    if config["kind"] == "feldman_cousins":
        return fc_assemble(config, st, res, 0.0)
    if config["kind"] == "cls":
        return cls_assemble(config, st, res, 0.0)
    raise InputError(f"{folder}: unknown run kind {config['kind']!r}")
