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
