"""The analysis commands' stage results kept in the cache and reused (nuejax.analyses.reuse)."""
import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nuejax.analyses import reuse
from nuejax.analyses._clock import StageClock
from nuejax.cache import CacheWarning
from nuejax.inference.results import (CLsResult, FeldmanCousinsResult, FitResult, GoodnessOfFit, Scan2DResult,
                                      ScanResult)


@pytest.fixture
def stage_cache(tmp_path, monkeypatch):
    """Stage reuse on (the suite runs with it off: tests/conftest.py), in a folder of this test."""
    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NUEJAX_REUSE", "1")
    return tmp_path / "cache"


def _same(a, b, where="value"):
    """Equal in type and value, arrays in dtype and shape too, NaN equal to NaN."""
    assert type(a) is type(b), (where, type(a), type(b))
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), where
    elif isinstance(a, (tuple, list)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    else:
        assert a == b, where


def _results():
    fit = FitResult(names=("a", "b"), values={"a": 0.1 + 0.2, "b": np.float64(-3.5e-300)},
                    errors={"a": 1e-17, "b": None}, covariance=np.array([[1.0, np.nan], [np.inf, -0.0]]),
                    fval=float("inf"), valid=False, nfcn=7, ngrad=3, edm=float("nan"),
                    params={"a": 0.30000000000000004, "c": np.arange(3.0)}, minos={"a": (None, 0.25)},
                    reason="why", diagnostics={"flag": np.bool_(True), "n": np.int64(4), "list": [1, 2.5, None]},
                    n_starts=8, minima=[{"fval": 1.0, "values": {"a": 0.3}, "n_starts": 5}],
                    minima_hessians=(np.eye(2), np.full((2, 2), 0.5)))
    scan = ScanResult("mu", np.linspace(0, 1, 4), np.array([3.0, 2.0, np.inf, np.nan]), 2.0, 1 / 3, ("a", "b"),
                      np.zeros((4, 2)), np.array([True, True, False, False]), seconds=1.25, unit="u",
                      bounds=(0.0, None), passes=2, refitted=1)
    scan2 = Scan2DResult(("x", "y"), np.arange(2.0), np.arange(3.0), np.arange(6.0).reshape(2, 3), 0.0, ("a",),
                         np.ones((2, 3), dtype=bool), best=(0.5, None))
    fc = FeldmanCousinsResult(("mu",), (np.linspace(0, 1, 3),), np.linspace(0, 1, 3)[:, None], np.array([0.1, 2.0, 5.0]),
                              np.array([2.7, 2.7, 2.8]), np.array([0.1, 0.1, np.nan]), np.array([0.9, 0.2, 0.0]),
                              np.array([True, True, False]), np.array([10, 10, 9]), 10, 0.9, (0.0,),
                              bounds=((0.0, np.inf),), discrete=np.array([False, False, True]))
    cls = CLsResult("mu", np.linspace(0.1, 1, 3), np.zeros(3), np.ones(3), np.ones(3), np.ones(3), None,
                    {"0": 0.5, "1": None}, 0.9, "toys", n_toys=10, limit_sb=0.7, expected_sb={"0": 0.6},
                    feldman_cousins=fc)
    gof = GoodnessOfFit(12.5, 10, 0.25, 0.3, 10, 9, (1.0, 2.0))
    return {"fit": fit, "scans": (scan, scan2), "cls": cls, "gof": gof, "n": np.int32(3),
            "grid": np.arange(6, dtype=np.int16).reshape(2, 3), "none": None, "text": "é", "flags": [True, False]}


def test_encode_decode_keep_every_field_and_type():
    """Every result kind, array dtype, numpy scalar, tuple and special float (NaN, ±inf, -0.0,
    denormal-scale and non-shortest decimals) comes back as it went in, through JSON text."""
    value = {**_results(), "jax": jnp.arange(3.0), "jax_int": jnp.asarray(np.int32(7))}
    back = reuse.decode(json.loads(json.dumps(reuse.encode(value))))
    assert isinstance(back["jax"], jax.Array) and not back["jax"].weak_type
    value = {k: (np.asarray(v) if isinstance(v, jax.Array) else v) for k, v in value.items()}
    back = {k: (np.asarray(v) if isinstance(v, jax.Array) else v) for k, v in back.items()}
    _same(value, back)
    assert np.signbit(back["fit"].covariance[1, 1])
    # GoodnessOfFit now round-trips through its JSON form too, as every result does
    assert GoodnessOfFit.from_dict(value["gof"].to_dict()) == value["gof"]


@pytest.mark.parametrize("bad, what", [(object(), "builtins.object"), ({1: 2}, "key 1"),
                                       ({"__array__": 1}, "__array__"), (np.array(["x"]), "dtype <U1"),
                                       ([jnp.zeros(2), lambda: 0], "function"), (np.str_("x"), "dtype <U1"),
                                       (np.zeros(2, dtype=np.longdouble), "float128"),
                                       (jnp.asarray(1.0) * 2, "weakly typed")])
def test_encode_names_what_it_cannot_store(bad, what):
    with pytest.raises(TypeError, match=what):
        reuse.encode(bad)


def test_a_stage_is_computed_once_then_reused_with_its_lines(stage_cache):
    """The second call with the same arguments returns the stored value and says the stored lines
    (the work run beside included) with one saying it was reused; ``reuse=False`` computes it
    again, and so do other arguments; NUEJAX_REUSE=0 computes and stores nothing."""
    calls = []

    def compute(say):
        calls.append(1)
        say("[2/5] a stage")
        branch = say.branch()
        branch("      a line said beside")
        say.replay(branch)
        say("      result 0.3")
        return {"fit": _results()["fit"], "limit": 0.30000000000000004}

    args = reuse.stage_arguments(grid=np.linspace(0, 1, 5), n=3)
    runs = []
    for r in (True, True, False):
        clock = StageClock()
        runs.append((reuse.reused("cmd", "one", args, clock, compute, reuse=r), [m for _, m in clock.lines]))
    assert len(calls) == 2
    _same(runs[0][0], runs[1][0])
    first = ["[2/5] a stage", "      a line said beside", "      result 0.3"]
    assert runs[0][1] == first and runs[2][1] == first
    assert runs[1][1][0] == first[0] and runs[1][1][2:] == first[1:] and "reused from the cache" in runs[1][1][1]
    assert reuse.is_stored("cmd", "one", args)
    other = reuse.stage_arguments(grid=np.linspace(0, 1, 5), n=4)
    assert not reuse.is_stored("cmd", "one", other)
    reuse.reused("cmd", "one", other, StageClock(), compute)
    assert len(calls) == 3


def test_reuse_off_computes_and_stores_nothing(stage_cache, monkeypatch):
    monkeypatch.setenv("NUEJAX_REUSE", "0")
    calls = []
    for _ in range(2):
        reuse.reused("cmd", "off", {"n": 1}, StageClock(), lambda say: calls.append(1) or 1.5)
    assert len(calls) == 2 and not list(stage_cache.glob("stage-*")) and not reuse.is_stored("cmd", "off", {"n": 1})
    monkeypatch.setenv("NUEJAX_REUSE", "sometimes")
    with pytest.raises(ValueError, match="NUEJAX_REUSE='sometimes'"):
        reuse.reused("cmd", "off", {"n": 1}, StageClock(), lambda say: 1.5)


def test_a_changed_model_array_is_a_new_key(stage_cache):
    """A model enters the key by its structure and every leaf: one element changed computes the
    stage again; the same model rebuilt (equal arrays) reuses it."""
    @jax.tree_util.register_dataclass
    @dataclasses.dataclass(frozen=True)
    class Model:
        rates: jax.Array
        label: str = dataclasses.field(metadata={"static": True}, default="m")

    calls = []

    def run(m):
        return reuse.reused("cmd", "model", reuse.stage_arguments(model=m), StageClock(),
                            lambda say: calls.append(1) or float(jnp.sum(m.rates)))

    run(Model(jnp.arange(4.0)))
    run(Model(jnp.arange(4.0)))
    assert len(calls) == 1
    run(Model(jnp.arange(4.0).at[2].set(2.0 + 1e-15)))
    run(Model(jnp.arange(4.0), label="other"))
    assert len(calls) == 3


def test_an_unreadable_entry_or_an_unstorable_value_is_computed(stage_cache):
    """A damaged entry is a miss (computed and stored again); a value that cannot be stored exactly
    is computed every time, with a warning that names it."""
    calls = []
    args = {"n": 2}
    reuse.reused("cmd", "damaged", args, StageClock(), lambda say: calls.append(1) or [1.0])
    (entry,) = stage_cache.glob("stage-cmd_damaged-*.npz")
    entry.write_bytes(entry.read_bytes()[:100])
    assert reuse.reused("cmd", "damaged", args, StageClock(), lambda say: calls.append(1) or [1.0]) == [1.0]
    assert reuse.reused("cmd", "damaged", args, StageClock(), lambda say: calls.append(1) or [1.0]) == [1.0]
    assert len(calls) == 2
    for _ in range(2):
        with pytest.warns(CacheWarning, match="not stored: it returned an object of type builtins.object"):
            reuse.reused("cmd", "object", args, StageClock(), lambda say: calls.append(1) or object())
    assert len(calls) == 4


@pytest.mark.slow
def test_a_second_xenonnt_run_reuses_every_stage_and_writes_the_same_files(stage_cache, tmp_path):
    """nuejax xenonnt twice with the same inputs: the second run reuses all four stages and writes
    every result file byte for byte as the first, and the same summary but for its timings; a run
    with another seed computes the toys again and reuses the rest."""
    from nuejax.analyses.xenonnt_run import run_xenonnt

    lines, summaries = {}, {}
    for label, seed in (("first", 0), ("second", 0), ("seed", 1)):
        said = []
        summaries[label] = run_xenonnt(tmp_path / label, n_toys=4, plots=False, masses=np.array([1.0]), seed=seed,
                                       progress=said.append)
        lines[label] = said
    timing = ("seconds", "phase_start_seconds", "progress_seconds", "reused_stages")
    assert {k: v for k, v in summaries["first"].items() if k not in timing} == \
        {k: v for k, v in summaries["second"].items() if k not in timing}
    assert [summaries[k]["reused_stages"] for k in ("first", "second", "seed")] == \
        [[], ["eps", "med", "mu", "toys"], ["eps", "med", "mu"]]
    files = sorted(p.name for p in (tmp_path / "first").glob("*.json"))
    assert len(files) == 7
    for name in files:
        if name != "summary.json":
            assert (tmp_path / "first" / name).read_bytes() == (tmp_path / "second" / name).read_bytes(), name

    def reused_stages(said):
        heads = [i for i, line in enumerate(said) if line.startswith("[")]
        return [said[i][:5] for i in heads if i + 1 < len(said) and "reused from the cache" in said[i + 1]]

    assert reused_stages(lines["first"]) == []
    assert reused_stages(lines["second"]) == ["[2/5]", "[3/5]", "[4/5]", "[5/5]"]
    assert reused_stages(lines["seed"]) == ["[2/5]", "[4/5]", "[5/5]"]
    assert [ln for ln in lines["second"] if "reused" not in ln] == lines["first"]


def test_a_run_knows_whether_its_last_stages_are_all_stored(stage_cache):
    """stages_of_run remembers the stages a run with given options had; the next run with those
    options is told whether every one of them is in the cache (the command line then loads no
    program ahead), and not where one is missing or the options differ."""
    def run(options, stages=("a", "b")):
        with reuse.stages_of_run("cmd", options) as record:
            for name in stages:
                reuse.reused("cmd", name, {"n": 1}, StageClock(), lambda say: 1.0)
        assert len(record.stages) == len(stages)
        return record.all_stored

    assert run({"toys": 1}) is False
    assert run({"toys": 1}) is True
    assert run({"toys": 2}) is False
    (entry,) = stage_cache.glob("stage-cmd_b-*.npz")
    entry.unlink()
    assert run({"toys": 1}) is False  # b is computed again here, and stored
    assert run({"toys": 1}) is True
    assert run({"toys": 3}, stages=()) is False  # a run without stages stores no record
    assert run({"toys": 3}, stages=()) is False
    # a stage computed every time (a spec's Feldman-Cousins question) keeps the next run computing
    with reuse.stages_of_run("cmd", {"toys": 4}):
        reuse.reused("cmd", "a", {"n": 1}, StageClock(), lambda say: 1.0)
        reuse.computed_always("cmd", "fc")
    with reuse.stages_of_run("cmd", {"toys": 4}) as record:
        pass
    assert record.all_stored is False


def test_a_partly_reused_run_adds_its_programs_to_the_index(tmp_path, monkeypatch):
    """programs_of_run(merge=...): a run that computed only some of its work keeps the last run's
    programs in the index and adds its own; a run that computed everything replaces them."""
    from nuejax._internal import exported
    from nuejax._internal.exported import persistent
    from nuejax.cache import load_entry

    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NUEJAX_AHEAD", "0")
    double = persistent(jax.jit(lambda x: 2 * x), "test_merge_double")
    triple = persistent(jax.jit(lambda x: 3 * x), "test_merge_triple")

    def tags():
        entry = load_entry("index", "merged", exported._index_arguments("merged", {}))
        return [t for t, _, _ in json.loads(np.asarray(entry["programs"]).tobytes().decode())]

    with exported.programs_of_run("merged", {}):
        double(np.ones(3))
    with exported.programs_of_run("merged", {}, merge=lambda: True):
        triple(np.ones(3))
        double(np.ones(3))
    assert tags() == ["test_merge_double", "test_merge_triple"]
    with exported.programs_of_run("merged", {}):
        triple(np.ones(3))
    assert tags() == ["test_merge_triple"]


@pytest.mark.slow
def test_a_second_spec_run_reuses_its_answers_and_a_changed_question_is_computed(stage_cache, tmp_path):
    """nuejax run: a second run of a specification reuses the fit and every answer of the kinds
    kept (fit, goodness of fit, profile, CLs, 2-D region), equal to the first run's; a question
    whose grid changed is computed again, the others still reused."""
    from test_spec import MORE, _rounded_asimov

    path, _ = _rounded_asimov(tmp_path, MORE)
    runs = []
    for label in ("first", "second"):
        said = []
        runs.append((run_spec_answers(path, tmp_path / label, said), said))
    assert runs[1][0] == runs[0][0]
    assert json.loads((tmp_path / "first" / "results.json").read_text())["reused"] == []
    assert json.loads((tmp_path / "second" / "results.json").read_text())["reused"] == \
        ["best", "gof", "mu_nu_profile", "mu_nu_cls", "region"]
    assert not any("reused" in ln for ln in runs[0][1])
    assert sum("reused from the cache" in ln for ln in runs[1][1]) == 5  # five answers (and the fit, silently)
    path.write_text(path.read_text().replace("num = 51", "num = 26"))
    said = []
    third = run_spec_answers(path, tmp_path / "third", said)
    assert sum("reused from the cache" in ln for ln in said) == 4
    assert len(third["mu_nu_profile"]["values"]) == 26
    assert {k: v for k, v in third.items() if k != "mu_nu_profile"} == \
        {k: v for k, v in runs[0][0].items() if k != "mu_nu_profile"}


def run_spec_answers(path, out, said):
    from nuejax.analyses.spec import run_spec

    return json.loads(json.dumps(run_spec(path, out, progress=said.append)["questions"]))


def test_clearing_only_the_stored_results_keeps_the_other_entries(stage_cache, capsys):
    """nuejax cache --clear --results removes the stages' entries and the runs' records alone."""
    from nuejax.cache import store_entry
    from nuejax.cli import main

    with reuse.stages_of_run("cmd", {}):
        reuse.reused("cmd", "a", {"n": 1}, StageClock(), lambda say: 1.0)
    store_entry("signal", "kept", {"n": 1}, {"x": np.zeros(2)})
    assert sorted(p.name.split("-")[0] for p in stage_cache.glob("*.npz")) == ["signal", "stage", "stages"]
    assert main(["cache", "--results"]) == 2 and "--results only goes with --clear" in capsys.readouterr().err
    assert main(["cache", "--clear", "--results"]) == 0
    assert "removed 2 stored stage results" in capsys.readouterr().out
    assert [p.name.split("-")[0] for p in stage_cache.glob("*.npz")] == ["signal"]
