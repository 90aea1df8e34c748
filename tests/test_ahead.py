"""Compiling ahead (nuejax._internal.ahead): a warm-up in a background thread saves compilation
time and never changes a number; its switch and its errors."""
import jax
import numpy as np
import pytest

from nuejax._internal import ahead as ahead_module
from nuejax._internal.ahead import ahead, wait
from nuejax.errors import InputError
from nuejax.model import borexino_like


def test_the_switch_and_a_failing_warm_up(monkeypatch):
    ran = []
    monkeypatch.setenv("NUEJAX_AHEAD", "0")
    assert ahead(ran.append, 1) is None
    monkeypatch.setenv("NUEJAX_AHEAD", "sometimes")
    with pytest.raises(InputError, match="NUEJAX_AHEAD"):
        ahead(ran.append, 1)
    monkeypatch.setenv("NUEJAX_AHEAD", "1")
    monkeypatch.setattr(ahead_module, "spare_cores", lambda: 0)  # a single core: nothing to run it on
    assert ahead(ran.append, 1) is None
    monkeypatch.setattr(ahead_module, "spare_cores", lambda: 1)

    def broken():
        raise ValueError("a warm-up's error is the caller's to raise")

    wait(ahead(broken))  # swallowed
    wait(ahead(ran.append, 2))
    wait(None)
    assert ran == [2]


def test_the_callers_thread_settings_are_carried_over(monkeypatch):
    """64-bit mode and the default device set by a ``with`` block hold for the caller's thread
    only; the warm-up runs under the caller's (a model build under ``on_host``)."""
    monkeypatch.setenv("NUEJAX_AHEAD", "1")
    monkeypatch.setattr(ahead_module, "spare_cores", lambda: 1)
    seen = []
    record = lambda: seen.append((jax.config.jax_enable_x64, jax.config.jax_default_device))  # noqa: E731
    cpu = jax.devices("cpu")[0]
    x64 = bool(jax.config.jax_enable_x64)
    with jax.enable_x64(not x64), jax.default_device(cpu):
        wait(ahead(record))
    wait(ahead(record))
    assert seen == [(not x64, cpu), (x64, None)]


def _build(folder, monkeypatch, started):
    monkeypatch.setenv("NUEJAX_CACHE_DIR", str(folder))
    monkeypatch.setenv("NUEJAX_CACHE", "1")
    monkeypatch.setattr(borexino_like, "_WARMED", set())  # as in a new process
    return borexino_like.borexino_like_model(n_T=40, signals=("pp", "pep", "7Be_862"), backgrounds=("85Kr",))


@pytest.mark.slow
def test_a_model_built_with_the_warm_up_equals_one_built_without(monkeypatch, tmp_path):
    """The default model's signals start with a continuum (pp) and then a line (pep): with a core
    to spare, pep is built in the background beside pp (nothing stored), then again in turn; the
    model equals the one built without the warm-up, bit for bit, and a build that finds its
    signals in the cache starts no warm-up."""
    started = []
    real = borexino_like.ahead

    def record(fn, **kwargs):
        started.append(kwargs["label"])
        return real(fn, **kwargs)

    monkeypatch.setattr(borexino_like, "ahead", record)
    monkeypatch.setattr(ahead_module, "spare_cores", lambda: 1)
    a = _build(tmp_path / "with", monkeypatch, started)
    assert started == ["pep"]
    # the warm-up stored nothing: one entry per signal
    assert sorted(p.name.split("-")[1] for p in (tmp_path / "with").glob("signal-*.npz")) == ["7Be_862", "pep", "pp"]
    _build(tmp_path / "with", monkeypatch, started)  # every signal cached: no warm-up
    assert started == ["pep"]
    monkeypatch.setenv("NUEJAX_AHEAD", "0")
    b = _build(tmp_path / "without", monkeypatch, started)
    # the signal components are static metadata of the model (compared by identity): their
    # arrays (kernels, sources, cross-section coefficients) are compared apart
    for x, y in ((a, b),) + tuple(zip(a.stages[0].signals, b.stages[0].signals)):
        leaves_x, tree_x = jax.tree_util.tree_flatten(x)
        leaves_y, tree_y = jax.tree_util.tree_flatten(y)
        assert str(tree_x) == str(tree_y) and len(leaves_x) == len(leaves_y)
        for u, v in zip(leaves_x, leaves_y):
            np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def test_work_beside_returns_its_result_and_raises_its_error(monkeypatch):
    from nuejax._internal.ahead import beside

    monkeypatch.setenv("NUEJAX_AHEAD", "1")
    monkeypatch.setattr(ahead_module, "spare_cores", lambda: 2)
    assert beside(lambda a, b=0: a + b, 1, b=2, min_spare=3) is None  # too few cores: the caller runs it
    assert beside(lambda a, b=0: a + b, 1, b=2, min_spare=2).result() == 3
    x64 = bool(jax.config.jax_enable_x64)
    with jax.enable_x64(not x64):
        assert beside(lambda: bool(jax.config.jax_enable_x64), min_spare=1).result() is (not x64)

    def broken():
        raise ValueError("the stage's own error")

    with pytest.raises(ValueError, match="the stage's own error"):
        beside(broken).result()
    monkeypatch.setenv("NUEJAX_AHEAD", "0")
    assert beside(lambda: 1) is None


@pytest.mark.slow
def test_stages_run_beside_give_the_same_numbers_and_lines_in_order(monkeypatch):
    """nuejax borexino runs its magnetic-moment and NSI stages beside the others where cores are
    to spare: a fit and a profile scan run in another thread equal those run in turn, bit for bit,
    and their progress lines come out in the stages' order, with each stage's own start time."""
    from nuejax._internal.ahead import beside
    from nuejax.analyses._clock import StageClock
    from nuejax.inference import newton_fit, profile_scan

    monkeypatch.setenv("NUEJAX_AHEAD", "1")
    monkeypatch.setattr(ahead_module, "spare_cores", lambda: 4)
    m = borexino_like.borexino_like_model(n_T=30, signals=("pp",), backgrounds=("85Kr",))
    m = m.with_parameters(m.parameters.release("mu_nu"))
    data = np.round(np.asarray(m.expected(m.parameters.values(mu_nu=2.0))))

    def stage(say, name):
        say(f"[{name}] {name}")
        r = newton_fit(m, data, starts=1)
        s = profile_scan(m, data, "mu_nu", np.linspace(0.0, 4.0, 3), global_fit=r, starts=1)
        say(f"      {name} done")
        return r.fval, np.array([r.values[n] for n in r.names]), np.asarray(s.nll)

    own = stage(lambda msg: None, "main")  # in turn first: the threads then find its programs compiled
    lines = []
    clock = StageClock(lines.append)
    clock("[1/3] first")
    branches = [clock.branch(), clock.branch()]
    futures = [beside(stage, branches[0], "2/3", min_spare=3), beside(stage, branches[1], "3/3", min_spare=3)]
    for b, f in zip(branches, futures):
        got = f.result()
        assert got[0] == own[0]
        np.testing.assert_array_equal(got[1], own[1])
        np.testing.assert_array_equal(got[2], own[2])
        clock.replay(b)
    assert lines == ["[1/3] first", "[2/3] 2/3", "      2/3 done", "[3/3] 3/3", "      3/3 done"]
    # every line with the time it was said, a stage's beside with its own: the summary's progress_seconds
    assert [m for _, m in clock.lines] == lines
    assert clock.lines[1][0] == clock.starts["2/3"] and clock.lines[3][0] == clock.starts["3/3"]
    assert [t for t, _ in clock.timed_lines()] == [t for t, _ in clock.lines]
    assert set(clock.starts) == {"1/3", "2/3", "3/3"}
    assert clock.starts["2/3"] <= clock.elapsed() and clock.starts["3/3"] <= clock.elapsed()


def test_each_beside_keeps_the_items_order_and_raises_after_all_ended(monkeypatch):
    """nuejax combine fits its three models beside each other inside a stage (each_beside): the
    results and the lines come in the items' order whichever call ends first; a call's error is
    raised once every call has ended and every line is said; where nothing may run beside, every
    call runs in the caller's thread and says its lines as they come; a stage run beside splits
    its own work the same way (a branch of a branch), also with a single thread beside (the calls
    no thread took run in the waiting one, instead of waiting for it)."""
    import threading

    from nuejax.analyses._clock import StageClock, each_beside

    monkeypatch.setenv("NUEJAX_AHEAD", "1")
    monkeypatch.setattr(ahead_module, "spare_cores", lambda: 4)
    monkeypatch.setattr(ahead_module, "_POOLS", {})  # pools made for this test
    threads, ended = {}, []
    done = {k: threading.Event() for k in "abcxy"}

    def fn(key, after, say):  # ends only once the calls ``after`` have ended
        say(f"{key} starts")
        for k in after:
            assert done[k].wait(20), f"{key} waited for {k}"
        threads[key] = threading.get_ident()
        ended.append(key)
        say(f"{key} ends")
        done[key].set()
        return key * 2

    lines = []
    clock = StageClock(lines.append)
    out = each_beside(clock, fn, {"a": "bc", "b": "c", "c": ""}, min_spare=3)
    assert list(out.items()) == [("a", "aa"), ("b", "bb"), ("c", "cc")] and ended == ["c", "b", "a"]
    assert len({threads["a"], threads["b"], threads["c"]}) == 3  # b and c beside, each in its own thread
    assert lines == ["a starts", "a ends", "b starts", "b ends", "c starts", "c ends"]

    branch = clock.branch()  # a stage run beside, whose lines the clock says later
    assert list(each_beside(branch, fn, {"x": "y", "y": ""}, min_spare=3)) == ["x", "y"]
    assert [m for _, m in branch.lines] == ["x starts", "x ends", "y starts", "y ends"]

    def broken(key, after, say):
        say(f"{key} starts")
        if key in ("a", "b"):
            raise ValueError(f"model {key}'s own error")
        return fn(key, after, say)

    for k in "abc":
        done[k].clear()
    ended.clear()
    lines.clear()
    with pytest.raises(ValueError, match="model a's own error"):  # the first in the items' order
        each_beside(clock, broken, {"a": "", "b": "", "c": ""}, min_spare=3)
    assert ended == ["c"] and lines == ["a starts", "b starts", "c starts", "c starts", "c ends"]

    lines.clear()
    heard = []  # in turn: each line reaches the callback while the next call has not started

    def live(key, after, say):
        heard.append((key, list(lines)))
        return fn(key, "", say)

    assert list(each_beside(clock, live, {"a": "", "b": ""}, min_spare=3, allowed=False)) == ["a", "b"]
    assert heard[1] == ("b", ["a starts", "a ends"]) and threads["a"] == threads["b"] == threading.get_ident()
    monkeypatch.setattr(ahead_module, "spare_cores", lambda: 2)  # too few cores: in turn too
    assert list(each_beside(clock, fn, {"a": "", "b": ""}, min_spare=3)) == ["a", "b"]
    assert threads["b"] == threading.get_ident()

    # one thread beside, taken by a stage that splits its work: the calls run in the stage's thread
    monkeypatch.setattr(ahead_module, "spare_cores", lambda: 4)
    monkeypatch.setattr(ahead_module, "_POOLS", {})
    monkeypatch.setattr(ahead_module, "BESIDE_WORKERS", 1)
    from nuejax._internal.ahead import beside

    stage = beside(lambda: (threading.get_ident(), each_beside(clock.branch(), lambda k, v, say: (k, threading.get_ident()),
                                                                {"p": 0, "q": 0, "r": 0}, min_spare=3)), min_spare=3)
    own, got = stage.result(timeout=30)
    assert got == {"p": ("p", own), "q": ("q", own), "r": ("r", own)}

    # ``first``: that call starts at once in the caller's thread (the longest: the combination's
    # fits), the others where a thread is free; results and lines keep the items' order
    monkeypatch.setattr(ahead_module, "_POOLS", {})
    started = []

    def record(key, value, say):
        started.append(key)
        say(f"{key} says")
        return key, threading.get_ident()

    branch = clock.branch()
    stage_of = beside(lambda: (threading.get_ident(), each_beside(branch, record, {"p": 0, "q": 0, "r": 0},
                                                                  min_spare=3, first="r")), min_spare=3)
    own, got = stage_of.result(timeout=30)
    assert list(got) == ["p", "q", "r"] and got["r"] == ("r", own) and started[0] == "r"
    assert [m for _, m in branch.lines] == ["p says", "q says", "r says"]
    lines.clear()
    assert list(each_beside(clock, record, {"p": 0, "q": 0}, min_spare=3, allowed=False, first="q")) == ["p", "q"]
    assert lines == ["p says", "q says"]  # in turn: the items' order
    with pytest.raises(KeyError, match="first='x' is not one of the items"):  # a typo is not ignored
        each_beside(clock, record, {"p": 0, "q": 0}, min_spare=3, first="x")


def test_a_solver_program_warmed_up_beside_is_the_one_fits_and_scans_run(monkeypatch):
    """fitting.prepare_solver in a warm-up thread (ahead.warm_ups) compiles the solver program of
    a problem's fits and scans: the fit and the profile scan that follow compile none of their
    own (on the CPU, where this model's rows are costly: one launch size)."""
    import logging
    import threading

    from nuejax.inference import newton_fit, profile_scan
    from nuejax.inference.fitting import prepare_solver
    from nuejax.inference.problem import FitProblem
    from nuejax.model import fast_model

    monkeypatch.setenv("NUEJAX_AHEAD", "1")
    monkeypatch.setattr(ahead_module, "spare_cores", lambda: 2)
    # a model of this test alone: no other test's program in the process
    m = fast_model(borexino_like.borexino_like_model(n_T=60, window=(150, 900), signals=("pp", "pep", "7Be_862"),
                                                     backgrounds=("210Bi", "85Kr", "11C")))
    m = m.with_parameters(m.parameters.release("mu_nu"))
    data = np.asarray(m.expected(m.parameters.values()))
    seen = []

    class Compiles(logging.Handler):
        def emit(self, record):
            if "Finished XLA compilation of jit(call)" in record.getMessage():  # the solver's program
                seen.append(threading.current_thread().name)

    handler, log, before = Compiles(), logging.getLogger("jax"), jax.config.jax_log_compiles
    log.addHandler(handler)
    jax.config.update("jax_log_compiles", True)
    try:
        futures = ahead_module.warm_ups([(prepare_solver, (FitProblem.create(m, data),))])
        assert len(futures) == 1
        for f in futures:
            wait(f)
        assert len(seen) == 1 and seen[0].startswith("nuejax-warm-ups"), seen
        r = newton_fit(m, data, starts=1)
        s = profile_scan(m, data, "mu_nu", np.linspace(0.0, 3.0, 5), global_fit=r, starts=1)
    finally:
        jax.config.update("jax_log_compiles", before)
        log.removeHandler(handler)
    assert len(seen) == 1, seen
    assert r.valid and np.all(s.converged)
