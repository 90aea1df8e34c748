#!/bin/bash
# Device calls of the twenty-ninth session (one H200), from the repository root with the wheels in
# .whl/ and an earlier commit's nuejax/ in .ab_before/ (`git archive C nuejax | tar -x -C .ab_before`):
#     OUT=... bash benchmarks/results/h200_2026-12-01_twentyninth/session.sh WHAT
# WHAT:
#   xenonnt  `nuejax xenonnt` before and after (this checkout), alternated: first runs on empty cache
#            folders, then two warm runs each, with compile logs (the twenty-sixth session's case);
#            first call: before a7cf0c9 (Feldman-Cousins with toys of its own), after 6bf9f98 (from
#            the CLs run's toys); third call: before 6bf9f98, after a08afc4 (the toys beside the fit)
#   combine  the same for `nuejax combine`, then one warm run of each with its stages in turn; second
#            call: before 79b951e (one mediator's scans after the other), after 6bf9f98 (both
#            mediators' scans in the same launches); fourth call: before 060056a, after the
#            mediator models' builds started on the calibration in stage 1 (2619360)
#   med      `nuejax combine`'s mediator stage warm under cProfile (probes/combine_mediators_profile.py),
#            before and after, on the caches the combine case filled (run it in the same call;
#            failed in the second call: the probe passed list.append where the stage needs a StageClock)
#   workers  `nuejax combine` (this checkout) with 4 threads beside (BESIDE_WORKERS, the default)
#            and with 8, alternated: first runs on empty cache folders, then one warm run each
#   launches `nuejax combine`'s mediator stage with every solver launch timed
#            (probes/solver_launches_probe.py med), this checkout, twice on one cache folder
# Everything is written to /tmp/s29 and returned as one tar archive.
set -u
dir=/tmp/s29; mkdir -p "$dir"
pack() { tar czf "$OUT/s29.tgz" -C "$dir" .; }
for what in "$@"; do
  case $what in
    xenonnt|combine)
      OUT=$dir bash benchmarks/results/h200_2026-12-01_twentysixth/session.sh "$what"
      mkdir -p "$dir/$what" && tar xzf "$dir/s26_$what.tgz" -C "$dir/$what" && rm "$dir/s26_$what.tgz"
      rm -rf /tmp/s26 ;;
    med)
      export PYTHONPATH=/tmp/site:$PWD
      for side in before after; do
        pre=(); cache=/tmp/c_b_combine
        [ $side = before ] && { pre=(env PYTHONPATH=$PWD/.ab_before:$PYTHONPATH); cache=/tmp/c_a_combine; }
        NUEJAX_CACHE_DIR=$cache timeout 200 "${pre[@]}" python benchmarks/probes/combine_mediators_profile.py --top 60 \
          --out "$dir/med_$side.json" > "$dir/med_$side.txt" 2>&1
        echo "med $side rc=$?" >> "$dir/walls.txt"
      done ;;
    workers)
      export PYTHONPATH=/tmp/site:$PWD
      [ -d .whl ] && { ls /tmp/site/iminuit >/dev/null 2>&1 || pip install -q --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; }
      for run in first warm; do
        for w in 4 8; do
          t0=$(date +%s.%N)
          NUEJAX_CACHE_DIR=/tmp/c_w$w timeout 150 python benchmarks/timings/compile_log.py --out "$dir/w${w}_$run.json" --top 20 \
            --set nuejax._internal.ahead.BESIDE_WORKERS=$w -- combine --json --no-plots --out /tmp/o_w${w}_$run \
            > "$dir/w${w}_$run.txt" 2>&1
          echo "workers $w $run rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" >> "$dir/walls.txt"
          cp /tmp/o_w${w}_$run/summary.json "$dir/w${w}_${run}_summary.json" 2>/dev/null
          pack
        done
      done ;;
    launches)
      export PYTHONPATH=/tmp/site:$PWD
      for run in first warm; do
        NUEJAX_CACHE_DIR=/tmp/c_launches timeout 250 python benchmarks/probes/solver_launches_probe.py med \
          > "$dir/launches_$run.txt" 2>&1
        echo "launches $run rc=$?" >> "$dir/walls.txt"
      done ;;
  esac
  pack
done
pack
