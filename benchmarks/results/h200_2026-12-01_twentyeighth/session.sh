#!/bin/bash
# Device calls of the twenty-eighth session (one H200), from the repository root with the wheels
# in .whl/ and 990f49a's nuejax/ in .ab_before/ (`git archive 990f49a nuejax | tar -x -C .ab_before`):
#     OUT=... bash benchmarks/results/h200_2026-12-01_twentyeighth/session.sh WHAT
# WHAT:
#   mu     the mu_nu stage of `nuejax combine` with every solver launch recorded
#          (probes/solver_launches_probe.py mu --npz), before (.ab_before first on PYTHONPATH) and
#          after (this checkout), alternated: first runs on empty cache folders, then warm runs;
#          then toy fits/s (timings/toy_throughput.py --no-belts --rows 65536) before and after
#   load   `nuejax combine` under probes/cache_load_probe.py (where compilation time goes: cache key,
#          read, decompression, deserialization; or compile, serialization, compression, write):
#          a first run on an empty cache folder and a warm run, with JAX's default compressor here
#          (zlib), then the same with zstandard installed (.whl_zstd/, its own cache folder)
#   beside `nuejax combine` (timings/compile_log.py) before (.ab_before: here 613c48d) and after (each model's
#          fits beside the others' inside a stage), alternated: first runs on empty cache folders,
#          then warm runs twice: before, after, after with 8 threads beside (BESIDE_WORKERS=8)
#   final  the paper workload's fit (timings/migrad_profile.py --repeat 5, the library's 8-start design)
#          after (this checkout) and before (.ab_before: here 990f49a, the solver before 7c7ec0e);
#          then the twenty-sixth session's xenonnt and borexino cases (before/after alternated)
#   other  any of the twenty-sixth session's cases (results/h200_2026-12-01_twentysixth/session.sh),
#          passed on: tp, xenonnt, combine, borexino, migrad [one], med
# Everything is written to /tmp/s28 and returned as one tar archive (the device returns few files).
set -u
export PYTHONPATH=/tmp/site:$PWD
[ -d .whl ] && { ls /tmp/site/iminuit >/dev/null 2>&1 || pip install -q --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; }
dir=/tmp/s28; mkdir -p "$dir"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores $(nproc)";
  python -c "import jax; print(jax.default_backend(), jax.__version__)"; date -u; git log --oneline -1; } > "$dir/info.txt"
pack() { tar czf "$OUT/s28.tgz" -C "$dir" .; }
case $1 in
  mu)
    for run in first warm; do
      for side in before after; do
        pre=(); [ $side = before ] && pre=(env PYTHONPATH=$PWD/.ab_before:$PYTHONPATH)
        t0=$(date +%s.%N)
        NUEJAX_CACHE_DIR=/tmp/c_mu_$side timeout 280 "${pre[@]}" python benchmarks/probes/solver_launches_probe.py mu \
          --npz "$dir/mu_${side}_$run.npz" > "$dir/mu_${side}_$run.txt" 2>&1
        echo "mu $side $run rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" >> "$dir/walls.txt"
        pack
      done
    done
    for side in before after; do
      pre=(); [ $side = before ] && pre=(env PYTHONPATH=$PWD/.ab_before:$PYTHONPATH)
      NUEJAX_CACHE_DIR=/tmp/c_tp_$side timeout 120 "${pre[@]}" python benchmarks/timings/toy_throughput.py --no-belts \
        --rows 65536 --compilation-cache /tmp/c_tp_$side/jax --json "$dir/tp_$side.json" > "$dir/tp_$side.txt" 2>&1
      python -c "import json; d=json.load(open('$dir/tp_$side.json')); print('tp $side', d['compile_s'], d['seconds'], d['toy_fits_per_s'])" >> "$dir/walls.txt" 2>&1
      pack
    done ;;
  load)
    [ -d .whl_zstd ] && { ls /tmp/site_zstd/zstandard >/dev/null 2>&1 || pip install -q --no-deps --target /tmp/site_zstd .whl_zstd/*.whl 2>/dev/null; }
    for comp in zlib zstd; do
      extra=(); [ $comp = zstd ] && extra=(env PYTHONPATH=/tmp/site_zstd:$PYTHONPATH)
      for run in first warm; do
        t0=$(date +%s.%N)
        NUEJAX_CACHE_DIR=/tmp/c_load_$comp timeout 240 "${extra[@]}" python benchmarks/probes/cache_load_probe.py \
          --out "$dir/load_${comp}_$run.json" -- ${CMD:-combine} --json --no-plots --out /tmp/o_load > "$dir/load_${comp}_$run.txt" 2>&1
        echo "load $comp $run rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" >> "$dir/walls.txt"
        pack
      done
    done ;;
  beside)
    run() { # label cache [--set ...]
      local label=$1 cache=$2 t0; shift 2
      t0=$(date +%s.%N)
      NUEJAX_CACHE_DIR=$cache timeout 200 python benchmarks/timings/compile_log.py --out "$dir/$label.json" --top 30 "$@" \
        -- combine --json --no-plots --out "/tmp/o_$label" > "$dir/$label.txt" 2>&1
      echo "$label rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" >> "$dir/walls.txt"
      cp "/tmp/o_$label/summary.json" "$dir/${label}_summary.json" 2>/dev/null
      pack
    }
    B=$PWD/.ab_before:$PYTHONPATH
    PYTHONPATH=$B run before_first /tmp/c_bb
    run after_first /tmp/c_ba
    for i in 1 2; do
      PYTHONPATH=$B run before_warm$i /tmp/c_bb
      run after_warm$i /tmp/c_ba
      run after8_warm$i /tmp/c_ba --set nuejax._internal.ahead.BESIDE_WORKERS=8
    done ;;
  final)
    for side in after before; do
      pre=(); [ $side = before ] && pre=(env PYTHONPATH=$PWD/.ab_before:$PYTHONPATH)
      NUEJAX_CACHE_DIR=/tmp/c_mg_$side timeout 150 "${pre[@]}" python benchmarks/timings/migrad_profile.py --repeat 5 \
        --out "$dir/migrad_design_$side.json" > "$dir/migrad_design_$side.txt" 2>&1
      echo "migrad design $side rc=$?" >> "$dir/walls.txt"
      pack
    done
    for what in xenonnt borexino; do
      OUT=$dir bash benchmarks/results/h200_2026-12-01_twentysixth/session.sh $what
      mkdir -p "$dir/$what" && tar xzf "$dir/s26_$what.tgz" -C "$dir/$what" && rm "$dir/s26_$what.tgz"
      rm -rf /tmp/s26
      pack
    done ;;
  *)
    OUT=$dir bash benchmarks/results/h200_2026-12-01_twentysixth/session.sh "$@"
    for f in "$dir"/s26_*.tgz; do [ -f "$f" ] && mkdir -p "$dir/${1}" && tar xzf "$f" -C "$dir/$1" && rm "$f"; done ;;
esac
pack
