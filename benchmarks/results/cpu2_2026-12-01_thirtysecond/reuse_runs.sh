#!/bin/bash
# Stage reuse on 2 CPU cores (nuejax.analyses.reuse): for `nuejax combine`, `nuejax xenonnt` and
# `nuejax borexino` in turn, each on an empty cache folder of its own: a first run (every stage
# computed and stored), two runs that reuse every stage, and one warm run with --recompute (every
# stage computed again from warm caches). Run from a checkout's root:
#     bash benchmarks/results/cpu2_2026-12-01_thirtysecond/reuse_runs.sh OUTDIR
set -u
out=$1; mkdir -p "$out"
r() { # command label [options...]
  local cmd=$1 label=$2 t0; shift 2
  t0=$(date +%s.%N)
  NUEJAX_CACHE_DIR=/tmp/c32_$cmd python -m nuejax "$cmd" --json --no-plots --out "/tmp/o32_${cmd}_$label" "$@" \
    > "$out/${cmd}_$label.json" 2> "$out/${cmd}_$label.err"
  echo "$cmd $label rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" | tee -a "$out/walls.txt"
}
for cmd in combine xenonnt borexino; do
  rm -rf "/tmp/c32_$cmd"
  r "$cmd" first; r "$cmd" reuse1; r "$cmd" reuse2; r "$cmd" recompute --recompute
done
