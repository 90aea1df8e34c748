"""The on-disk cache of model tensors (nuejax.cache): hits equal uncached builds bit for bit, every
input is part of the key, concurrent builders and corrupt entries are safe, and the housekeeping
(location, switch, size, clear, `nuejax cache`) works. Every test uses a cache folder of its own."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
import zipfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import nuejax
from nuejax import cache
from nuejax.cli import main
from nuejax.detector import backgrounds
from nuejax.detector.montecarlo import ResponseHistogram
from nuejax.detector.response import ResponseParams, quenching_table, unit_bin_edges
from nuejax.errors import InputError
from nuejax.model import borexino_like, borexino_like_model
from nuejax.physics.oscillation import OscillationParams

SMALL = dict(n_T=50, n_E=100, signals=("pp", "7Be_862"), backgrounds=("85Kr",))


@pytest.fixture
def cache_folder(tmp_path, monkeypatch):
    """An empty cache folder of this test, the cache on, and the warn-once memory reset."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(folder))
    monkeypatch.delenv("NUEJAX_CACHE", raising=False)
    monkeypatch.setattr(cache, "_warned", set())
    return folder


@pytest.fixture
def counted(monkeypatch):
    """Counts the real (uncached) builds of signal components and background templates. The
    background warm-up of a model build (a line built beside the first continuum, its result
    thrown away; tests/test_ahead.py) is switched off: it is a build too, but not the cache's."""
    monkeypatch.setenv("NUEJAX_AHEAD", "0")
    calls = {"signal": 0, "background": 0}

    def counting(module, name, kind):
        real = getattr(module, name)

        def wrapper(**kw):
            calls[kind] += 1
            return real(**kw)

        monkeypatch.setattr(module, name, wrapper)

    counting(borexino_like, "_build_signal_component", "signal")
    counting(backgrounds, "_build_background_template", "background")
    return calls


def assert_same_bits(a, b):
    """Same tree structure, leaf types, dtypes, shapes, weak types and bytes."""
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    assert ta == tb
    assert len(la) == len(lb)
    for i, (x, y) in enumerate(zip(la, lb)):
        assert type(x) is type(y), (i, type(x), type(y))
        assert x.dtype == y.dtype and x.shape == y.shape, (i, x.dtype, y.dtype, x.shape, y.shape)
        assert getattr(x, "weak_type", False) == getattr(y, "weak_type", False), i
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), i


def entries(folder):
    return sorted(p.name for p in Path(folder).iterdir()) if Path(folder).exists() else []


def test_the_test_suite_does_not_write_into_the_home_cache():
    # conftest.py points the whole run at a temporary folder (no monkeypatch here)
    folder = cache.cache_dir().resolve()
    assert str(folder) == str(Path(os.environ["NUEJAX_TEST_CACHE_DIR"]).resolve())
    assert (Path.home() / ".cache").resolve() not in (folder, *folder.parents)


@pytest.mark.slow
def test_cached_model_equals_uncached_build_bit_for_bit(cache_folder, counted, monkeypatch):
    first = borexino_like_model(**SMALL)  # empty folder: built and stored
    assert counted == {"signal": 2, "background": 1}
    assert len(entries(cache_folder)) == 3
    second = borexino_like_model(**SMALL)  # loaded
    assert counted == {"signal": 2, "background": 1}, "the second build did not come from the cache"
    monkeypatch.setenv("NUEJAX_CACHE", "0")
    reference = borexino_like_model(**SMALL)  # the cache off: the plain build
    assert counted == {"signal": 4, "background": 2}
    for model in (first, second):
        assert_same_bits(tuple(model.signals), tuple(reference.signals))
        assert_same_bits(jax.tree_util.tree_leaves(model), jax.tree_util.tree_leaves(reference))
        assert isinstance(model.signals[0].kernel, jax.Array)
    rng = np.random.default_rng(7)
    p = reference.defaults()
    p.update(eps_ee_L=rng.uniform(-0.2, 0.2), mu_nu=rng.uniform(0, 5), norm_pp=rng.uniform(0.9, 1.1),
             norm_7Be=rng.uniform(0.9, 1.1), rate_85Kr=rng.uniform(3, 10), sin2_theta12=rng.uniform(0.29, 0.32))
    data = reference.pseudo_data(jax.random.PRNGKey(3), p)
    values = [float(m.nll(p, data)) for m in (first, second, reference)]
    assert values[0] == values[1] == values[2], values


def _stub_builder(monkeypatch):
    """Replace the signal builder by a cheap one returning a distinct value per call."""
    calls = []

    def stub(**kw):
        calls.append(kw)
        return {"call": np.array([float(len(calls))]), "kernel": jnp.asarray(np.arange(3.0) * len(calls))}

    monkeypatch.setattr(borexino_like, "_build_signal_component", stub)
    return calls


def test_every_argument_of_signal_component_is_in_the_key(cache_folder, monkeypatch):
    calls = _stub_builder(monkeypatch)
    edges = unit_bin_edges(90, 120)
    n_obs = int(edges.shape[0]) - 1
    t_edges = np.linspace(0.0, 0.7, 21)
    hist = ResponseHistogram(np.ones((20, n_obs)), t_edges, np.asarray(edges), 1000.0)
    counts = np.ones((20, n_obs))
    counts[3, 4] = 2.0
    base = dict(label="7Be_862", obs_edges=edges, norm="norm_7Be", response=ResponseParams(), table=None,
                hist=None, n_T=20, solar_model="gs98", radiative=True, n_E=100, osc=OscillationParams(),
                mask=None, dtype=None)
    mask = np.ones(n_obs)
    mask[5] = 0.0
    changes = {
        "label": "7Be_384",
        "obs_edges": unit_bin_edges(90, 121),
        "norm": "norm_other",
        "response": ResponseParams(light_yield=501.0),
        "table": quenching_table(n=2001),
        "hist": hist,
        "n_T": 21,
        "solar_model": "agss09",
        "radiative": False,
        "n_E": 101,
        "osc": OscillationParams(sin2_theta12=0.31),
        "mask": mask,
        "dtype": jnp.float32,
    }
    assert set(changes) == set(base), "a new argument of signal_component needs a case here"

    def call(args):
        args = dict(args)
        return borexino_like.signal_component(args.pop("label"), args.pop("obs_edges"), **args)

    first = call(base)
    assert len(calls) == 1
    assert call(base)["call"][0] == 1.0 and len(calls) == 1  # a hit
    for name, value in changes.items():
        n = len(calls)
        out = call(dict(base, **{name: value}))
        assert len(calls) == n + 1, f"changing {name} did not miss"
        assert out["call"][0] == n + 1
    # finer changes: one field of a parameter tuple, one entry of an array, another histogram
    for name, value in [("response", ResponseParams(kB=0.0110001)), ("osc", OscillationParams(dm2_21=7.5e-5)),
                        ("hist", ResponseHistogram(counts, t_edges, np.asarray(edges), 1000.0)),
                        ("table", quenching_table())]:
        n = len(calls)
        call(dict(base, **{name: value}))
        assert len(calls) == n + 1, f"changing {name} did not miss"
    n = len(calls)
    assert call(base)["call"][0] == 1.0 and len(calls) == n  # the first entry is still there
    assert_same_bits(call(base), first)


def test_code_data_and_jax_settings_are_in_the_key(cache_folder, monkeypatch):
    calls = _stub_builder(monkeypatch)
    edges = unit_bin_edges(90, 120)

    def call():
        return borexino_like.signal_component("7Be_862", edges, norm="norm_7Be", n_T=20)

    call()
    call()
    assert len(calls) == 1
    with jax.default_matmul_precision("highest"):
        call()
    assert len(calls) == 2
    with jax.default_device(jax.devices("cpu")[0]):  # an explicit device, even the default one
        call()
    assert len(calls) == 3
    monkeypatch.setattr(cache, "fingerprint", lambda: "0" * 40)  # other code, data or versions
    call()
    assert len(calls) == 4
    assert len([e for e in entries(cache_folder) if e.startswith("signal-")]) == 4


def test_source_digest_changes_with_any_source_or_data_file(tmp_path):
    root = Path(nuejax.__file__).parent
    copy = tmp_path / "nuejax"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("__pycache__"))
    base = cache.source_digest(copy)
    assert cache.source_digest(copy) == base
    assert base == cache.source_digest(root)
    py = copy / "physics" / "precomputed.py"
    text = py.read_bytes()
    py.write_bytes(text + b"\n# a comment\n")
    assert cache.source_digest(copy) != base
    py.write_bytes(text)
    assert cache.source_digest(copy) == base
    data = next(p for p in sorted((copy / "data").rglob("*")) if p.is_file() and p.suffix != ".md")
    raw = data.read_bytes()
    data.write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))
    assert cache.source_digest(copy) != base
    data.write_bytes(raw)
    (copy / "model" / "new_module.py").write_text("x = 1\n")
    assert cache.source_digest(copy) != base


def test_background_template_hit_and_miss_on_real_values(cache_folder, counted):
    edges = unit_bin_edges(90, 400)
    table = quenching_table()
    first = backgrounds.background_template("85Kr", edges, ResponseParams(), table)
    again = backgrounds.background_template("85Kr", edges, ResponseParams(), table)
    assert counted["background"] == 1
    assert type(again) is np.ndarray
    assert_same_bits(again, first)
    other = backgrounds.background_template("85Kr", edges, ResponseParams(light_yield=520.0), table)
    assert counted["background"] == 2
    assert not np.array_equal(other, first)
    with pytest.raises(KeyError, match="did you mean '85Kr'"):  # checks run before the cache
        backgrounds.background_template("85Kx", edges, ResponseParams(), table)


def _flip_last_byte_of_leaf(path):
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("leaf_00000.npy")
    with open(path, "r+b") as f:
        f.seek(info.header_offset + 26)
        name_len, extra_len = np.frombuffer(f.read(4), dtype="<u2")
        end = info.header_offset + 30 + int(name_len) + int(extra_len) + info.compress_size - 1
        f.seek(end)
        b = f.read(1)
        f.seek(end)
        f.write(bytes([b[0] ^ 0x10]))


@pytest.mark.parametrize("damage", ["empty", "truncated", "garbage", "flipped_bit", "other_key"])
def test_corrupt_entry_is_a_warned_miss_and_is_overwritten(cache_folder, counted, damage):
    edges = unit_bin_edges(90, 400)
    table = quenching_table()
    build = lambda light_yield=500.0: backgrounds.background_template(  # noqa: E731
        "85Kr", edges, ResponseParams(light_yield=light_yield), table)
    good = build()
    (path,) = cache_folder.glob("background-85Kr-*.npz")
    raw = path.read_bytes()
    if damage == "empty":
        path.write_bytes(b"")
    elif damage == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "garbage":
        path.write_bytes(np.random.default_rng(1).bytes(len(raw)))
    elif damage == "flipped_bit":
        _flip_last_byte_of_leaf(path)
    else:  # a whole entry of another key under this name
        build(light_yield=510.0)
        (other,) = set(cache_folder.glob("background-85Kr-*.npz")) - {path}
        shutil.copyfile(other, path)
    assert path.read_bytes() != raw
    n = counted["background"]
    with pytest.warns(cache.CacheWarning, match="unreadable entry"):
        value = build()
    assert counted["background"] == n + 1
    assert_same_bits(value, good)
    # overwritten with a good entry: the next call loads it (a failed load would build again)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_same_bits(build(), good)  # a plain hit now
    assert counted["background"] == n + 1


def test_a_corrupt_entry_warns_once_per_file(cache_folder):
    calls = []
    build = lambda: calls.append(1) or {"x": np.arange(4.0)}  # noqa: E731
    cache.cached("test", "once", {"a": 1}, build)
    (path,) = cache_folder.glob("test-once-*.npz")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(3):
            path.write_bytes(b"not an npz")
            assert np.array_equal(cache.cached("test", "once", {"a": 1}, build)["x"], np.arange(4.0))
    assert len(calls) == 4
    assert [w.category for w in seen] == [cache.CacheWarning]


def test_a_failed_write_leaves_no_file_and_keeps_the_old_entry(cache_folder, monkeypatch):
    cache.cached("test", "old", {"a": 1}, lambda: {"x": np.arange(3.0)})
    before = entries(cache_folder)
    real_savez = np.savez

    def dying_savez(f, **arrays):
        f.write(b"PK\x03\x04 half an entry")
        raise OSError("disk full")

    monkeypatch.setattr(cache.np, "savez", dying_savez)
    with pytest.warns(cache.CacheWarning, match="could not store .*disk full"):
        out = cache.cached("test", "new", {"a": 2}, lambda: {"x": np.arange(5.0)})
    assert np.array_equal(out["x"], np.arange(5.0))
    assert entries(cache_folder) == before  # neither a half entry nor a temporary file
    monkeypatch.setattr(cache.np, "savez", real_savez)
    assert np.array_equal(cache.cached("test", "old", {"a": 1}, lambda: pytest.fail("rebuilt"))["x"], np.arange(3.0))


_RACE = textwrap.dedent("""
    import hashlib, json, sys, time, warnings
    import numpy as np
    import nuejax
    nuejax.enable_x64()
    import jax
    from nuejax.cache import CacheWarning
    from nuejax.detector.response import unit_bin_edges
    from nuejax.model import borexino_like as bl
    warnings.simplefilter("error", CacheWarning)
    built = []
    real = bl._build_signal_component
    bl._build_signal_component = lambda **kw: built.append(1) or real(**kw)
    mine, other = sys.argv[1], sys.argv[2]
    open(mine, "w").close()
    t0 = time.time()
    while not __import__("os").path.exists(other):  # start together
        if time.time() - t0 > 120:
            sys.exit("the other process never started")
        time.sleep(0.01)
    s = bl.signal_component("7Be_862", unit_bin_edges(90, 300), norm="norm_7Be", n_T=40)
    leaves = jax.tree_util.tree_leaves(s)
    digest = hashlib.sha256(b"".join(np.asarray(x).tobytes() for x in leaves)).hexdigest()
    print(json.dumps(dict(built=len(built), digest=digest)))
""")


@pytest.mark.slow
def test_two_processes_building_the_same_entry_at_once(cache_folder, tmp_path, counted):
    script = tmp_path / "race.py"
    script.write_text(_RACE)
    env = dict(os.environ, NUEJAX_CACHE_DIR=str(cache_folder))
    a, b = tmp_path / "ready_a", tmp_path / "ready_b"
    procs = [subprocess.Popen([sys.executable, str(script), str(x), str(y)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for x, y in ((a, b), (b, a))]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    # both missed (they started together and a build takes seconds): both wrote the entry
    assert [r["built"] for r in results] == [1, 1], results
    assert results[0]["digest"] == results[1]["digest"]
    names = entries(cache_folder)
    assert len(names) == 1 and names[0].startswith("signal-7Be_862-"), names  # no temporary file left
    # this process reads the entry they left: the same bits, no build
    s = borexino_like.signal_component("7Be_862", unit_bin_edges(90, 300), norm="norm_7Be", n_T=40)
    assert counted["signal"] == 0
    digest = hashlib.sha256(b"".join(np.asarray(x).tobytes() for x in jax.tree_util.tree_leaves(s))).hexdigest()
    assert digest == results[0]["digest"]


def test_leaf_types_round_trip(cache_folder):
    def build():
        return {"i32": jnp.arange(3, dtype=jnp.int32), "f32": jnp.ones((2, 2), jnp.float32), "np": np.arange(4.0),
                "float": 1.5, "int": 3, "bool": True, "np_scalar": np.float32(2.5),
                "nested": (None, jnp.zeros(0), [np.int64(7)])}

    first = cache.cached("test", "kinds", {}, build)
    second = cache.cached("test", "kinds", {}, lambda: pytest.fail("rebuilt"))
    assert_same_bits(jax.tree_util.tree_map(np.asarray, first), jax.tree_util.tree_map(np.asarray, second))
    for k in first:
        for x, y in zip(jax.tree_util.tree_leaves(first[k]), jax.tree_util.tree_leaves(second[k])):
            assert type(x) is type(y), (k, type(x), type(y))
    assert_same_bits(first["f32"], second["f32"])


def test_argument_key_tells_types_and_values_apart(cache_folder):
    def key(value):
        return cache.argument_key("test", {"x": value})

    values = [1.0, np.float64(1.0), np.float32(1.0), 1, True, jnp.asarray(1.0), jnp.asarray(np.float64(1.0)),
              (1.0,), [1.0], "1.0", None, np.array([1.0]), np.array([[1.0]]), np.array([1.0], np.float32),
              jnp.asarray(np.array([1.0])), np.array([1.0, 2.0])[::-1], np.array([2.0, 1.0]).reshape(2, 1),
              ResponseParams(), OscillationParams()]
    keys = [key(v) for v in values]
    assert len(set(keys)) == len(keys)
    assert key(np.array([1.0, 2.0])) == key(np.array([1.0, 2.0]))
    assert key(np.array([1.0, 2.0])[::-1]) == key(np.array([2.0, 1.0]))  # by value, whatever the strides
    assert key({"a": 1, "b": 2}) == key({"b": 2, "a": 1})
    assert cache.argument_key("test", {"x": 1}) != cache.argument_key("other", {"x": 1})
    built = []
    for _ in range(2):  # a build that returns None is stored and found like any other
        assert cache.cached("test", "none", {}, lambda: built.append(1)) is None
    assert built == [1]


def test_unstorable_and_unkeyable_values_are_built_uncached_with_a_warning(cache_folder):
    calls = []
    with pytest.warns(cache.CacheWarning, match="weakly typed"):
        out = cache.cached("test", "weak", {}, lambda: calls.append(1) or {"w": jnp.asarray(1.0)})
    assert out["w"].weak_type and calls == [1]
    assert not list(cache_folder.glob("test-weak-*"))
    with pytest.warns(cache.CacheWarning, match="not cached.*object"):
        cache.cached("test", "obj", {"thing": object()}, lambda: calls.append(1) or {"x": np.zeros(1)})
    assert calls == [1, 1]
    class Local:  # a PyTree node that pickle cannot find by name
        pass

    jax.tree_util.register_pytree_node(Local, lambda x: ((), None), lambda aux, ch: Local())
    with pytest.warns(cache.CacheWarning, match="cannot be pickled"):
        cache.cached("test", "local", {}, lambda: calls.append(1) or Local())
    assert calls == [1, 1, 1]
    with pytest.raises(ValueError, match="lowercase"):
        cache.cached("Bad-kind", "x", {}, lambda: None)


@pytest.mark.parametrize("value", ["0", "off", "OFF", "false", "no"])
def test_switching_the_cache_off(cache_folder, monkeypatch, value):
    monkeypatch.setenv("NUEJAX_CACHE", value)
    calls = []
    for _ in range(2):
        cache.cached("test", "off", {}, lambda: calls.append(1) or {"x": np.zeros(2)})
    assert calls == [1, 1]
    assert not cache_folder.exists()
    assert not cache.cache_enabled()


def test_a_bad_switch_value_is_an_error_naming_the_variable(cache_folder, monkeypatch):
    monkeypatch.setenv("NUEJAX_CACHE", "maybe")
    with pytest.raises(InputError, match="NUEJAX_CACHE='maybe'"):
        cache.cached("test", "x", {}, lambda: {"x": np.zeros(2)})


def test_cache_folder_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("NUEJAX_CACHE_DIR")
    assert cache.cache_dir() == tmp_path / "xdg" / "nuejax"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "nuejax"


def test_an_unwritable_folder_warns_and_builds(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "_warned", set())
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(blocker / "cache"))
    calls = []
    with pytest.warns(cache.CacheWarning, match="could not store"):
        out = cache.cached("test", "x", {}, lambda: calls.append(1) or {"x": np.arange(2.0)})
    assert np.array_equal(out["x"], np.arange(2.0)) and calls == [1]


def test_info_clear_and_the_cache_command(cache_folder, monkeypatch, capsys):
    for k in range(3):
        cache.cached("test", f"e{k}", {}, lambda k=k: {"x": np.arange(10.0 * (k + 1))})
    with monkeypatch.context() as m:  # an entry of other code: stale
        m.setattr(cache, "fingerprint", lambda: "f" * 40)
        cache.cached("test", "old", {}, lambda: {"x": np.arange(3.0)})
    (cache_folder / "notes.txt").write_text("not ours")
    (cache_folder / ".tmp-killed-writer.npz").write_bytes(b"PK")
    sizes = {p.name: p.stat().st_size for p in cache_folder.iterdir()}
    info = cache.cache_info()
    assert info["path"] == str(cache_folder) and info["enabled"]
    assert info["entries"] == 4 and info["current_entries"] == 3 and info["temporary_files"] == 1
    assert info["bytes"] == sum(v for k, v in sizes.items() if k != "notes.txt")
    assert info["by_kind"]["test"][0] == 4

    assert main(["cache"]) == 0
    out = capsys.readouterr().out
    assert str(cache_folder) in out and "4 entries" in out and "stale: 1" in out
    assert main(["cache", "--clear", "--stale", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["removed_files"] == 1 and info["entries"] == 3 and info["current_entries"] == 3
    assert info["temporary_files"] == 1  # a writer may still be running: --stale leaves it
    assert main(["cache", "--clear"]) == 0
    assert "removed 4 entries" in capsys.readouterr().out
    assert entries(cache_folder) == ["notes.txt"]  # other files in the folder stay
    assert main(["cache", "--stale"]) == 2
    assert "--stale only goes with --clear" in capsys.readouterr().err
    for switch in ("NUEJAX_AHEAD", "NUEJAX_EXPORTED"):  # read when a command starts (programs loaded ahead)
        with monkeypatch.context() as m:
            m.setenv(switch, "sometimes")
            assert main(["cache"]) == 2
            assert f"nuejax: error: {switch}='sometimes'" in capsys.readouterr().err


def test_writes_prune_stale_entries_above_the_size_limit(cache_folder, monkeypatch):
    """Above NUEJAX_CACHE_MAX_MB a write removes stale entries, oldest first, until the folder
    fits; entries of the running code stay even if the folder is still too large; a bad limit is
    an error naming the variable."""
    import os
    import time as _time

    for k, tag in enumerate("abc"):  # three stale entries of 'other code', oldest first
        with monkeypatch.context() as m:
            m.setattr(cache, "fingerprint", lambda tag=tag: tag * 40)
            cache.cached("test", f"old{k}", {}, lambda: {"x": np.zeros(20_000)})  # 160 kB each
        for p in cache_folder.glob(f"test-old{k}-*.npz"):
            os.utime(p, (_time.time() - 100 + k, _time.time() - 100 + k))
    sizes = {p.name: p.stat().st_size for p in cache_folder.glob("*.npz")}
    assert len(sizes) == 3
    one = max(sizes.values())
    # room for two entries: writing a current one must remove the two oldest stale ones
    monkeypatch.setenv(cache.ENV_MAX_MB, str(2.5 * one / 1e6))
    cache.cached("test", "new", {}, lambda: {"x": np.zeros(20_000)})
    names = sorted(p.name.split("-")[1] for p in cache_folder.glob("*.npz"))
    assert names == ["new", "old2"], names
    # a limit below the current entries: every stale entry goes, the current ones stay
    monkeypatch.setenv(cache.ENV_MAX_MB, "0")
    cache.cached("test", "newer", {}, lambda: {"x": np.zeros(10)})
    assert sorted(p.name.split("-")[1] for p in cache_folder.glob("*.npz")) == ["new", "newer"]
    monkeypatch.setenv(cache.ENV_MAX_MB, "lots")
    with pytest.raises(InputError, match="NUEJAX_CACHE_MAX_MB"):
        cache.cached("test", "x", {}, lambda: {"x": np.zeros(1)})


_COMPILE_PROBE = textwrap.dedent("""
    import json, sys
    import jax
    from nuejax.cache import enable_compilation_cache
    events = []
    jax.monitoring.register_event_listener(lambda name, **kw: events.append(name))
    folder = enable_compilation_cache()
    print(json.dumps({"folder": None if folder is None else str(folder),
                      "value": float(jax.jit(lambda x: (x * 3.0 + 1.0).sum())(jax.numpy.arange(7.0))),
                      "hits": events.count("/jax/compilation_cache/cache_hits"),
                      "misses": events.count("/jax/compilation_cache/cache_misses")}))
""")


def _compile_probe(env):
    out = subprocess.run([sys.executable, "-c", _COMPILE_PROBE], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_compilation_cache_is_shared_by_processes_and_can_be_switched_off(tmp_path):
    """enable_compilation_cache: a second process loads what the first compiled (a hit, no miss),
    in xla/ of the cache folder; NUEJAX_COMPILATION_CACHE=0 and NUEJAX_CACHE=0 keep it off; a
    folder the user set is kept; `nuejax cache --clear` removes the programs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    env["NUEJAX_CACHE_DIR"] = str(tmp_path / "c")
    first = _compile_probe(env)
    assert first["folder"] == str(tmp_path / "c" / "xla") and first["misses"] >= 1 and first["hits"] == 0
    programs = sorted(p.name for p in (tmp_path / "c" / "xla").iterdir() if p.name.endswith("-cache"))
    assert programs
    second = _compile_probe(env)
    assert second["hits"] >= 1 and second["misses"] == 0 and second["value"] == first["value"] == 70.0
    for switch in ("NUEJAX_COMPILATION_CACHE", "NUEJAX_CACHE"):
        off = _compile_probe(dict(env, **{switch: "0"}, NUEJAX_CACHE_DIR=str(tmp_path / switch)))
        assert off["folder"] is None and off["hits"] == 0 and not (tmp_path / switch).exists()
    # the user's folder and JAX's settings (programs under 1 s are not stored) are kept
    own = _compile_probe(dict(env, JAX_COMPILATION_CACHE_DIR=str(tmp_path / "own"),
                              NUEJAX_CACHE_DIR=str(tmp_path / "d")))
    assert own["folder"] == str(tmp_path / "own") and not (tmp_path / "d").exists()


def test_compiled_programs_are_pruned_least_recently_used_first(tmp_path, monkeypatch):
    """prune_compiled_programs removes programs, oldest use first, until the folder is under the
    limit; other files stay. enable_compilation_cache prunes and leaves JAX's eviction off (its
    per-write scan of every stored program was quadratic in a run's programs)."""
    import jax

    folder = tmp_path / "xla"
    folder.mkdir()
    for i, name in enumerate(("a-cache", "b-cache", "c-cache", "d-cache")):
        (folder / name).write_bytes(b"x" * 100)
        os.utime(folder / name, (1000.0 + i, 1000.0 + i))  # a oldest, d newest
    os.utime(folder / "a-cache", (5000.0, 1000.0))  # a read last: the most recently used
    (folder / "notes.txt").write_bytes(b"y" * 1000)
    assert cache.prune_compiled_programs(folder, limit=250) == (2, 200)
    assert sorted(p.name for p in folder.iterdir()) == ["a-cache", "d-cache", "notes.txt"]
    assert cache.prune_compiled_programs(folder, limit=250) == (0, 0)
    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NUEJAX_CACHE_MAX_MB", "0.00015")
    before = (jax.config.jax_compilation_cache_dir, jax.config.jax_compilation_cache_max_size)
    try:
        jax.config.update("jax_compilation_cache_dir", None)
        assert cache.enable_compilation_cache() == folder
        assert jax.config.jax_compilation_cache_max_size == -1
        assert sorted(p.name for p in folder.iterdir()) == ["a-cache", "notes.txt"]
    finally:
        jax.config.update("jax_compilation_cache_dir", before[0])
        jax.config.update("jax_compilation_cache_max_size", before[1])
        from jax._src import compilation_cache

        compilation_cache.reset_cache()  # back to the run's folder at the next compilation


def test_cache_command_reports_and_clears_compiled_programs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(tmp_path))
    (tmp_path / "xla").mkdir()
    for name in ("jit_f-0123-cache", "jit_f-0123-atime", "jit_g-4567-cache"):
        (tmp_path / "xla" / name).write_bytes(b"x" * 10)
    (tmp_path / "xla" / "notes.txt").write_text("mine")
    info = cache.cache_info()
    assert info["compiled_programs"] == 2 and info["compiled_bytes"] == 20
    assert cache.clear_cache(stale_only=True) == (0, 0)  # programs are never stale in nuejax's sense
    assert cache.clear_cache() == (3, 30)
    assert sorted(p.name for p in (tmp_path / "xla").iterdir()) == ["notes.txt"]
    monkeypatch.setenv("NUEJAX_COMPILATION_CACHE", "maybe")
    with pytest.raises(InputError, match="NUEJAX_COMPILATION_CACHE='maybe'"):
        cache.enable_compilation_cache()


def test_the_commands_gpu_flags_do_not_change_the_key_on_the_cpu(monkeypatch):
    """`nuejax` commands add XLA's GPU flags to XLA_FLAGS (nuejax.runtime.GPU_XLA_FLAGS), also when
    called in a Python process: on the CPU backend, where they change nothing, an entry's key must
    not see them (a worker that ran `main` in-process and then a subprocess keyed the same model
    differently, and built it again); any other flag stays part of it."""
    import jax

    from nuejax.runtime import GPU_XLA_FLAGS

    if jax.default_backend() != "cpu":
        pytest.skip("the GPU flags are part of the key on a GPU")
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    plain = cache.environment()
    monkeypatch.setenv("XLA_FLAGS", " ".join(("--xla_cpu_enable_fast_math=false",) + GPU_XLA_FLAGS))
    assert cache.environment() == plain
    # nor the number of virtual CPU devices (tests/test_multidevice.py: a model built on four
    # equals the one built on one)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=4")
    assert cache.environment() == plain
    monkeypatch.setenv("XLA_FLAGS", "")
    assert cache.environment() != plain
