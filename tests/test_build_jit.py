"""Build programs (nuejax._internal.build_jit): on the CPU compiled at XLA's optimisation level 0,
with the same numbers as the program compiled as usual, to rounding."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nuejax._internal.build_jit import build_jit


def test_the_cpu_runs_the_level_0_program_with_the_usual_numbers():
    f = build_jit(lambda x, n: jnp.sum(jnp.exp(jnp.sin(x * n))), static_argnums=1)
    x = jnp.linspace(0.0, 3.0, 101)
    got, ref = f(x, 3), f.plain(x, 3)
    expect = 1 if jax.default_backend() == "cpu" else 0
    assert f.quick._cache_size() == expect and f.plain._cache_size() == 1
    assert float(got) == pytest.approx(float(ref), rel=1e-14)


def test_a_components_sm_spectrum_equals_the_usual_programs():
    """The ¹³N SM recoil spectrum and rate of the model builder, both programs: to 1e-13."""
    from nuejax.model.borexino_like import _sm_spectrum_and_rate
    from nuejax.physics.oscillation import OscillationParams
    from nuejax.physics.spectra import build_source, shape_only

    src = shape_only(build_source("13N", n_E=200))
    t = jnp.linspace(0.005, 0.95, 40)
    f, r = _sm_spectrum_and_rate(src, t, OscillationParams(), True)
    f0, r0 = _sm_spectrum_and_rate.plain(src, t, OscillationParams(), True)
    np.testing.assert_allclose(np.asarray(f), np.asarray(f0), rtol=1e-13, atol=0)
    assert float(r) == pytest.approx(float(r0), rel=1e-13)
    assert np.all(np.asarray(f) > 0)
