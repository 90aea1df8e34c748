#!/bin/bash
# Third device call (nineteenth session, 1effe52): `nuejax combine` first and warm on one H200
# after the fits of one data set share one solver program. From the repository root, wheels in .whl/.
set -u
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
python benchmarks/timings/command_times.py --cache /tmp/c_c --out "$OUT/commands.json" --runs first,warm \
  --timeout 420 combine > "$OUT/log.txt" 2>&1
python3 -c "
import json; d=json.load(open('$OUT/commands.json'))
for r in d: print(r['command'][:16], r.get('run'), r.get('wall_s'), r.get('seconds'), r.get('phase_start_seconds'), r.get('timed_out_after_s'))
"
