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
#   launches  `nuejax combine`'s mediator stage with every solver launch timed and its rows kept
#             (probes/solver_launches_probe.py med --npz), this checkout, on the cache folder the
#             combine case filled (run it after that case in the same call)
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
    launches)
      export PYTHONPATH=/tmp/site:$PWD
      NUEJAX_CACHE_DIR=/tmp/c_b_combine timeout 150 python benchmarks/probes/solver_launches_probe.py med \
        --npz "$dir/launches_med.npz" > "$dir/launches_med.txt" 2>&1
      echo "launches rc=$?" >> "$dir/walls.txt" ;;
  esac
  pack
done
pack
