#!/bin/bash
# Device calls of the twenty-fourth session (one H200, 16 cores, one machine held warm between the
# calls), from the repository root with the wheels in .whl/:
#   OUT=... bash benchmarks/results/h200_2026-11-30_twentyfourth/session.sh WHAT
# WHAT:
#   xenonnt   `nuejax xenonnt` with its NSI and mediator stages beside the mu_nu stages and in turn
#   combine   `nuejax combine` (a9e217a) with its eps and mediator stages beside the mu_nu stage and in turn
#   cpu_borexino, cpu_xenonnt   the same on the host's CPU (JAX_PLATFORMS=cpu, 15 cores to spare):
#             two programs at once on one XLA:CPU device, each run under a time limit (a stall: rc=124)
#   xenonnt_toys   as xenonnt, on code that also ran mu_nu's toy constructions beside its fit and
#             profile, returning one tar archive; two variants, neither adopted (main does not have
#             them): xenonnt_toys_pair/ the CLs and Feldman-Cousins constructions each in a thread
#             of its own, xenonnt_toys_unit/ both in one thread (variant.diff, against a9e217a)
#   compile_log   the programs a first `nuejax xenonnt` compiles on the GPU, stages in turn
# The device returns a few files per call: the first two calls came back with the first runs' files
# and walls.txt (folders xenonnt_beside/, combine_beside/); the CPU calls wrote to /tmp/cpu* and
# returned one tar archive (cpu16_*_beside/ hold it unpacked).
set -u
case $1 in
  xenonnt) bash benchmarks/timings/stages_beside.sh xenonnt 200 ;;
  combine) bash benchmarks/timings/stages_beside.sh combine 330 ;;
  cpu_borexino|cpu_xenonnt)
    what=${1#cpu_}; dir=/tmp/cpu_$what; mkdir -p "$dir"
    extra=(); [ "$what" = xenonnt ] && extra=(--toys 0 --masses 3)
    OUT=$dir JAX_PLATFORMS=cpu bash benchmarks/timings/stages_beside.sh "$what" 240 "${extra[@]}"
    tar czf "$OUT/cpu_$what.tgz" -C "$dir" . ;;
  xenonnt_toys)
    dir=/tmp/xt; mkdir -p "$dir"
    OUT=$dir bash benchmarks/timings/stages_beside.sh xenonnt 200
    tar czf "$OUT/xenonnt_toys.tgz" -C "$dir" . ;;
  compile_log)
    export PYTHONPATH=/tmp/site:$PWD
    NUEJAX_CACHE_DIR=/tmp/cl_x NUEJAX_AHEAD=0 timeout 200 python benchmarks/timings/compile_log.py \
      --out "$OUT/xenonnt_compile_log.json" --top 40 -- xenonnt --no-plots --out /tmp/o_cl \
      > "$OUT/xenonnt_compile_log.txt" 2>&1 ;;
esac
