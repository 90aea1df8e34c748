"""The process settings nuejax recommends on GPUs (nuejax.runtime): added unless the user set
them, and a warning, once, where a fit program is made on a GPU without them."""
import os
import warnings

import pytest

from nuejax import runtime


def test_gpu_settings_are_added_unless_the_user_set_them(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_autotune_level=4 --xla_dump_to=/tmp/x")
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")
    changed = runtime.gpu_settings()
    flags = os.environ["XLA_FLAGS"].split()
    assert "--xla_gpu_autotune_level=4" in flags and "--xla_gpu_autotune_level=0" not in flags
    assert "--xla_gpu_enable_triton_gemm=false" in flags and "--xla_dump_to=/tmp/x" in flags
    assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "true"
    assert changed == {"XLA_FLAGS": os.environ["XLA_FLAGS"]}
    assert runtime.gpu_settings() == {}  # everything set now
    # a flag whose name only begins like one of them does not set it
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_autotune_level_x=1 --xla_gpu_enable_triton_gemm=true")
    assert runtime.autotuner_flags_missing() == ("--xla_gpu_autotune_level=0",)
    monkeypatch.delenv("XLA_FLAGS")
    monkeypatch.delenv("XLA_PYTHON_CLIENT_PREALLOCATE")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the backends here are the CPU's: nothing to warn about
        changed = runtime.gpu_settings()
    assert os.environ["XLA_FLAGS"].split() == list(runtime.GPU_XLA_FLAGS)
    assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert changed == {"XLA_FLAGS": " ".join(runtime.GPU_XLA_FLAGS), "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}


def test_a_fit_program_on_a_gpu_without_the_flags_warns_once(monkeypatch):
    monkeypatch.setattr(runtime, "_warned", False)
    monkeypatch.setattr(runtime, "_too_late", False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_enable_triton_gemm=false")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runtime.warn_if_autotuning("cpu")  # the flags change nothing there
    with pytest.warns(RuntimeWarning, match="runs on a GPU without --xla_gpu_autotune_level=0:.*nuejax.gpu_settings"):
        runtime.warn_if_autotuning("gpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runtime.warn_if_autotuning("gpu")  # once per process
    monkeypatch.setattr(runtime, "_warned", False)
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_autotune_level=2 --xla_gpu_enable_triton_gemm=true")
    assert runtime.autotuner_flags_missing() == ()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runtime.warn_if_autotuning("gpu")  # the user's own values, whatever they are


def test_a_late_call_warns_and_so_does_every_fit_program_after_it(monkeypatch):
    """JAX started on a GPU before gpu_settings(): the flags are in the environment now but not in
    the process, so it warns, names them, and the next fit program warns as well."""
    import types

    import jax

    assert isinstance(runtime._backends_started(), bool)  # the private JAX function it reads exists
    monkeypatch.setattr(runtime, "_warned", False)
    monkeypatch.setattr(runtime, "_too_late", False)
    monkeypatch.setattr(runtime, "_backends_started", lambda: True)
    monkeypatch.setattr(jax, "devices", lambda *a: [types.SimpleNamespace(platform="gpu")])
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")
    with pytest.warns(RuntimeWarning, match="came too late.*--xla_gpu_enable_triton_gemm=false "
                                            "--xla_gpu_autotune_level=0 take no effect.*Restart") as rec:
        runtime.gpu_settings()
    assert rec[0].filename == __file__  # the user's line, not nuejax's
    assert runtime.autotuner_flags_missing() == ()
    with pytest.warns(RuntimeWarning, match="was called after JAX had started: restart"):
        runtime.warn_if_autotuning("gpu")


@pytest.mark.parametrize("make", ["row_solver", "compiled_solver", "compiled_toy_fits"])
def test_fit_programs_made_on_a_gpu_without_the_flags_warn(monkeypatch, make):
    import jax

    from nuejax.inference import fitting, toys

    monkeypatch.setattr(runtime, "_warned", False)
    monkeypatch.setattr(runtime, "_too_late", False)
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    args = {"row_solver": (), "compiled_solver": (100, 1e-8, "data"), "compiled_toy_fits": (100, 1e-8, 1, ())}[make]
    factory = getattr(fitting, make, None) or getattr(toys, make)
    with pytest.warns(RuntimeWarning, match="runs on a GPU without") as rec:
        factory.__wrapped__(*args)  # makes the jitted program (nothing is compiled yet)
    assert rec[0].filename == __file__
