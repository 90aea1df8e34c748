"""Tests run in float64: opt in explicitly, as users must (see nuejax.precision).

Shared, session-scoped models: building one costs ~15-20 s on 2 cores uncached (mostly compiling its
spectra and kernels, once per recoil binning: both share n_T = 200), so test modules derive what
they need (released parameters, fast path, exposure) from these instead of rebuilding.
"""
import atexit
import os
import shutil
import tempfile

import nuejax

nuejax.enable_x64()

# The on-disk cache of model tensors (nuejax.cache) goes to a temporary folder of this test run,
# never the user's ~/.cache: the first pytest process creates it and removes it at exit, and
# pytest-xdist workers (and the commands tests run in subprocesses) inherit it through the
# environment, so the run's processes share one cache. tests/test_cache.py points each of its
# tests at a folder of its own.
if "NUEJAX_TEST_CACHE_DIR" not in os.environ:
    os.environ["NUEJAX_TEST_CACHE_DIR"] = tempfile.mkdtemp(prefix="nuejax-test-cache-")
    atexit.register(shutil.rmtree, os.environ["NUEJAX_TEST_CACHE_DIR"], ignore_errors=True)
os.environ["NUEJAX_CACHE_DIR"] = os.environ["NUEJAX_TEST_CACHE_DIR"]
# The commands' stages are computed, never reused from an earlier run (nuejax.analyses.reuse): a
# test that runs a command twice compares two computations. tests/test_reuse.py switches it on.
os.environ["NUEJAX_REUSE"] = "0"
# JAX's persistent compilation cache in the same folder (xla/), as the commands have it: the run's
# processes (workers, the slow job's parts, commands in subprocesses) compile each program once
from nuejax.cache import enable_compilation_cache  # noqa: E402

enable_compilation_cache()

import pytest  # noqa: E402


def pytest_configure(config):
    # pytest-xdist >= 3.6 hands out --dist loadscope's modules by their number of tests, most
    # first, unless told not to: then the order below is lost (2026-12-01: test_multidevice, one
    # test of 63 s, started at 261 s and one worker idled its last 50 s)
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    """Modules longest first (tests/module_seconds.py, the default suite's or the slow job's
    column): pytest-xdist (--dist loadscope) hands modules out in collection order, so a long
    module collected last ran alone at the end while the other worker idled. A module's tests keep
    their order."""
    from module_seconds import seconds

    job = "slow" if config.getoption("markexpr") == "slow" else "default"
    items.sort(key=lambda item: -seconds(item.path.name, job))  # stable


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs(request):
    """In the slow job (``-m slow``), after each test module, drop JAX's compiled programs (the
    next module recompiles what it uses): its pytest workers run for most of an hour, and XLA:CPU
    crashed while compiling in such long-lived workers (2026-11-26, cause unknown;
    benchmarks/NOTES.md)."""
    yield
    if request.config.getoption("markexpr") != "slow":
        return
    import gc

    import jax

    jax.clear_caches()
    gc.collect()


SIGNALS = ("pp", "pep", "7Be_862", "7Be_384", "13N")
BKG = ("210Bi", "85Kr", "11C", "210Po")


@pytest.fixture(scope="session")
def small_model():
    """5 reweighted spectra on 200 recoil bins, 4 backgrounds, the default 861 N_p bins."""
    from nuejax.model import borexino_like_model

    return borexino_like_model(n_T=200, signals=SIGNALS, backgrounds=BKG)


@pytest.fixture(scope="session")
def full_model():
    """The default model (9 spectra, 8 backgrounds) on the same 200-bin recoil grid
    (its kernels compile once for both)."""
    from nuejax.model import borexino_like_model

    return borexino_like_model(n_T=200)
