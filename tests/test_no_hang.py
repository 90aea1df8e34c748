"""The XLA:CPU hang (docs/inference.md, "Known issue") cannot occur in nuejax's programs.

benchmarks/repro/xla_cpu_hang_repro.py hangs XLA:CPU with a vmapped while loop whose body runs a
batched eigh and, *independently*, a batched Cholesky factorisation; with the Cholesky depending
on the eigh it finishes at any size. The bound-constrained solver's loop body holds two eighs and
a Cholesky, each computed from the one before. These tests read every optimised program that a
small workload compiles (the fits, a profile scan, a Feldman–Cousins construction:
benchmarks/repro/lapack_order_workload.py, run with XLA's HLO dump) and require that in every
computation the LAPACK calls, and the loops and calls that hold them, are ordered by data
dependence. The check is shown to fail on the reproducer's program."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_HEAD = re.compile(r"^(?:ENTRY )?%?([\w.\-]+) (?:\(.*\) -> .*)?\{$")
_INST = re.compile(r"^\s+(?:ROOT )?%?([\w.\-]+) = (.*)$")
_LAPACK = re.compile(r'custom_call_target="lapack_[^"]+"')
_CALLED = re.compile(r"(?:calls|to_apply|body|condition|branch_computations)=\{?(%?[\w.\-]+(?:, *%?[\w.\-]+)*)\}?")


def _computations(text: str) -> dict:
    """{computation: {instruction: (operands, called computations, is a LAPACK call)}} of an HLO
    module's text."""
    comps, cur = {}, None
    for line in text.splitlines():
        head = _HEAD.match(line)
        if head and not line.startswith(" "):
            cur = comps.setdefault(head.group(1), {})
            continue
        inst = _INST.match(line)
        if inst and cur is not None:
            name, rest = inst.groups()
            operands = re.findall(r"%([\w.\-]+)", re.split(r", (?:calls|to_apply|body|condition|branch_computations)=", rest)[0])
            called = [c.strip().lstrip("%") for m in _CALLED.finditer(rest) for c in m.group(1).split(",")]
            cur[name] = (operands, called, bool(_LAPACK.search(rest)))
    return comps


def unordered_lapack_pairs(text: str) -> list:
    """Pairs of instructions of one computation that each run LAPACK (a call, or a loop, call or
    fusion whose computations do) and neither of which depends on the other."""
    comps = _computations(text)
    holds = {}

    def runs_lapack(c):
        if c not in holds:
            holds[c] = False  # recursion guard
            holds[c] = any(lap or any(runs_lapack(x) for x in called if x in comps) for _, called, lap in comps[c].values())
        return holds[c]

    bad = []
    for cname, insts in comps.items():
        hot = [n for n, (_, called, lap) in insts.items() if lap or any(runs_lapack(x) for x in called if x in comps)]
        ancestors = {}

        def above(n):
            if n not in ancestors:
                seen, stack = set(), list(insts[n][0])
                while stack:
                    o = stack.pop()
                    if o in insts and o not in seen:
                        seen.add(o)
                        stack.extend(insts[o][0])
                ancestors[n] = seen
            return ancestors[n]

        bad += [(cname, a, b) for i, a in enumerate(hot) for b in hot[i + 1:] if a not in above(b) and b not in above(a)]
    return bad


def _dump(script: Path, args: list, folder: Path, timeout: int) -> list:
    # every program compiled here, none loaded from a persistent cache (a loaded one is not dumped)
    env = dict(os.environ, JAX_PLATFORMS="cpu", NUEJAX_COMPILATION_CACHE="0", JAX_ENABLE_COMPILATION_CACHE="false",
               XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={folder} --xla_dump_hlo_as_text".strip())
    out = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    return [p.read_text() for p in sorted(folder.glob("*after_optimizations.txt"))]


def test_the_check_finds_the_reproducers_independent_calls(tmp_path):
    # 20 rows of 4 x 4: far below the sizes that hang, the same program structure
    texts = _dump(ROOT / "benchmarks" / "repro" / "xla_cpu_hang_repro.py", ["20", "4"], tmp_path, 120)
    bad = [b for t in texts if "lapack" in t for b in unordered_lapack_pairs(t)]
    assert bad and {("eigh" in a or "eigh" in b) and ("cholesky" in a or "cholesky" in b) for _, a, b in bad} == {True}


@pytest.mark.slow
def test_every_program_of_fits_scans_and_constructions_orders_its_lapack_calls(tmp_path):
    texts = _dump(ROOT / "benchmarks" / "repro" / "lapack_order_workload.py", [], tmp_path, 420)
    with_lapack = [t for t in texts if "lapack" in t]
    solvers = [t for t in with_lapack if len(_LAPACK.findall(t)) >= 3]  # the solver: two eighs, a Cholesky
    assert len(solvers) >= 3, f"{len(solvers)} solver programs among {len(texts)} compiled"
    bad = {i: unordered_lapack_pairs(t) for i, t in enumerate(with_lapack)}
    assert not any(bad.values()), {i: b[:3] for i, b in bad.items() if b}


@pytest.mark.slow
def test_the_batch_that_hung_xla_cpu_finishes_in_one_launch(tmp_path):
    """The 1000 toys that never returned from one XLA:CPU launch (3 tries of 3, 2026-11-23, the
    solver of then) now finish in one launch. A subprocess, so that a hang is a failure."""
    import json

    out_json = tmp_path / "toys.json"
    script = ROOT / "benchmarks" / "timings" / "batch_fit_toys.py"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    try:
        out = subprocess.run([sys.executable, str(script), "--n-toys", "1000", "--n-T", "300", "--chunk", "1000",
                              "--json", str(out_json)], env=env, capture_output=True, text=True, timeout=500)
    except subprocess.TimeoutExpired:
        pytest.fail("batch_fit of 1000 toys in one launch did not return within 500 s")
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out_json.read_text())["converged"] == 1000
