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
    monkeypatch.setenv("XLA_FLAGS", "--xla_gpu_enable_triton_gemm=false")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runtime.warn_if_autotuning("cpu")  # the flags change nothing there
    with pytest.warns(RuntimeWarning, match="lacks --xla_gpu_autotune_level=0 on this GPU.*nuejax.gpu_settings"):
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
