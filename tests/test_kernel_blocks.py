"""Kernels folded by the blocks that cover their nonzero entries (nuejax.detector.kernel_blocks)
against the dense product they replace on the CPU."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.detector.kernel_blocks import KernelBlocks, use_blocks
from nuejax.model import KernelFold, SolarSignals


def _banded(n_t, n_obs, rng, zero_rows=0):
    """A response-like kernel: row i nonzero on a band that moves up with i; the last
    ``zero_rows`` rows (light above the window) all zero."""
    g = np.zeros((n_t, n_obs))
    for i in range(n_t - zero_rows):
        c = int(i * n_obs / n_t)
        lo, hi = max(0, c - 5 - i // 20), min(n_obs, c + 6 + i // 20)
        g[i, lo:hi] = rng.random(hi - lo) + 0.1
    return g


def test_blocks_cover_every_nonzero_entry_and_fold_equals_dense_product():
    rng = np.random.default_rng(1)
    kernels = [_banded(300, 120, rng), _banded(170, 120, rng, zero_rows=60), np.zeros((50, 120))]
    kb = KernelBlocks.from_kernels([jnp.asarray(g) for g in kernels], rows=64)
    dense = kb.dense([g.shape for g in kernels])
    for k, g in enumerate(kernels):
        np.testing.assert_array_equal(dense[k, :g.shape[0]], g)  # nothing lost, nothing added
    assert kb.size < 0.5 * sum(g.size for g in kernels)  # the zeros are not stored
    assert all(k != 2 for k, *_ in kb.layout) and kb.n_obs == 120  # an all-zero kernel has no block
    f = [jnp.asarray(rng.normal(size=g.shape[0])) for g in kernels]
    expect = sum(np.asarray(fk) @ g for fk, g in zip(f, kernels))
    np.testing.assert_allclose(np.asarray(kb.fold(f)), expect, rtol=1e-13, atol=1e-13 * np.abs(expect).max())
    # the transposed product (gradient) too
    r = jnp.asarray(rng.normal(size=120))
    g_blocks = jax.grad(lambda f: kb.fold(f) @ r)(f)
    for gk, g in zip(g_blocks, kernels):
        np.testing.assert_allclose(np.asarray(gk), g @ np.asarray(r), rtol=1e-12, atol=1e-12)


def test_blocks_are_placed_like_their_kernels():
    """Blocks of an uncommitted kernel stay uncommitted (free to meet inputs sharded over a mesh);
    those of a kernel committed to a device are committed there, in the kernel's dtype."""
    g = _banded(100, 40, np.random.default_rng(3))
    free = KernelBlocks.from_kernels([jnp.asarray(g)], rows=32)
    assert free.blocks and not any(b.committed for b in free.blocks)
    dev = jax.devices()[0]
    pinned = KernelBlocks.from_kernels([jax.device_put(jnp.asarray(g, dtype=jnp.float32), dev)], rows=32)
    assert all(b.committed and b.devices() == {dev} and b.dtype == jnp.float32 for b in pinned.blocks)


def test_blocks_keep_nan_entries_and_reject_bad_input():
    g = np.zeros((10, 8))
    g[7, 3] = np.nan
    kb = KernelBlocks.from_kernels([jnp.asarray(g)], rows=4)
    assert kb.layout == ((0, 7, 8, 3, 4),)
    assert np.isnan(np.asarray(kb.fold([jnp.ones(10)]))[3])
    with pytest.raises(ValueError, match="one column count"):
        KernelBlocks.from_kernels([np.ones((3, 4)), np.ones((3, 5))])
    with pytest.raises(ValueError, match="rows per block"):
        KernelBlocks.from_kernels([np.ones((3, 4))], rows=0)


@pytest.mark.slow
def test_fold_by_blocks_equals_the_dense_fold_of_a_model(small_model):
    """Value, gradient and a forward-mode derivative of -2 ln L folded by blocks (the CPU route of
    large kernels) equal those of the dense product (small kernels, and every model on a GPU)."""
    m = small_model.with_parameters(small_model.parameters.release("eps_ee_L", "mu_nu", "sin2_theta12"))
    fold = m.stage(KernelFold)
    assert fold.kernel_blocks is None and not use_blocks(fold.kernels)  # below MIN_ENTRIES: dense
    blocks = KernelBlocks.from_kernels(list(fold.kernels), rows=64)
    blocked = m.replace_stage(fold, dataclasses.replace(fold, kernel_blocks=blocks))
    assert len(blocks.layout) > 2 * len(m.signals)
    assert blocks.size < 0.8 * fold.kernels.size
    m, dense = blocked, m
    p = m.parameters.values(eps_ee_L=0.06, mu_nu=2.0, sin2_theta12=0.3, norm_pp=1.05)
    data = np.random.default_rng(2).poisson(np.asarray(m.expected(p))).astype(float)
    np.testing.assert_allclose(np.asarray(m.expected(p)), np.asarray(dense.expected(p)), rtol=1e-13)
    names = ("eps_ee_L", "mu_nu", "sin2_theta12", "norm_pp", "rate_210Bi")

    def f(model):
        def fn(x):
            return model.nll({**p, **dict(zip(names, x))}, data)
        return fn

    x = jnp.stack([p[n] for n in names])
    v1, g1 = jax.value_and_grad(f(m))(x)
    v2, g2 = jax.value_and_grad(f(dense))(x)
    assert float(v1) == pytest.approx(float(v2), rel=1e-13)
    np.testing.assert_allclose(np.asarray(g1), np.asarray(g2), rtol=1e-10, atol=1e-10 * float(jnp.max(jnp.abs(g2))))
    t = jnp.asarray(np.random.default_rng(4).normal(size=len(names))) * x
    d1 = jax.jvp(f(m), (x,), (t,))[1]
    d2 = jax.jvp(f(dense), (x,), (t,))[1]
    assert float(d1) == pytest.approx(float(d2), rel=1e-10) and float(d1) == pytest.approx(float(g2 @ t), rel=1e-9)


def test_use_blocks_only_for_large_concrete_cpu_arrays():
    from nuejax.detector.kernel_blocks import MIN_ENTRIES

    assert use_blocks(jnp.zeros((1, MIN_ENTRIES // 1000, 1000)))
    assert not use_blocks(jnp.zeros((1, MIN_ENTRIES // 1000 - 1, 1000)))
    assert not use_blocks(())
    seen = []

    def traced(k):
        seen.append(use_blocks(k))
        return k

    jax.jit(traced)(jnp.ones(3))
    assert seen == [False]  # a tracer: no blocks (they need the kernels' zeros)


def test_models_with_large_kernels_on_the_cpu_build_their_blocks(small_model, monkeypatch):
    """The kernel fold derives its blocks when its kernels reach MIN_ENTRIES (here lowered), they
    reproduce its kernels, and a with_parameters that rebuilds the signal groups keeps them."""
    from nuejax.detector import kernel_blocks

    monkeypatch.setattr(kernel_blocks, "MIN_ENTRIES", 1000)
    fold = KernelFold.create(small_model.signals)
    m = small_model.replace_stage(small_model.stage(KernelFold), fold)
    assert fold.kernel_blocks is not None
    shapes = [s.kernel.shape for s in m.signals]
    np.testing.assert_array_equal(fold.kernel_blocks.dense(shapes), np.asarray(fold.kernels))
    wide = m.with_parameters(m.parameters.update("sin2_theta12", lower=0.01))  # rebuilds the groups
    assert wide.stage(SolarSignals).groups is not m.stage(SolarSignals).groups
    assert wide.stage(KernelFold).kernel_blocks is fold.kernel_blocks
