"""Fixed tensors built on the host, used on the accelerator.

A model build runs a few hundred small programs once (spectra, response histograms, the
calibration fit), each compiled for the device it runs on. On a GPU that compiling is the
slow part: building the Borexino Phase-III model took 88.7 s on the default device of a fresh
H200 and 53.8 s on the host's CPU backend of the same machine, and 8.0, 7.1 s against 6.4, 5.0 s
with the caches warm (``benchmarks/timings/build_where.py``; benchmarks/NOTES.md, "The Phase-III
model cached whole; models built on the host"). :func:`on_host` runs a build on the CPU
backend where the default backend is another one; :func:`to_default_device` moves its arrays to the default device afterwards, so
the hot path (fits, scans, toys) runs where it did. On a CPU-only machine both do nothing.
``NUEJAX_BUILD_ON_HOST=0`` keeps builds on the default device.
"""

from __future__ import annotations

import contextlib

import jax
import numpy as np

from ..cache import env_switch

__all__ = ["ENV_BUILD_ON_HOST", "host_device", "on_host", "to_default_device"]

#: environment variable: ``0`` (or off, false, no) builds on the default device
ENV_BUILD_ON_HOST = "NUEJAX_BUILD_ON_HOST"


def host_device():
    """The CPU device builds run on, or None where they run on the default device (a CPU default
    backend, no CPU backend in ``jax_platforms``, or :data:`ENV_BUILD_ON_HOST` off)."""
    if not env_switch(ENV_BUILD_ON_HOST) or jax.default_backend() == "cpu":
        return None
    try:
        return jax.devices("cpu")[0]
    except RuntimeError:  # jax_platforms without cpu
        return None


@contextlib.contextmanager
def on_host():
    """Run the block's uncommitted computations on :func:`host_device` (where there is one)."""
    host = host_device()
    if host is None:
        yield
        return
    with jax.default_device(host):
        yield


def to_default_device(tree):
    """``tree`` with every JAX array that lies on another device than the default one copied
    there, uncommitted (as an array made on the default device is: a sharded call may still
    place it). Weakly typed arrays keep their place (a copy through the host would make them
    strongly typed and could change promotion); other leaves are returned as they are."""
    if host_device() is None:
        return tree
    target = jax.config.jax_default_device or jax.devices()[0]

    def move(leaf):
        if not isinstance(leaf, jax.Array) or isinstance(leaf, jax.core.Tracer) or leaf.weak_type:
            return leaf
        if leaf.devices() == {target}:
            return leaf
        return jax.device_put(np.asarray(leaf))  # no device given: the default one, uncommitted

    return jax.tree_util.tree_map(move, tree)
