"""The row runner (nuejax.inference.runner): a launch that runs out of device memory is retried
with half the rows per launch, and the numbers are those of the full launch."""

import numpy as np
import pytest

import jax
from jax.sharding import Mesh

from nuejax.inference import runner


def _kernel(limit, sizes):
    def kernel(part):
        n = len(part["x"])
        sizes.append(n)
        if n > limit:  # the message of an XLA allocation failure (JAX's runtime error wraps it)
            raise RuntimeError(f"RESOURCE_EXHAUSTED: Out of memory while trying to allocate {n} GiB")
        return {"y": part["x"] ** 2 + part["z"]}
    return kernel


def test_a_launch_out_of_memory_is_retried_with_half_the_rows():
    rows = {"x": np.arange(37.0), "z": np.linspace(0.0, 1.0, 37)}
    mesh = Mesh(np.asarray(jax.devices()[:1]), ("rows",))
    sizes = []
    out, per = runner._launch(_kernel(5, sizes), rows, mesh, 16)
    np.testing.assert_array_equal(out["y"], rows["x"] ** 2 + rows["z"])
    assert per == 4 and sizes[:3] == [16, 8, 4] and set(sizes[3:]) == {4}
    # chunked runs keep the smaller launch for the chunks after
    sizes.clear()
    got = runner.run_rows(_kernel(5, sizes), rows, chunk=16)
    np.testing.assert_array_equal(got["y"], rows["x"] ** 2 + rows["z"])


def test_rows_on_one_device_reach_the_kernel_uncommitted():
    """On one device the kernel gets its rows on the default device, uncommitted, as a kept
    kernel's program was compiled for (nuejax._internal.exported compiles it for arguments without
    a placement): rows placed by a one-device NamedSharding compiled the toy kernel a second time
    on a GPU (9 s of `nuejax xenonnt`'s first run on an H200)."""
    seen = []

    def kernel(part):
        seen.extend((type(v.sharding).__name__, v.committed) for v in part.values())
        return {"y": part["x"] + part["z"]}

    rows = {"x": np.arange(5.0), "z": np.ones(5)}
    out, _ = runner._launch(kernel, rows, Mesh(np.asarray(jax.devices()[:1]), ("rows",)), 8)
    np.testing.assert_array_equal(out["y"], rows["x"] + 1.0)
    assert seen == [("SingleDeviceSharding", False)] * 2


def test_other_errors_and_a_single_row_out_of_memory_are_raised():
    rows = {"x": np.arange(3.0), "z": np.zeros(3)}
    mesh = Mesh(np.asarray(jax.devices()[:1]), ("rows",))

    def broken(part):
        raise ValueError("not a memory problem")

    with pytest.raises(ValueError, match="not a memory problem"):
        runner._launch(broken, rows, mesh, 2)
    with pytest.raises(RuntimeError, match="RESOURCE_EXHAUSTED"):
        runner._launch(_kernel(0, []), rows, mesh, 2)


def test_the_rows_that_fit_are_remembered_in_the_cache_folder(tmp_path, monkeypatch):
    """A later process starts at the launch size an earlier one fell back to (per device kind):
    a file in the cache folder, the lower value kept when two processes write."""
    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NUEJAX_CACHE", "1")
    monkeypatch.setattr(runner, "_ROWS_THAT_FIT", {})
    assert runner._remembered_rows(7, 3) is None
    runner._remember_rows(7, 3, 4096)
    monkeypatch.setattr(runner, "_ROWS_THAT_FIT", {})  # a new process: only the file is left
    assert runner._remembered_rows(7, 3) == 4096 and runner._remembered_rows(7, 4) is None
    runner._remember_rows(7, 3, 8192)  # another process that went through at more rows
    monkeypatch.setattr(runner, "_ROWS_THAT_FIT", {})
    assert runner._remembered_rows(7, 3) == 4096
    (tmp_path / runner.ROWS_FILE).write_text("not json")  # an unreadable file is ignored
    monkeypatch.setattr(runner, "_ROWS_THAT_FIT", {})
    assert runner._remembered_rows(7, 3) is None
    monkeypatch.setenv("NUEJAX_CACHE", "0")  # the cache switched off: nothing read or written
    runner._remember_rows(5, 1, 64)
    monkeypatch.setattr(runner, "_ROWS_THAT_FIT", {})
    assert runner._remembered_rows(5, 1) is None


def test_accelerator_launches_hold_the_runs_power_of_two_of_rows(monkeypatch):
    """On an accelerator a run's launches all hold the next power of two of a chunk's rows per
    device, at least ACCELERATOR_LAUNCH_MIN and at most the chunk's share (one compiled shape per
    run), not the full chunk whatever the run's length; the numbers are the unpadded rows'."""
    f = runner.accelerator_launch_rows
    assert f(2800, 16384, 1) == 4096 and f(1500, 16384, 1) == 4096  # xenonnt's CLs and FC runs
    assert f(5000, 16384, 1) == 8192 and f(100_000, 16384, 1) == 16384 and f(100_000, 16384, 2) == 8192
    assert f(5000, 16384, 2) == 4096 and f(10, 100, 1) == 100 and f(1, 16384, 1) == 4096
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(runner, "ACCELERATOR_LAUNCH_MIN", 8)
    monkeypatch.setattr(runner, "_remembered_rows", lambda *a: None)
    rows = {"x": np.arange(37.0), "z": np.linspace(0.0, 1.0, 37)}
    for chunk, sizes_expected in ((16384, [64]), (100, [64]), (16, [16, 16, 16]), (20, [20, 20])):
        sizes = []
        got = runner.run_rows(_kernel(1 << 20, sizes), rows, chunk=chunk)
        np.testing.assert_array_equal(got["y"], rows["x"] ** 2 + rows["z"])
        assert sizes == sizes_expected, (chunk, sizes)
