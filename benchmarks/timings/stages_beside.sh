#!/bin/bash
# `nuejax CMD` with its independent stages beside each other (NUEJAX_AHEAD=1) and in turn
# (NUEJAX_AHEAD=0), as benchmarks/timings/borexino_beside.sh did for `nuejax borexino`: a first run
# on an empty cache folder each way, warm runs alternated on the first one's cache, each run under a
# time limit (a stall shows as rc=124), and every summary compared with the first in-turn run's
# (the same, or how many numbers differ and the three largest relative differences, or DIFFERS).
#
#   OUT=DIR bash benchmarks/timings/stages_beside.sh CMD [LIMIT_S] [EXTRA ARGS...]
#
# From the repository root (on the GPU machine: iminuit and uproot carried as wheels in .whl/).
# Tried on 2 CPU cores with `demo` (2026-11-30): first 63.1 s in turn, 58.4 s with its warm-ups,
# warm 9.1-10.3 s, the same summary every run.
# With JAX_PLATFORMS=cpu on a many-core host it runs the CPU path with threads: where
# `nuejax borexino` and `nuejax xenonnt` put stages beside each other on a CPU with 3 cores to spare,
# two programs run at once on one XLA:CPU device (docs/inference.md, "Several devices").
set -u
CMD=$1; LIMIT=${2:-600}; shift; shift || true
export PYTHONPATH=/tmp/site:$PWD
[ -d .whl ] && { ls /tmp/site/iminuit >/dev/null 2>&1 || pip install -q --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; echo "cores $(nproc)";
  python -c "import jax; print(jax.default_backend(), jax.__version__)"; } > "$OUT/info.txt"
run() { # label cache ahead [extra arguments of the command]
  local label=$1 cache=$2 ahead=$3 t0 t1 rc
  shift 3
  t0=$(date +%s.%N)
  NUEJAX_CACHE_DIR=$cache NUEJAX_AHEAD=$ahead timeout "$LIMIT" python -m nuejax "$CMD" --json --no-plots \
    --out "/tmp/o_$label" "$@" > "$OUT/$label.json" 2> "$OUT/$label.err"
  rc=$?
  t1=$(date +%s.%N)
  echo "$label rc=$rc wall=$(python -c "print(round($t1-$t0,2))")" | tee -a "$OUT/walls.txt"
  cp "/tmp/o_$label/summary.json" "$OUT/${label}_summary.json" 2>/dev/null
}
EXTRA=("$@")
rm -rf /tmp/sb_off /tmp/sb_on
run first_off /tmp/sb_off 0 "${EXTRA[@]}"
run first_on /tmp/sb_on 1 "${EXTRA[@]}"
run warm_off /tmp/sb_off 0 "${EXTRA[@]}"
run warm_on /tmp/sb_on 1 "${EXTRA[@]}"
run warm_off2 /tmp/sb_off 0 "${EXTRA[@]}"
run warm_on2 /tmp/sb_on 1 "${EXTRA[@]}"
python - "$OUT" <<'PY' | tee -a "$OUT/walls.txt"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
def timing(key):  # the summaries' timings (seconds, phase starts, the demo's ms per call) and the device
    return "seconds" in key or key.startswith("ms_per_call") or key == "device"
def load(label):
    f = out / f"{label}_summary.json"
    return {k: v for k, v in json.loads(f.read_text()).items() if not timing(k)} if f.exists() else None
def diffs(a, b, path=""):  # [(relative difference, path, a, b)] of the numbers that differ; None: the trees differ
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        parts = [diffs(a[k], b[k], f"{path}/{k}") for k in a]
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        parts = [diffs(x, y, f"{path}[{i}]") for i, (x, y) in enumerate(zip(a, b))]
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b)):
        return [] if a == b else [(abs(a - b) / max(abs(a), abs(b)), path, a, b)]
    else:
        return [] if a == b else None
    return None if any(p is None for p in parts) else [d for p in parts for d in p]
ref = load("first_off")
for label in ("first_on", "warm_off", "warm_on", "warm_off2", "warm_on2"):
    got = load(label)
    d = None if got is None or ref is None else diffs(ref, got)
    # a GPU's run-to-run rounding moves numbers (~1e-12 relative): the largest change of a number, and of one
    # that is zero in one run (a Delta chi2 at its minimum), where it is
    print(label, "summary missing" if got is None or ref is None else "same summary" if d == [] else
          "summary DIFFERS (not in numbers alone)" if d is None else
          f"summary: {len(d)} numbers differ; " + "; ".join(
              f"{what} {f(t):.2g} at {t[1]} ({t[2]!r} vs {t[3]!r})"
              for what, sub, f in (("largest relative difference", [t for t in d if t[2] and t[3]], lambda t: t[0]),
                                   ("largest against a zero", [t for t in d if not (t[2] and t[3])],
                                    lambda t: abs(t[2] - t[3])))
              for t in sorted(sub, key=f)[-1:]))
PY
