#!/bin/bash
# Device calls of the twenty-sixth session (one H200, 16 cores), from the repository root with the
# wheels in .whl/ and bfd2c80's nuejax/ in .ab_before/ (`git archive bfd2c80 nuejax | tar -x -C
# .ab_before`):   OUT=... bash benchmarks/results/h200_2026-12-01_twentysixth/session.sh WHAT
# WHAT:
#   xenonnt  (and borexino) `nuejax xenonnt` (`nuejax borexino`) before the solver change (bfd2c80, first on PYTHONPATH) and after it
#            (this checkout), alternated on one machine: first runs on empty cache folders, then two
#            warm runs each, with compile logs (timings/compile_log.py)
#   combine  the same for `nuejax combine`, then one warm run of each with its stages in turn
#            (combine_run.BESIDE_MIN_SPARE set past the machine's cores) to time each stage alone
#   tp       toy fits/s of the Borexino-like mu_nu construction (timings/toy_throughput.py
#            --no-belts --rows 65536), before and after, alternated twice, shared caches
#   migrad   the paper workload's 25-parameter MIGRAD fit (timings/migrad_profile.py), after: with
#            the library's multi-start design (first call), then MIGRAD alone (--starts 1)
#   med      `nuejax combine`'s mediator stage warm, under cProfile (probes/combine_mediators_profile.py)
# Everything is written to /tmp/s26 and returned as one tar archive per call.
set -u
export PYTHONPATH=/tmp/site:$PWD
[ -d .whl ] && { ls /tmp/site/iminuit >/dev/null 2>&1 || pip install -q --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; }
dir=/tmp/s26; mkdir -p "$dir"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores $(nproc)";
  python -c "import jax; print(jax.default_backend(), jax.__version__)"; date -u; git log --oneline -1; } > "$dir/info.txt"
before() { PYTHONPATH=$PWD/.ab_before:$PYTHONPATH "$@"; }
log() { # label cache limit [--set ...]
  local label=$1 cache=$2 limit=$3 t0 t1; shift 3
  t0=$(date +%s.%N)
  NUEJAX_CACHE_DIR=$cache timeout "$limit" python benchmarks/timings/compile_log.py --out "$dir/$label.json" --top 30 "$@" \
    -- ${CMD:-xenonnt} --json --no-plots --out "/tmp/o_$label" > "$dir/$label.txt" 2>&1
  local rc=$?; t1=$(date +%s.%N)
  echo "$label rc=$rc wall=$(python -c "print(round($t1-$t0,2))")" | tee -a "$dir/walls.txt"
  cp "/tmp/o_$label/summary.json" "$dir/${label}_summary.json" 2>/dev/null
  tar czf "$OUT/s26_$WHAT.tgz" -C "$dir" .
}
WHAT=$1
case $1 in
  xenonnt|combine|borexino)
    export CMD=$1
    lim=$([ "$1" = combine ] && echo 200 || echo 120)
    rm -rf /tmp/c_a_$1 /tmp/c_b_$1
    before log ${1}_before_first /tmp/c_a_$1 $lim
    log ${1}_after_first /tmp/c_b_$1 $lim
    for i in 1 2; do
      before log ${1}_before_warm$i /tmp/c_a_$1 100
      log ${1}_after_warm$i /tmp/c_b_$1 100
    done
    if [ "$1" = combine ]; then
      before log combine_before_turn /tmp/c_a_$1 100 --set nuejax.analyses.combine_run.BESIDE_MIN_SPARE=999
      log combine_after_turn /tmp/c_b_$1 100 --set nuejax.analyses.combine_run.BESIDE_MIN_SPARE=999
    fi ;;
  tp)
    for i in 1 2; do
      for side in before after; do
        pre=$([ $side = before ] && echo before || echo)
        NUEJAX_CACHE_DIR=/tmp/c_tp_$side $pre timeout 120 python benchmarks/timings/toy_throughput.py --no-belts --rows 65536 \
          --compilation-cache /tmp/c_tp_$side/jax --json "$dir/tp_${side}_$i.json" > "$dir/tp_${side}_$i.txt" 2>&1 \
          || echo "tp $side $i rc=$?" >> "$dir/walls.txt"
        python -c "import json; d=json.load(open('$dir/tp_${side}_$i.json')); print('tp $side $i', d['compile_s'], d['seconds'], d['toy_fits_per_s'])" >> "$dir/walls.txt" 2>&1
        tar czf "$OUT/s26_tp.tgz" -C "$dir" .
      done
    done ;;
  migrad)
    if [ "${2:-}" = one ]; then
      timeout 200 python benchmarks/timings/migrad_profile.py --repeat 5 --starts 1 --out "$dir/migrad_one.json" \
        > "$dir/migrad_one.txt" 2>&1
      echo "migrad starts=1 rc=$?" >> "$dir/walls.txt"
    else
      timeout 200 python benchmarks/timings/migrad_profile.py --repeat 5 --out "$dir/migrad.json" > "$dir/migrad.txt" 2>&1
      echo "migrad rc=$?" >> "$dir/walls.txt"
    fi ;;
  med)
    NUEJAX_CACHE_DIR=/tmp/c_med timeout 400 python benchmarks/probes/combine_mediators_profile.py --top 60 \
      --out "$dir/med_profile.json" > "$dir/med_profile.txt" 2>&1
    echo "med rc=$?" >> "$dir/walls.txt" ;;
esac
tar czf "$OUT/s26_$WHAT.tgz" -C "$dir" .
