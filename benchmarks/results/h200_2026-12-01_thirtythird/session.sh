#!/bin/bash
# Device calls of the thirty-third session (one H200), from the repository root with the wheels in
# .whl/:   OUT=... bash benchmarks/results/h200_2026-12-01_thirtythird/session.sh MODE...
# call2: 1. nuejax.gpu_settings() on a GPU: a fit program made without XLA's GPU flags warns;
#           called after JAX's backends started, gpu_settings() warns that it is too late.
#        2. The toy stage of `nuejax xenonnt` (benchmarks/probes/toy_stage_compiles_probe.py, 100
#           toys) with nuejax.gpu_settings(), on an empty cache folder and again warm: every
#           compile and launch (7c73c44's code, before e0edd1b).
# call3: the same toy stage after e0edd1b (toy rows on one device uncommitted), first and warm;
#        then `nuejax xenonnt` first on an empty folder, reused, and twice with --recompute
#        (timings/compile_log.py).
# call4: `nuejax combine` with the combination's ε region seeded from the experiments' end points
#        (7d63c53): first on an empty folder, reused, twice with --recompute (compile_log.py).
set -u
export PYTHONPATH=/tmp/site:$PWD
[ -d .whl ] && { ls /tmp/site/iminuit >/dev/null 2>&1 || pip install -q --no-deps --target /tmp/site .whl/*.whl 2>/dev/null; }
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "cores $(nproc)";
  python -c "import jax; print(jax.default_backend(), jax.__version__)"; date -u; } > "$OUT/info.txt"
probe() { # label
  export NUEJAX_CACHE_DIR=/tmp/c_probe_$1; rm -rf "$NUEJAX_CACHE_DIR"
  for run in first warm; do
    t0=$(date +%s.%N)
    timeout 200 python benchmarks/probes/toy_stage_compiles_probe.py 100 > "$OUT/toy_stage_$1_$run.log" 2>&1
    echo "probe $1 $run rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" >> "$OUT/walls.txt"
  done
}
r() { # command label limit [options...]
  local cmd=$1 label=$2 limit=$3 t0; shift 3
  t0=$(date +%s.%N)
  NUEJAX_CACHE_DIR=/tmp/c_$cmd timeout "$limit" python benchmarks/timings/compile_log.py --out "$OUT/${cmd}_$label.json" \
    --top 12 -- "$cmd" --json --no-plots --out "/tmp/o_${cmd}_$label" "$@" > "$OUT/${cmd}_$label.txt" 2>&1
  echo "$cmd $label rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" >> "$OUT/walls.txt"
}
for what in "$@"; do
  case $what in
    call2) (
      unset XLA_FLAGS
      timeout 60 python -W always -c "
import nuejax; nuejax.enable_x64()
from nuejax.inference.fitting import row_solver
row_solver(); row_solver.cache_clear(); row_solver()  # warns once
print('made the solver')" > "$OUT/warn_without_flags.txt" 2>&1
      timeout 60 python -W always -c "
import jax; jax.devices()
import nuejax; print(nuejax.gpu_settings())" > "$OUT/warn_too_late.txt" 2>&1
      export NUEJAX_CACHE_DIR=/tmp/c_probe; rm -rf "$NUEJAX_CACHE_DIR"
      for run in first warm; do
        t0=$(date +%s.%N)
        timeout 200 python benchmarks/probes/toy_stage_compiles_probe.py 100 > "$OUT/toy_stage_$run.log" 2>&1
        echo "$run rc=$? wall=$(python -c "import time; print(round(time.time()-$t0,2))")" >> "$OUT/walls.txt"
      done
      ) ;;
    call3)
      probe after
      rm -rf /tmp/c_xenonnt
      r xenonnt first 200; r xenonnt reuse 60; r xenonnt recompute1 90 --recompute; r xenonnt recompute2 90 --recompute ;;
    call4)
      rm -rf /tmp/c_combine
      r combine first 220; r combine reuse 60; r combine recompute1 90 --recompute; r combine recompute2 90 --recompute
      tar czf "$OUT/combine.tgz" -C "$OUT" $(cd "$OUT" && ls combine_*) && rm -f "$OUT"/combine_* ;;
  esac
done
