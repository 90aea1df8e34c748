#!/bin/bash
# Device call of the thirty-second session (one H200), from the repository root with the wheels in
# .whl/:
#     OUT=... bash benchmarks/results/h200_2026-12-01_thirtysecond/session.sh reuse
# reuse: for `nuejax combine`, `nuejax xenonnt` and `nuejax borexino` in turn, each on an empty
#   cache folder of its own: a first run (every stage computed and stored), two runs that reuse
#   every stage (nuejax.analyses.reuse), then two warm runs with --recompute (every stage computed
#   again from warm caches: the numbers earlier sessions measured as "warm"); compile logs
#   (timings/compile_log.py), outputs and summaries. Returned as one tar archive.
set -u
dir=/tmp/s32; mkdir -p "$dir"
pack() { tar czf "$OUT/s32.tgz" -C "$dir" .; }
export PYTHONPATH=/tmp/site:$PWD
[ -d .whl ] && { ls /tmp/site/iminuit >/dev/null 2>&1 || pip install -q --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores $(nproc)";
  python -c "import jax; print(jax.default_backend(), jax.__version__)"; date -u; } > "$dir/info.txt"
r() { # command label limit [options...]
  local cmd=$1 label=$2 limit=$3 t0; shift 3
  t0=$(date +%s.%N)
  NUEJAX_CACHE_DIR=/tmp/c_$cmd timeout "$limit" python benchmarks/timings/compile_log.py --out "$dir/${cmd}_$label.json" \
    --top 10 -- "$cmd" --json --no-plots --out "/tmp/o_${cmd}_$label" "$@" > "$dir/${cmd}_$label.txt" 2>&1
  echo "$cmd $label rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" >> "$dir/walls.txt"
  cp "/tmp/o_${cmd}_$label/summary.json" "$dir/${cmd}_${label}_summary.json" 2>/dev/null
  pack
}
for what in "$@"; do
  case $what in
    reuse)
      for cmd in combine xenonnt borexino; do
        rm -rf "/tmp/c_$cmd"
        r "$cmd" first 220
        r "$cmd" reuse1 60; r "$cmd" reuse2 60
        r "$cmd" recompute1 90 --recompute; r "$cmd" recompute2 90 --recompute
      done ;;
  esac
done
pack
