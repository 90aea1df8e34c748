#!/bin/bash
# First device call (twenty-second session), at fe54a4f: the row-cost probe (does cheap_rows, now
# reading a CPU lowering, find xenonnt's rows cheap on the GPU?), then `nuejax borexino` and
# `nuejax xenonnt` first (empty caches) and warm on one H200. From the repository root, wheels in .whl/.
set -u
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
timeout 120 python benchmarks/probes/row_cost_probe.py > "$OUT/probe_log.txt" 2>&1
echo "probe rc $?" >> "$OUT/probe_log.txt"
python benchmarks/timings/command_times.py --cache /tmp/c_b --out "$OUT/borexino.json" --runs first,warm \
  --timeout 170 borexino > "$OUT/borexino_log.txt" 2>&1
python benchmarks/timings/command_times.py --cache /tmp/c_x --out "$OUT/xenonnt.json" --runs first,warm \
  --timeout 190 xenonnt > "$OUT/xenonnt_log.txt" 2>&1
python3 -c "
import json
for f in ('borexino', 'xenonnt'):
    for r in json.load(open('$OUT/' + f + '.json')):
        print(r['command'][:16], r.get('run'), r.get('rc'), r.get('wall_s'), r.get('seconds'), r.get('phase_start_seconds'), r.get('timed_out_after_s'))
"
tail -5 "$OUT/probe_log.txt"
