#!/bin/bash
# Second device call (twentieth session): would a larger least launch of solve_rows on the GPU
# (fitting.ROW_LAUNCH_MIN, 8 now) save compilations in the commands' first runs? `nuejax xenonnt`
# first and warm with 64 and with 8 on one machine, then `nuejax borexino` with 64.
set -u
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
t=benchmarks/timings/command_times.py
p64="import nuejax.inference.fitting as f; f.ROW_LAUNCH_MIN = 64"
python $t --cache /tmp/c_x64 --out "$OUT/commands.json" --runs first,warm --timeout 200 --prelude "$p64" xenonnt > "$OUT/log.txt" 2>&1
python $t --cache /tmp/c_x8 --out "$OUT/commands.json" --runs first,warm --timeout 200 xenonnt >> "$OUT/log.txt" 2>&1
python $t --cache /tmp/c_b64 --out "$OUT/commands.json" --runs first,warm --timeout 150 --prelude "$p64" borexino >> "$OUT/log.txt" 2>&1
python3 -c "
import json; d=json.load(open('$OUT/commands.json'))
for r in d: print(r['command'][:16], bool(r.get('prelude')), r.get('run'), r.get('rc'), r.get('wall_s'), r.get('seconds'), r.get('phase_start_seconds'), r.get('timed_out_after_s'))
"
