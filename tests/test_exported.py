"""Programs kept across processes (nuejax._internal.exported): a second process loads the stored
program instead of tracing the function, and gets the jitted function's results; calls inside a
trace, with the switch off, or with an argument that cannot be keyed go to the jitted function."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nuejax._internal.exported import persistent

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent('''
    import json, sys
    from dataclasses import dataclass, field
    from typing import NamedTuple
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    from nuejax._internal.exported import persistent

    traced = []

    @jax.tree_util.register_dataclass
    @dataclass(frozen=True)
    class Problem:
        a: jax.Array
        scale: float = field(metadata=dict(static=True), default=2.0)
        names: tuple = field(metadata=dict(static=True), default=())
        other: tuple = field(metadata=dict(static=True), default=())

    class Out(NamedTuple):
        value: jax.Array
        steps: jax.Array

    def solve(p, x):
        traced.append(1)  # runs only while tracing
        def body(c):
            y, k = c
            return y - 0.5 * (y * y - p.a) / y, k + 1
        y, k = jax.lax.while_loop(lambda c: jnp.abs(c[0] * c[0] - p.a).max() > 1e-12, body, (x, 0))
        return Out(p.scale * y, k)

    f = persistent(jax.jit(solve), "test_sqrt")
    names = tuple(str(i) for i in range(3))
    # equal static fields, one object or two: a pickle of the treedef would differ (its memo)
    other = names if sys.argv[1] == "shared" else tuple(str(i) for i in range(3))
    out = f(Problem(jnp.array([2.0, 9.0]), names=names, other=other), np.array([1.0, 1.0]))
    n_traced = len(traced)
    ref = jax.jit(solve)(Problem(jnp.array([2.0, 9.0])), np.array([1.0, 1.0]))
    print(json.dumps({"traced": n_traced, "value": np.asarray(out.value).tolist(), "steps": int(out.steps),
                      "ref": np.asarray(ref.value).tolist(), "type": type(out).__name__}))
''')


def _run(tmp_path, shared="shared", **env):
    e = dict(os.environ, NUEJAX_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT), **env)
    e.pop("NUEJAX_CACHE", None)
    r = subprocess.run([sys.executable, "-c", SCRIPT, shared], env=e, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_program_instead_of_tracing(tmp_path):
    first = _run(tmp_path)
    entries = list((tmp_path / "cache").glob("program-test_sqrt-*.npz"))
    assert len(entries) == 1
    second = _run(tmp_path, "separate")
    # the first process traced solve to export it; the second loaded it
    assert first["traced"] == 1 and second["traced"] == 0, (first, second)
    assert second["type"] == "Out" and second["steps"] == first["steps"] > 3
    assert second["value"] == first["value"] == first["ref"]
    np.testing.assert_allclose(second["value"], [2 * np.sqrt(2.0), 6.0], rtol=1e-14)


AHEAD_SCRIPT = textwrap.dedent('''
    import concurrent.futures, json, logging, sys, threading
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    from nuejax._internal import exported

    compiled, traced = [], []

    class Compiles(logging.Handler):
        def emit(self, record):
            if "Finished XLA compilation of jit(call)" in record.getMessage():
                compiled.append(threading.current_thread().name)

    jax.config.update("jax_log_compiles", True)
    logging.getLogger("jax").addHandler(Compiles())

    def solve(x, n):  # n: a weakly typed scalar, as the solver's iteration limit
        traced.append(1)
        return jnp.sin(x) * n

    f = exported.persistent(jax.jit(solve), "test_ahead")
    with exported.programs_of_run("test-run", {"option": sys.argv[1]}) as started:
        concurrent.futures.wait(list(exported._AHEAD.values()))  # the loads ahead have ended
        out = f(np.linspace(0.0, 1.0, 3), jnp.asarray(5))
    print(json.dumps({"started": started, "traced": len(traced), "compiled": compiled,
                      "value": np.asarray(out).tolist()}))
''')


def _run_ahead(tmp_path, option):
    e = dict(os.environ, NUEJAX_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    for k in ("NUEJAX_CACHE", "NUEJAX_EXPORTED", "NUEJAX_AHEAD"):
        e.pop(k, None)
    r = subprocess.run([sys.executable, "-c", AHEAD_SCRIPT, option], env=e, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="programs load ahead only where a core is to spare")
def test_a_run_loads_ahead_the_programs_its_last_run_loaded(tmp_path):
    """programs_of_run: the first run remembers the program it loaded; the next run with the same
    options loads it in a background thread from its start, and the call then compiles nothing
    (the executable loaded ahead is the one it runs: same argument types, a weakly typed scalar
    among them) and traces nothing; other options start nothing."""
    first = _run_ahead(tmp_path, "a")
    assert first["started"] == 0 and first["traced"] == 1 and first["compiled"] == ["MainThread"], first
    assert len(list((tmp_path / "cache").glob("index-test_run-*.npz"))) == 1
    second = _run_ahead(tmp_path, "a")
    assert second["started"] == 1 and second["traced"] == 0, second
    assert len(second["compiled"]) == 1 and second["compiled"][0].startswith("nuejax-programs"), second
    assert second["value"] == first["value"]
    np.testing.assert_allclose(first["value"], 5 * np.sin(np.linspace(0.0, 1.0, 3)), rtol=1e-15)
    other = _run_ahead(tmp_path, "b")
    assert other["started"] == 0 and other["traced"] == 0 and other["compiled"] == ["MainThread"], other


def test_each_run_remembers_the_programs_it_called(tmp_path, monkeypatch):
    """programs_of_run records the programs called during the run, also those the process had
    loaded before it (a second command in one process), and none of an earlier run's others."""
    from nuejax._internal import exported
    from nuejax.cache import load_entry

    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NUEJAX_CACHE", "1")
    monkeypatch.setenv("NUEJAX_AHEAD", "0")  # nothing loaded ahead: only what is remembered
    double = persistent(jax.jit(lambda x: 2 * x), "test_runs_double")
    triple = persistent(jax.jit(lambda x: 3 * x), "test_runs_triple")

    def tags(name):
        entry = load_entry("index", name, exported._index_arguments(name, {}))
        return [t for t, _, _ in json.loads(np.asarray(entry["programs"]).tobytes().decode())]

    with exported.programs_of_run("first", {}):
        double(np.ones(3))
    with exported.programs_of_run("second", {}):
        triple(np.ones(3))
    with exported.programs_of_run("third", {}):
        double(np.ones(3))  # loaded by the first run already
    assert tags("first") == ["test_runs_double"]
    assert tags("second") == ["test_runs_triple"]
    assert tags("third") == ["test_runs_double"]
    assert exported._RUN is None and not exported._AHEAD


def test_switched_off_nothing_is_stored(tmp_path):
    out = _run(tmp_path, NUEJAX_EXPORTED="0")
    assert out["traced"] == 1 and not list((tmp_path / "cache").glob("program-*"))


def test_calls_that_are_not_kept_go_to_the_jitted_function(monkeypatch, tmp_path):
    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(tmp_path))
    calls = []

    def double(x):
        calls.append(1)
        return 2 * x

    f = persistent(jax.jit(double), "test_double")
    # inside another trace: the wrapper calls the jitted function, which the outer program inlines
    assert float(jax.jit(lambda x: f(x) + 1)(jnp.float64(3.0) if jax.config.jax_enable_x64 else 3.0)) == 7.0
    assert not list(tmp_path.glob("program-*"))
    # a Python scalar is not an array: not keyed
    assert f(3.0) == 6.0 and not list(tmp_path.glob("program-*"))
    # an array: stored, and a second call with the same signature reuses the loaded program
    x = np.arange(3.0)
    np.testing.assert_array_equal(f(x), 2 * x)
    n = len(calls)
    np.testing.assert_array_equal(f(x + 1), 2 * (x + 1))
    assert len(calls) == n and len(list(tmp_path.glob("program-test_double-*.npz"))) == 1


TOY_SCRIPT = textwrap.dedent('''
    import json, sys
    import jax, numpy as np
    jax.config.update("jax_enable_x64", True)
    sys.path.insert(0, sys.argv[1])  # tests/: limits_models
    from limits_models import MirrorModel
    from nuejax.inference import feldman_cousins, toys

    traced = []

    def counted(f):  # runs only while a program that calls f is traced
        def g(*a, **k):
            traced.append(f.__name__)
            return f(*a, **k)
        return g

    toys.KEEP_ON_CPU = True  # as on a GPU (off on the CPU, where exporting costs more than it saves)
    toys._row = counted(toys._row)  # the toy-fit kernels
    toys._asimov_hessians_of = counted(toys._asimov_hessians_of)  # the start designs' Hessians
    # a nuisance with a mirror branch: the toys' start designs hold the Asimov fits' minima too
    model = MirrorModel.create()
    data = np.asarray(model.expected({"mu": 1.0, "a": 0.3}))
    res = feldman_cousins(model, np.round(data), "mu", [0.5, 1.0, 2.0], 32, key=3)
    print(json.dumps({"traced": traced, "t_crit": res.t_crit.tolist(), "t_obs": res.t_obs.tolist(),
                      "interval": list(res.interval)}))
''')


def _toys_run(tmp_path, **env):
    e = dict(os.environ, NUEJAX_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu", **env)
    e.pop("NUEJAX_CACHE", None)
    r = subprocess.run([sys.executable, "-c", TOY_SCRIPT, str(ROOT / "tests")], env=e, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_toy_fit_kernels_are_kept_across_processes(tmp_path):
    """A construction's toy-fit kernels (nuejax.inference.toys.compiled_toy_fits) and the Asimov
    Hessians of its start designs: a second process loads them instead of tracing them, with the same numbers bit for bit; with the switch off
    they are traced, with the same numbers too."""
    first = _toys_run(tmp_path)
    for tag in ("toyfits", "asimov_hessians"):
        assert list((tmp_path / "cache").glob(f"program-{tag}_*.npz")), tag
    assert set(first["traced"]) == {"_row", "_asimov_hessians_of"}, first["traced"]
    second = _toys_run(tmp_path)
    assert second["traced"] == [], second
    off = _toys_run(tmp_path, NUEJAX_EXPORTED="0")
    assert set(off["traced"]) == {"_row", "_asimov_hessians_of"}
    for run in (second, off):
        assert run["t_crit"] == first["t_crit"] and run["t_obs"] == first["t_obs"]
        assert run["interval"] == first["interval"]


SHARDED_SCRIPT = textwrap.dedent('''
    import json
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    jax.config.update("jax_enable_x64", True)
    from nuejax._internal.exported import persistent

    traced = []
    mesh = Mesh(np.array(jax.devices()), ("rows",))

    def rows(a, x):
        traced.append(1)
        return jnp.sum(x * a, axis=-1), 2 * x

    shard_map = getattr(jax, "shard_map", None) or __import__("jax.experimental.shard_map").experimental.shard_map.shard_map
    f = persistent(jax.jit(shard_map(rows, mesh=mesh, in_specs=(P(), P("rows")), out_specs=P("rows"))), "test_rows")
    x = jax.device_put(np.arange(24.0).reshape(8, 3), NamedSharding(mesh, P("rows")))
    s, y = f(jnp.arange(3.0), x)
    # on one device: the program splits the rows over its mesh itself, which a program exported
    # for two devices cannot be called for (jax.export): the jitted function runs it
    one = f(jnp.arange(3.0), np.ones((2, 3)))
    print(json.dumps({"traced": len(traced), "s": np.asarray(s).tolist(), "devices": len(s.sharding.device_set),
                      "y": np.asarray(y).sum().item(), "one": np.asarray(one[0]).tolist()}))
''')


def test_a_program_over_several_devices_is_kept_for_its_mesh(tmp_path):
    """Rows split over two (virtual CPU) devices: the program is exported for the mesh, a second
    process loads it, and its rows stay split; a call with the arguments on one device goes to the
    jitted function."""
    env = dict(os.environ, NUEJAX_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu",
               XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count=2".strip())
    env.pop("NUEJAX_CACHE", None)
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", SHARDED_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["traced"] >= 2 and second["traced"] == 1, runs  # second: the one-device call alone
    assert len(list((tmp_path / "cache").glob("program-test_rows-*.npz"))) == 2
    want = (np.arange(24.0).reshape(8, 3) @ np.arange(3.0)).tolist()
    for run in runs:
        assert run["s"] == want and run["devices"] == 2 and run["y"] == 2 * np.arange(24.0).sum()
        assert run["one"] == [3.0, 3.0]
