#!/bin/bash
# Device calls of the twenty-fifth session (one H200, 16 cores), from the repository root with the
# wheels in .whl/:   OUT=... bash benchmarks/results/h200_2026-11-30_twentyfifth/session.sh WHAT
# WHAT:
#   passes   `nuejax xenonnt`, first runs on empty cache folders and a warm run on each, its stages
#            beside each other as the command has them: with small toy runs in one uncapped pass
#            (toys.ONE_PASS_ROWS as committed) and with the accelerators' two passes for every run
#            (ONE_PASS_ROWS=0, the code before); each with its compile log
#            (timings/compile_log.py); then a probe of toy_fits at 1024-8192 rows in both passes (not
#            kept: each of its runs stopped at its 150 s limit, with no output)
#   skip     the same first and warm runs at ef254b3 (also no Asimov fits from a design that is its
#            generating point alone), then toy fits/s (timings/toy_throughput.py --no-belts) in the
#            passes of a large run and in one uncapped pass, at 16384, 65536 and 4096 rows
#   ab       on one machine, first runs on empty cache folders and two warm runs each, of the code
#            before this session (07f82d1's nuejax/, from `git archive`, first on PYTHONPATH) and of
#            ef254b3, alternated
#   divisor  toy fits/s (timings/toy_throughput.py --no-belts --rows 65536, the Borexino-like mu_nu
#            construction) with the continued launches of the capped passes at 1/8 of the rows (the
#            package), 1/16 and 1/32 (toys.PASSES edited with sed on the device's copy only), each in
#            a fresh process on shared caches, the package's first and last
#   two      on two H200s of one host (kind nvidia-h200-x2), at 87561a6: toy fits/s
#            (toy_throughput.py --no-belts) on one GPU (CUDA_VISIBLE_DEVICES=0) at 65536 rows, and
#            on both at 65536 and 131072 rows
#   combine  `nuejax combine` at ef254b3 with its compile log: a first run on an empty cache folder
#            and a warm one
# Everything is written to /tmp/s25 and returned as one tar archive.
set -u
export PYTHONPATH=/tmp/site:$PWD
[ -d .whl ] && { ls /tmp/site/iminuit >/dev/null 2>&1 || pip install -q --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; }
dir=/tmp/s25; mkdir -p "$dir"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores $(nproc)";
  python -c "import jax; print(jax.default_backend(), jax.__version__)"; date -u; } > "$dir/info.txt"
log() { # label cache limit [--set ...]
  local label=$1 cache=$2 limit=$3 t0 t1; shift 3
  t0=$(date +%s.%N)
  NUEJAX_CACHE_DIR=$cache timeout "$limit" python benchmarks/timings/compile_log.py --out "$dir/$label.json" --top 30 "$@" \
    -- ${CMD:-xenonnt} --json --no-plots --out "/tmp/o_$label" > "$dir/$label.txt" 2>&1
  local rc=$?; t1=$(date +%s.%N)
  echo "$label rc=$rc wall=$(python -c "print(round($t1-$t0,2))")" | tee -a "$dir/walls.txt"
  cp "/tmp/o_$label/summary.json" "$dir/${label}_summary.json" 2>/dev/null
}
case $1 in
  passes)
    rm -rf /tmp/c_one /tmp/c_two
    log first_one /tmp/c_one 200
    log first_two /tmp/c_two 200 --set nuejax.inference.toys.ONE_PASS_ROWS=0
    log warm_one /tmp/c_one 100
    log warm_two /tmp/c_two 100 --set nuejax.inference.toys.ONE_PASS_ROWS=0
    log warm_one2 /tmp/c_one 100
    log warm_two2 /tmp/c_two 100 --set nuejax.inference.toys.ONE_PASS_ROWS=0
    for rows in 1024 4096 8192; do
      NUEJAX_EXPORTED=0 NUEJAX_CACHE_DIR=/tmp/c_probe timeout 150 python benchmarks/probes/passes_probe.py $rows \
        >> "$dir/passes_probe.jsonl" 2>> "$dir/passes_probe.err" || echo "rows $rows rc=$?" >> "$dir/passes_probe.jsonl"
    done ;;
  skip)
    rm -rf /tmp/c_skip
    log first_skip /tmp/c_skip 200
    log warm_skip /tmp/c_skip 100
    log warm_skip2 /tmp/c_skip 100
    for rows in 16384 65536 4096; do
      for p in default one; do
        NUEJAX_CACHE_DIR=/tmp/c_tp timeout 150 python benchmarks/timings/toy_throughput.py --no-belts --rows $rows \
          --passes $p --compilation-cache /tmp/c_tp/jax --json "$dir/tp_${rows}_$p.json" > "$dir/tp_${rows}_$p.txt" 2>&1 \
          || echo "rows $rows passes $p rc=$?" >> "$dir/walls.txt"
        tar czf "$OUT/s25_$1.tgz" -C "$dir" .
      done
    done ;;
  ab)
    rm -rf /tmp/c_a /tmp/c_b
    PYTHONPATH=$PWD/.ab_before:$PYTHONPATH log before_first /tmp/c_a 200
    log after_first /tmp/c_b 200
    for i in 1 2; do
      PYTHONPATH=$PWD/.ab_before:$PYTHONPATH log before_warm$i /tmp/c_a 100
      log after_warm$i /tmp/c_b 100
    done
    grep -h "programs compiled" "$dir"/before_*.txt "$dir"/after_*.txt > "$dir/programs.txt" ;;
  divisor)
    i=0
    for div in 8 16 32 8; do
      i=$((i + 1))
      sed -i "s/^PASSES = ((10, 1),) + ((None, [0-9]*),)/PASSES = ((10, 1),) + ((None, $div),)/" nuejax/inference/toys.py
      grep "^PASSES" nuejax/inference/toys.py >> "$dir/walls.txt"
      NUEJAX_CACHE_DIR=/tmp/c_tp timeout 120 python benchmarks/timings/toy_throughput.py --no-belts --rows 65536 \
        --compilation-cache /tmp/c_tp/jax --json "$dir/div${i}_$div.json" > "$dir/div${i}_$div.txt" 2>&1 \
        || echo "div $div rc=$?" >> "$dir/walls.txt"
      python -c "import json; d=json.load(open('$dir/div${i}_$div.json')); print('div $div', d['compile_s'], d['seconds'], d['toy_fits_per_s'])" >> "$dir/walls.txt" 2>&1
      tar czf "$OUT/s25_$1.tgz" -C "$dir" .
    done
    git checkout -q nuejax/inference/toys.py 2>/dev/null || true ;;
  two)
    for spec in "1 65536" "2 65536" "2 131072"; do
      set -- $spec
      vis=$([ "$1" = 1 ] && echo 0 || echo 0,1)
      CUDA_VISIBLE_DEVICES=$vis NUEJAX_CACHE_DIR=/tmp/c_tp timeout 100 python benchmarks/timings/toy_throughput.py \
        --no-belts --rows "$2" --compilation-cache /tmp/c_tp/jax --json "$dir/two_$1gpu_$2.json" > "$dir/two_$1gpu_$2.txt" 2>&1 \
        || echo "devices $1 rows $2 rc=$?" >> "$dir/walls.txt"
      python -c "import json; d=json.load(open('$dir/two_$1gpu_$2.json')); print('devices $1 rows $2', d['n_devices'], d['compile_s'], d['seconds'], d['toy_fits_per_s'])" >> "$dir/walls.txt" 2>&1
      tar czf "$OUT/s25_two.tgz" -C "$dir" .
    done
    set -- two ;;
  combine)
    rm -rf /tmp/c_comb
    CMD=combine log combine_first /tmp/c_comb 300
    CMD=combine log combine_warm /tmp/c_comb 120 ;;
esac
tar czf "$OUT/s25_$1.tgz" -C "$dir" .
