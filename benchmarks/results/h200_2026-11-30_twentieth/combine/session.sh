#!/bin/bash
# Fourth device call (twentieth session, e3b9c1d): the paper workload's multi-start fit with the
# cost-aware least launch (general path: 8 rows, fast path: 64), then `nuejax combine` first and
# warm on one H200. From the repository root, wheels in .whl/.
set -u
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
timeout 120 python benchmarks/probes/multistart_probe.py --repeat 2 --out "$OUT/multistart.json" > "$OUT/multistart.log" 2>&1
python benchmarks/timings/command_times.py --cache /tmp/c_c --out "$OUT/commands.json" --runs first,warm \
  --timeout 380 combine > "$OUT/log.txt" 2>&1
python3 -c "
import json
d = json.load(open('$OUT/multistart.json'))
for k, r in d['paths'].items():
    print(k, 'first %.2f fit %.3f' % (r['first_s'], r['multistart_s']), ['%.3f' % x for x in r['launches_s']])
for r in json.load(open('$OUT/commands.json')):
    print(r['command'][:16], r.get('run'), r.get('rc'), r.get('wall_s'), r.get('seconds'), r.get('phase_start_seconds'), r.get('timed_out_after_s'))
"
