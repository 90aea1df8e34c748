#!/bin/bash
# Fourth device call (twenty-first session): `nuejax xenonnt` first (empty caches) and warm on one
# H200, with launches of cheap rows in chunks of ROW_LAUNCH_CHEAP_STEP = 256 (two launch sizes).
# From the repository root, wheels in .whl/.
set -u
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
python benchmarks/timings/command_times.py --cache /tmp/c_x --out "$OUT/commands.json" --runs first,warm \
  --timeout 250 xenonnt > "$OUT/log.txt" 2>&1
python3 -c "
import json
for r in json.load(open('$OUT/commands.json')):
    print(r['command'][:16], r.get('run'), r.get('rc'), r.get('wall_s'), r.get('seconds'), r.get('phase_start_seconds'), r.get('timed_out_after_s'))
"
