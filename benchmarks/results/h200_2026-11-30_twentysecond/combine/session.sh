#!/bin/bash
# Third device call (twenty-second session): `nuejax combine` first (empty caches) and warm on one
# H200, with cheap_rows lowering for the host CPU device. From the repository root, wheels in .whl/.
set -u
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
python benchmarks/timings/command_times.py --cache /tmp/c_c --out "$OUT/combine.json" --runs first \
  --timeout 440 combine > "$OUT/combine_log.txt" 2>&1
python benchmarks/timings/command_times.py --cache /tmp/c_c --out "$OUT/combine.json" --runs warm \
  --timeout 120 combine >> "$OUT/combine_log.txt" 2>&1
python3 -c "
import json
for r in json.load(open('$OUT/combine.json')):
    print(r['command'][:16], r.get('run'), r.get('rc'), r.get('wall_s'), r.get('seconds'), r.get('phase_start_seconds'), r.get('timed_out_after_s'))
"
