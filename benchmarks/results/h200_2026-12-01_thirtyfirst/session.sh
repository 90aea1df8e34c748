#!/bin/bash
# Device calls of the thirty-first session (one H200), from the repository root with the wheels in
# .whl/ and 0b35f83's nuejax/ in .ab_before/ (`git archive 0b35f83 nuejax | tar -x -C .ab_before`):
#     OUT=... bash benchmarks/results/h200_2026-12-01_thirtyfirst/session.sh WHAT...
# WHAT:
#   combine, xenonnt  `nuejax combine` (`nuejax xenonnt`) before (0b35f83: every point of the
#             mediator scans' coarse grids fitted) and after (this checkout: the coarse grids in
#             ascending waves, a case stopped once it crosses its threshold), alternated: first
#             runs on empty cache folders, two warm runs each, for combine one warm run each with
#             the stages in turn, with compile logs (the twenty-sixth session's session.sh)
#   firsts    `nuejax combine` first runs again, after first this time, then before, each on an
#             empty cache folder of its own (compile logs)
#   workers   `nuejax combine`, this checkout, with 4 threads beside (BESIDE_WORKERS, the default)
#             and with 8: a first run on an empty cache folder (4), then the two warm variants
#             alternated, twice
#   final     `nuejax combine` before (0b35f83) and after (this checkout, the waves with the
#             review's changes: the boundary point fitted again, a crossing confirmed by a fitted
#             point to its right), alternated: first runs on empty cache folders, two warm runs each
#   launches  `nuejax combine`'s mediator stage with every solver launch timed
#             (probes/solver_launches_probe.py med), this checkout, twice on the cache folder the
#             combine case filled (run it after that case in the same call)
# Everything is written to /tmp/s31 and returned as one tar archive.
set -u
dir=/tmp/s31; mkdir -p "$dir"
pack() { tar czf "$OUT/s31.tgz" -C "$dir" .; }
for what in "$@"; do
  case $what in
    combine|xenonnt)
      OUT=$dir bash benchmarks/results/h200_2026-12-01_twentysixth/session.sh "$what"
      mkdir -p "$dir/$what" && tar xzf "$dir/s26_$what.tgz" -C "$dir/$what" && rm "$dir/s26_$what.tgz"
      rm -rf /tmp/s26 ;;
    firsts)
      export PYTHONPATH=/tmp/site:$PWD
      for side in after before; do
        pre=(); [ $side = before ] && pre=(env PYTHONPATH=$PWD/.ab_before:$PYTHONPATH)
        t0=$(date +%s.%N)
        NUEJAX_CACHE_DIR=/tmp/c_f_$side timeout 200 "${pre[@]}" python benchmarks/timings/compile_log.py \
          --out "$dir/firsts_$side.json" --top 30 -- combine --json --no-plots --out "/tmp/o_f_$side" \
          > "$dir/firsts_$side.txt" 2>&1
        echo "firsts $side rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" >> "$dir/walls.txt"
        cp "/tmp/o_f_$side/summary.json" "$dir/firsts_${side}_summary.json" 2>/dev/null
        pack
      done ;;
    workers)
      export PYTHONPATH=/tmp/site:$PWD
      [ -d .whl ] && { ls /tmp/site/iminuit >/dev/null 2>&1 || pip install -q --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; }
      { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores $(nproc)";
        python -c "import jax; print(jax.default_backend(), jax.__version__)"; date -u; } > "$dir/info.txt"
      w() { # workers label limit
        local t0; t0=$(date +%s.%N)
        NUEJAX_CACHE_DIR=/tmp/c_w timeout "$3" python benchmarks/timings/compile_log.py --out "$dir/w_$2.json" --top 20 \
          --set nuejax._internal.ahead.BESIDE_WORKERS=$1 -- combine --json --no-plots --out "/tmp/o_w_$2" > "$dir/w_$2.txt" 2>&1
        echo "workers $2 rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" >> "$dir/walls.txt"
        cp "/tmp/o_w_$2/summary.json" "$dir/w_$2_summary.json" 2>/dev/null
        pack
      }
      rm -rf /tmp/c_w; w 4 first 200
      for i in 1 2; do w 4 w4_$i 60; w 8 w8_$i 60; done ;;
    final)
      export PYTHONPATH=/tmp/site:$PWD
      [ -d .whl ] && { ls /tmp/site/iminuit >/dev/null 2>&1 || pip install -q --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; }
      { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores $(nproc)";
        python -c "import jax; print(jax.default_backend(), jax.__version__)"; date -u; } > "$dir/info.txt"
      f() { # side label limit
        local pre=() t0; [ "$1" = before ] && pre=(env PYTHONPATH=$PWD/.ab_before:$PYTHONPATH)
        t0=$(date +%s.%N)
        NUEJAX_CACHE_DIR=/tmp/c_final_$1 timeout "$3" "${pre[@]}" python benchmarks/timings/compile_log.py \
          --out "$dir/final_$2.json" --top 20 -- combine --json --no-plots --out "/tmp/o_final_$2" > "$dir/final_$2.txt" 2>&1
        echo "final $2 rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" >> "$dir/walls.txt"
        cp "/tmp/o_final_$2/summary.json" "$dir/final_$2_summary.json" 2>/dev/null
        pack
      }
      rm -rf /tmp/c_final_before /tmp/c_final_after
      f after after_first 200; f before before_first 200
      for i in 1 2; do f before before_warm$i 60; f after after_warm$i 60; done ;;
    launches)
      export PYTHONPATH=/tmp/site:$PWD
      for run in 1 2; do
        NUEJAX_CACHE_DIR=/tmp/c_b_combine timeout 150 python benchmarks/probes/solver_launches_probe.py med \
          > "$dir/launches_med_$run.txt" 2>&1
        echo "launches $run rc=$?" >> "$dir/walls.txt"
        pack
      done ;;
  esac
  pack
done
pack
