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


def test_a_build_program_called_inside_another_trace_is_inlined():
    """Under jit or grad the plain jit runs (XLA options belong to the top-level program)."""
    f = build_jit(lambda x: jnp.sum(jnp.sin(x) ** 2))
    x = jnp.linspace(0.0, 1.0, 7)
    assert float(jax.jit(f)(x)) == pytest.approx(float(f(x)), rel=1e-14)
    np.testing.assert_allclose(np.asarray(jax.grad(f)(x)), np.sin(2 * np.asarray(x)), rtol=1e-13)


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


def _lowered_programs(run):
    """``run()`` and the number of XLA programs JAX lowered meanwhile (in this process; a program
    found in the persistent compilation cache is lowered too)."""
    count = {"n": 0, "on": True}

    def listen(event, secs, **kw):
        if count["on"] and event.endswith("jaxpr_to_mlir_module_duration"):
            count["n"] += 1

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        out = run()
    finally:
        count["on"] = False
    return out, count["n"]


@pytest.mark.slow
def test_fixed_tensors_and_rates_compile_a_few_programs_not_one_per_step():
    """A component's precomputed tensors and the SM rates of a model's sources are compiled as a
    few programs: evaluated op by op they lowered some fifty small programs per component (most
    of a Phase-III model's first build). Shapes no other test uses, so that nothing is compiled
    already; the rates equal ``event_rate``'s."""
    from nuejax.physics.precomputed import precompute_spectrum
    from nuejax.physics.rates import source_rates
    from nuejax.physics.spectra import build_source, event_rate

    srcs = [build_source(n, n_E=173) for n in ("13N", "15O", "7Be")]
    t = jnp.linspace(0.003, 0.6, 41)
    pre, n_pre = _lowered_programs(lambda: [precompute_spectrum(s, t) for s in srcs])
    assert n_pre <= 8, n_pre  # nodes, tensors (continuum, line) and a handful of conversions
    assert all(np.all(np.isfinite(np.asarray(p.kin))) for p in pre)
    rates, n_rates = _lowered_programs(lambda: source_rates(srcs))
    assert n_rates <= 3, n_rates  # one per kind (continuum, line)
    # the rates' sources are padded to a common production profile (exact): against each unpadded
    for s, r in zip(srcs, rates):
        assert r == pytest.approx(float(jax.jit(event_rate)(s)), rel=1e-13)
