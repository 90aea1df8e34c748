#!/bin/bash
# Fourth device call (twenty-second session): the compile logs of `nuejax xenonnt` and
# `nuejax combine` first runs (empty caches; benchmarks/timings/compile_log.py) on one H200, with
# cheap_rows lowering for the host CPU device. From the repository root, wheels in .whl/.
set -u
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
for c in xenonnt combine; do
  rm -rf /tmp/c_$c && mkdir -p /tmp/c_$c
  lim=$([ $c = xenonnt ] && echo 180 || echo 330)
  NUEJAX_CACHE_DIR=/tmp/c_$c timeout $lim python benchmarks/timings/compile_log.py --out "$OUT/${c}_compile_log.json" \
    --top 40 -- $c --json --no-plots --out /tmp/c_$c-out > "$OUT/${c}_first.txt" 2>&1
  echo "rc=$?" >> "$OUT/${c}_first.txt"
  grep -v "Finished XLA" "$OUT/${c}_first.txt" | tail -25
done
