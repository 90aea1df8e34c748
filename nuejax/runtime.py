"""Settings of the process on GPUs: XLA's flags and JAX's environment that nuejax recommends there.

XLA reads ``XLA_FLAGS`` and JAX the ``XLA_PYTHON_CLIENT_*`` variables once, when JAX starts its
backends (at the first array or computation, not at ``import jax``), so they are process settings:
nuejax never changes them behind your back. The ``nuejax`` commands apply them first thing; in
Python, call :func:`gpu_settings` before anything runs on JAX (in a notebook: in the first cell;
where JAX has run already, restart the kernel). It sets what you have not set yourself; on the CPU
they have no effect on any computation.

Without them XLA's GPU autotuner times every candidate kernel of each new solver program: on one
H200 (JAX 0.11.2, 2026-12-01) compiling the fit program of the XENONnT model took 124 s, and the
toy-fit program of its CLs construction (4096 rows) had not finished compiling after a further
88 s; with them these programs compiled in 3.3-9.3 s (benchmarks/NOTES.md, "Python users on a
GPU"). :func:`warn_if_autotuning` says so, once per process, where a solver program is made on a
GPU without them.
"""

from __future__ import annotations

import os
import warnings

__all__ = ["GPU_XLA_FLAGS", "GPU_ENVIRONMENT", "gpu_settings", "autotuner_flags_missing", "warn_if_autotuning"]

#: XLA flags recommended on GPUs (each added by :func:`gpu_settings` unless ``XLA_FLAGS`` sets it,
#: either value):
#:
#: * ``--xla_gpu_enable_triton_gemm=false``: with XLA's Triton GEMMs on, compiling the xenon
#:   model's profile scans failed on an H100 ("INTERNAL: No candidates could be compiled": the
#:   float64 Triton GEMM autotuner, on the response's Hessian contraction; JAX 0.11.2, 2026-11-26),
#:   so `nuejax xenonnt` and `nuejax combine` stopped there; cuBLAS does these contractions instead.
#: * ``--xla_gpu_autotune_level=0``: XLA's autotuner timed every candidate kernel of the large
#:   batched toy-fit programs: compiling `nuejax xenonnt`'s toy fits took 120 s for 2048 rows
#:   (107 s for 16384), 7.6 s without it, and the launch ran in 0.76 s instead of 0.73 s (one
#:   H100, JAX 0.11.2, 2026-11-27, ``benchmarks/probes/toy_kernel_compile_probe.py``). A command's
#:   first run is mostly compilation; the 5 % it may cost a launch is the smaller bill.
GPU_XLA_FLAGS = ("--xla_gpu_enable_triton_gemm=false", "--xla_gpu_autotune_level=0")
#: Environment recommended on GPUs (each set by :func:`gpu_settings` where the user has not):
#:
#: * ``XLA_PYTHON_CLIENT_PREALLOCATE=false``: JAX reserves 75 % of a GPU's memory at the first
#:   transfer, which took 1.7-1.8 s on an H200 (141 GB) in every process, against nothing with
#:   the reservation off; a warm ``nuejax borexino`` took 10.1, 10.8 s instead of 12.6, 13.2 s,
#:   and toy fits ran at 9.23e4 /s against 9.29e4 /s with it (2026-11-29, JAX 0.11.2;
#:   benchmarks/NOTES.md). Memory is then taken as the programs need it.
GPU_ENVIRONMENT = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}


def _backends_started() -> bool | None:
    """Whether JAX has started its backends in this process (None: this JAX does not say)."""
    try:
        from jax._src import xla_bridge  # no public API says it; guarded for other JAX versions

        return bool(xla_bridge.backends_are_initialized())
    except Exception:  # noqa: BLE001
        return None


def gpu_settings() -> dict:
    """Add each of :data:`GPU_XLA_FLAGS` to ``XLA_FLAGS`` unless it sets that flag (either value),
    and set each variable of :data:`GPU_ENVIRONMENT` that is not set. Call it before anything runs
    on JAX (``import jax`` alone is fine): JAX's backends read these once, when they start.

    Returns what it set (``{"XLA_FLAGS": ..., ...}``; empty where everything was set already).
    Where JAX's backends have started already and a GPU is among them, nothing it sets takes
    effect in this process: it warns (``RuntimeWarning``) and names what is missing. Flags that
    ``XLA_FLAGS`` reads from a ``--flagfile`` are not seen: with one, put these in the file."""
    global _too_late
    changed = {}
    missing = autotuner_flags_missing()
    if missing:
        os.environ["XLA_FLAGS"] = changed["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), *missing]).strip()
    for name, value in GPU_ENVIRONMENT.items():
        if name not in os.environ:
            os.environ[name] = changed[name] = value
    if changed and _backends_started():
        import jax

        if any(d.platform == "gpu" for d in jax.devices()):
            _too_late = _too_late or bool(missing)
            late = list(missing) + [f"{k}={v}" for k, v in changed.items() if k != "XLA_FLAGS"]
            warnings.warn("nuejax.gpu_settings() came too late: JAX has started on this GPU already and keeps the "
                          f"settings it started with, so {' '.join(late)} take no effect in this process"
                          + (" (each new fit program may compile for minutes)" if missing else "")
                          + ". Restart the process (in a notebook: the kernel) and call it first, before any JAX "
                          "computation, or set them in the environment before Python starts",
                          RuntimeWarning, stacklevel=_stacklevel())
    return changed


def autotuner_flags_missing() -> tuple:
    """The flags of :data:`GPU_XLA_FLAGS` that ``XLA_FLAGS`` does not set (either value; flags
    are separated by white space, as XLA reads them)."""
    named = {item.split("=", 1)[0] for item in os.environ.get("XLA_FLAGS", "").split()}
    return tuple(f for f in GPU_XLA_FLAGS if f.split("=", 1)[0] not in named)


_warned = False
#: set where :func:`gpu_settings` found JAX started on a GPU without its flags: the environment
#: holds them now, but this process does not run with them
_too_late = False
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep  # not a sibling folder named nuejax_*


def _stacklevel() -> int:
    """The ``stacklevel`` of a warning raised by the caller of this function that points at the
    first frame outside nuejax (the user's line)."""
    import sys

    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def warn_if_autotuning(backend: str | None = None) -> None:
    """Warn once per process (``RuntimeWarning``) where the default backend (or ``backend``) is a
    GPU and this process runs without flags of :data:`GPU_XLA_FLAGS`: each solver program then
    compiles for minutes (module docstring). Without them means: ``XLA_FLAGS`` lacks them, or
    :func:`gpu_settings` set them after JAX had started. Called where a solver or toy-fit program
    is made; the warning points at the first line outside nuejax."""
    global _warned
    if _warned:
        return
    if backend is None:
        import jax

        backend = jax.default_backend()
    if backend != "gpu":
        return
    missing = GPU_XLA_FLAGS if _too_late else autotuner_flags_missing()
    if missing:
        _warned = True
        how = ("nuejax.gpu_settings() was called after JAX had started: restart the process (in a notebook: the "
               "kernel) and call it first, before any JAX computation" if _too_late else
               "call nuejax.gpu_settings() first thing in the process (in a notebook: the first cell, before any "
               "JAX computation), or set XLA_FLAGS before Python starts")
        warnings.warn(f"this process runs on a GPU without {' '.join(missing)}: XLA's autotuner then times every "
                      "candidate kernel of each new fit program, and compiling one took 124 s on an H200 instead "
                      f"of 3-9 s. To avoid it, {how} (nuejax.runtime)", RuntimeWarning, stacklevel=_stacklevel())
