#!/bin/bash
# Device call of the thirty-second session (one H200), from the repository root with the wheels in
# .whl/:
#     OUT=... bash benchmarks/results/h200_2026-12-01_thirtysecond/session.sh reuse
# reuse: for `nuejax combine`, `nuejax xenonnt` and `nuejax borexino` in turn, each on an empty
#   cache folder of its own: a first run (every stage computed and stored), two runs that reuse
#   every stage (nuejax.analyses.reuse), then two warm runs with --recompute (every stage computed
#   again from warm caches: the numbers earlier sessions measured as "warm"); compile logs
#   (timings/compile_log.py), outputs and summaries. Returned as one tar archive.
# partial: the final code: `nuejax xenonnt` on an empty folder, reused, then with --seed 1 (the toys
#   computed, the other stages reused), again (all reused) and with --recompute (every stage, its
#   programs loaded ahead from the index the partly reused run added to); `nuejax run
#   borexino_phase3_nsi` (a shipped specification) first, reused and with --recompute.
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
rs() { # label limit [options...]: nuejax run on a shipped specification
  local label=$1 limit=$2 t0; shift 2
  t0=$(date +%s.%N)
  NUEJAX_CACHE_DIR=/tmp/c_spec timeout "$limit" python -m nuejax run borexino_phase3_nsi --json --out "/tmp/o_spec_$label" "$@" \
    > "$dir/spec_$label.json" 2> "$dir/spec_$label.err"
  echo "spec $label rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" >> "$dir/walls.txt"
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
    partial)  # the final code: xenonnt reused in part (another seed) and the index it leaves; a spec
      rm -rf /tmp/c_xenonnt /tmp/c_spec
      r xenonnt first 220; r xenonnt reuse 60
      r xenonnt seed1 90 --seed 1; r xenonnt seed1_reuse 60 --seed 1; r xenonnt seed1_recompute 90 --seed 1 --recompute
      rs first 200; rs reuse 60; rs recompute 90 --recompute ;;
    trace)  # combine's first run with every solver program's full nuejax call chain (compile_log --depth 30)
      rm -rf /tmp/c_trace; t0=$(date +%s.%N)
      NUEJAX_CACHE_DIR=/tmp/c_trace timeout 220 python benchmarks/timings/compile_log.py --out "$dir/trace_first.json" \
        --top 10 --depth 30 -- combine --json --no-plots --out /tmp/o_trace > "$dir/trace_first.txt" 2>&1
      echo "trace first rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" >> "$dir/walls.txt"
      pack ;;
    firstab)  # combine's first run, this checkout (warm-ups per mediator model; the combination's
      # asymptotic CLs from one start) against .ab_before/nuejax (the code before), each on an
      # empty folder, after first; then one warm run each (--recompute), before first
      f() { # side label limit [options]
        local side=$1 label=$2 limit=$3 pre=() t0; shift 3; [ "$side" = before ] && pre=(env PYTHONPATH=$PWD/.ab_before:$PYTHONPATH)
        t0=$(date +%s.%N)
        NUEJAX_CACHE_DIR=/tmp/c_ab_$side timeout "$limit" "${pre[@]}" python benchmarks/timings/compile_log.py \
          --out "$dir/ab_$label.json" --top 10 --depth 30 -- combine --json --no-plots --out "/tmp/o_ab_$label" "$@" \
          > "$dir/ab_$label.txt" 2>&1
        echo "ab $label rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" >> "$dir/walls.txt"
        cp "/tmp/o_ab_$label/summary.json" "$dir/ab_${label}_summary.json" 2>/dev/null
        pack
      }
      rm -rf /tmp/c_ab_before /tmp/c_ab_after
      f after after_first 220; f before before_first 220
      f before before_warm 60 --recompute; f after after_warm 60 --recompute ;;
    spec)  # the specification part of partial alone (jsonschema and its dependencies among the wheels)
      pip install -q --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
      rm -rf /tmp/c_spec; rs first 200; rs reuse 60; rs recompute 90 --recompute ;;
  esac
done
pack
