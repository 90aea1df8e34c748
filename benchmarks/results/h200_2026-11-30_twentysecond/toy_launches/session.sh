#!/bin/bash
# Fifth device call (twenty-second session): the toy stage of `nuejax xenonnt` with launches padded
# to the full chunk (16384 rows, as before) and to the run's power of two, at least 4096
# (runner.accelerator_launch_rows), each in a fresh process on an empty cache folder
# (benchmarks/probes/xenonnt_toys_probe.py: first run, then warm in-process); then `nuejax xenonnt`
# first and warm. One H200. From the repository root, wheels in .whl/.
set -u
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
for lm in 16384 4096; do
  rm -rf /tmp/c_t$lm && mkdir -p /tmp/c_t$lm
  NUEJAX_CACHE_DIR=/tmp/c_t$lm timeout 150 python benchmarks/probes/xenonnt_toys_probe.py --launch-min $lm \
    --json "$OUT/toys_$lm.json" --top 25 > "$OUT/toys_$lm.txt" 2>&1
  echo "rc=$?" >> "$OUT/toys_$lm.txt"
  grep '^{"cls_s\|^rc=' "$OUT/toys_$lm.txt"
done
python benchmarks/timings/command_times.py --cache /tmp/c_x --out "$OUT/xenonnt.json" --runs first,warm \
  --timeout 150 xenonnt > "$OUT/xenonnt_log.txt" 2>&1
python3 -c "
import json
for r in json.load(open('$OUT/xenonnt.json')):
    print(r['command'][:16], r.get('run'), r.get('rc'), r.get('wall_s'), r.get('seconds'), r.get('phase_start_seconds'), r.get('timed_out_after_s'))
"
