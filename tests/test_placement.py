"""Builds on the host, arrays on the default device (nuejax._internal.placement). On a CPU-only
machine the helpers do nothing; the move itself is tested on two virtual CPU devices in a
subprocess, the second standing in for the host's CPU backend of a GPU machine."""

import os
import subprocess
import sys
import textwrap

import jax

from nuejax._internal import placement

SCRIPT = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
    from nuejax._internal import placement

    d0, d1 = jax.devices()
    placement.host_device = lambda: d1  # as jax.devices("cpu")[0] is on a GPU machine
    with placement.on_host():
        x = jnp.arange(4.0) * 2.0
        weak = jnp.asarray(2.0) * 3
    assert x.devices() == {d1} and weak.devices() == {d1}, (x.devices(), weak.devices())
    numbers = np.ones(3)
    tree = {"x": x, "numbers": numbers, "weak": weak, "name": "kept"}
    out = placement.to_default_device(tree)
    moved = out["x"]
    assert moved.devices() == {d0}, moved.devices()
    assert not moved.committed and moved.dtype == x.dtype and not moved.weak_type
    assert np.asarray(moved).tobytes() == np.asarray(x).tobytes()
    assert out["numbers"] is numbers and out["weak"] is weak and out["name"] == "kept"
    assert placement.to_default_device(out)["x"] is moved  # already there: not copied again
    # uncommitted, so a call whose other argument is sharded over both devices still takes it
    # (an array committed to d0 would be refused: incompatible devices)
    rows = jax.device_put(jnp.ones((2, 4)), NamedSharding(Mesh(np.array([d0, d1]), ("b",)), PartitionSpec("b")))
    prod = jax.jit(lambda a, b: a * b)(moved, rows)
    assert np.asarray(prod).tolist() == [[0.0, 2.0, 4.0, 6.0]] * 2
    try:
        jax.jit(lambda a, b: a * b)(jax.device_put(x, d0), rows)
    except ValueError:
        pass
    else:
        raise AssertionError("a committed array should have been refused: the check above would not fail")
    print("ok")
""")


def test_moved_arrays_land_uncommitted_on_the_default_device():
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2".strip()
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=flags)
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def test_nothing_moves_on_a_cpu_backend(monkeypatch):
    assert jax.default_backend() == "cpu"
    assert placement.host_device() is None
    x = jax.numpy.arange(3.0)
    tree = {"x": x}
    assert placement.to_default_device(tree) is tree
    with placement.on_host():
        assert jax.numpy.ones(2).devices() == x.devices()
    monkeypatch.setenv(placement.ENV_BUILD_ON_HOST, "0")
    assert placement.host_device() is None
