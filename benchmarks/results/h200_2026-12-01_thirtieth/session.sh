#!/bin/bash
# Device calls of the thirtieth session (one H200), from the repository root with the wheels in
# .whl/ and an earlier commit's nuejax/ in .ab_before/ (`git archive C nuejax | tar -x -C .ab_before`):
#     OUT=... bash benchmarks/results/h200_2026-12-01_thirtieth/session.sh WHAT...
# WHAT:
#   combine   `nuejax combine` before and after (this checkout), alternated: first runs on empty
#             cache folders, two warm runs each, one warm run each with the stages in turn, with
#             compile logs (the twenty-sixth session's session.sh); first call: before a12226e,
#             after f26a780 (envelope passes refit only from fresh starts); second call: before
#             f26a780, after bcc7c13 (programs loaded ahead from the last run's index, the ε and
#             mediator programs compiled ahead in warm-up threads)
#   xenonnt, borexino  the same A/B for those commands (no runs in turn)
#   order     `nuejax combine` before (bcc7c13: each stage's models in the order borexino, xenonnt,
#             combined) and after (ce6c453: the combination first, in the stage's own thread), each
#             with 4 threads beside (BESIDE_WORKERS, the default) and with 8: a first run per side
#             on an empty cache folder (4 threads), then the four warm variants alternated, twice
#   launches  `nuejax combine`'s mediator stage with every solver launch timed and its rows kept
#             (probes/solver_launches_probe.py med --npz), this checkout, on the cache folder the
#             combine case filled (run it after that case in the same call; its 150 s were too few)
#   launches2 the same without --npz, twice on a cache folder of its own (first run, then warm)
# Everything is written to /tmp/s30 and returned as one tar archive.
set -u
dir=/tmp/s30; mkdir -p "$dir"
pack() { tar czf "$OUT/s30.tgz" -C "$dir" .; }
for what in "$@"; do
  case $what in
    combine|xenonnt|borexino)
      OUT=$dir bash benchmarks/results/h200_2026-12-01_twentysixth/session.sh "$what"
      mkdir -p "$dir/$what" && tar xzf "$dir/s26_$what.tgz" -C "$dir/$what" && rm "$dir/s26_$what.tgz"
      rm -rf /tmp/s26 ;;
    order)
      export PYTHONPATH=/tmp/site:$PWD
      [ -d .whl ] && { ls /tmp/site/iminuit >/dev/null 2>&1 || pip install -q --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; }
      { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores $(nproc)";
        python -c "import jax; print(jax.default_backend(), jax.__version__)"; date -u; } > "$dir/info.txt"
      one() { # side workers label limit
        local pre=() t0; [ "$1" = before ] && pre=(env PYTHONPATH=$PWD/.ab_before:$PYTHONPATH)
        t0=$(date +%s.%N)
        NUEJAX_CACHE_DIR=/tmp/c_order_$1 timeout "$4" "${pre[@]}" python benchmarks/timings/compile_log.py \
          --out "$dir/order_$3.json" --top 20 --set nuejax._internal.ahead.BESIDE_WORKERS=$2 \
          -- combine --json --no-plots --out "/tmp/o_order_$3" > "$dir/order_$3.txt" 2>&1
        echo "order $3 rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" >> "$dir/walls.txt"
        cp "/tmp/o_order_$3/summary.json" "$dir/order_$3_summary.json" 2>/dev/null
        pack
      }
      rm -rf /tmp/c_order_before /tmp/c_order_after
      one before 4 before_first 150; one after 4 after_first 150
      for i in 1 2; do
        for w in 4 8; do one before $w before_w${w}_$i 60; one after $w after_w${w}_$i 60; done
      done ;;
    launches)
      export PYTHONPATH=/tmp/site:$PWD
      NUEJAX_CACHE_DIR=/tmp/c_b_combine timeout 150 python benchmarks/probes/solver_launches_probe.py med \
        --npz "$dir/launches_med.npz" > "$dir/launches_med.txt" 2>&1
      echo "launches rc=$?" >> "$dir/walls.txt" ;;
    launches2)  # fourth call: this checkout, twice on a cache folder of its own (first, then warm)
      export PYTHONPATH=/tmp/site:$PWD
      for run in first warm; do
        NUEJAX_CACHE_DIR=/tmp/c_launches timeout 260 python benchmarks/probes/solver_launches_probe.py med \
          > "$dir/launches_med_$run.txt" 2>&1
        echo "launches $run rc=$?" >> "$dir/walls.txt"
        pack
      done ;;
  esac
  pack
done
pack
