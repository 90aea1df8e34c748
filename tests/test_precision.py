"""Precision policy: float64 by explicit opt-in, a loud error on mismatch, float32 as an option."""

import subprocess
import sys
import textwrap

import jax.numpy as jnp
import pytest

from nuejax.precision import PrecisionError, resolve_dtype


def _run(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)


def test_import_does_not_enable_x64():
    out = _run("import jax, nuejax, nuejax.physics; print(jax.config.jax_enable_x64)")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_float64_without_x64_fails_loudly_and_float32_is_measured():
    out = _run("""
        import jax.numpy as jnp
        from nuejax.physics import build_source, event_rate
        try:
            build_source("7Be")
        except Exception as err:
            print(type(err).__name__, "|", err)
        src = build_source("7Be", dtype=jnp.float32)
        print(event_rate(src).dtype, float(event_rate(src)))
    """)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()
    assert first.startswith("PrecisionError | nuejax needs float64") and "enable_x64" in first
    dtype, value = second.split()
    assert dtype == "float32"
    from nuejax.physics import build_source, event_rate

    ref = float(event_rate(build_source("7Be")))
    assert float(value) == pytest.approx(ref, rel=1e-5)  # float32 rounding, measured: ~1e-7


def test_resolve_dtype():
    assert resolve_dtype(None) == jnp.float64
    assert resolve_dtype(jnp.float32) == jnp.float32
    with pytest.raises(PrecisionError, match="float32 and float64"):
        resolve_dtype(jnp.int32)
