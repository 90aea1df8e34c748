#!/bin/bash
# Fifth device call (twenty-third session): `nuejax xenonnt` and `nuejax borexino` first (empty
# caches) and warm on one H200 with every cheap launch padded to 256 rows (ROW_LAUNCH_MIN_CHEAP =
# 256, a prelude: one solver program per problem), then `nuejax borexino` as main runs it. xenonnt
# as main runs it on this machine: ../curvature/xenonnt_vmap.json. From the repository root, wheels in .whl/.
set -u
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
P="import nuejax.inference.fitting as F; F.ROW_LAUNCH_MIN_CHEAP = 256"
python benchmarks/timings/command_times.py --cache /tmp/x_256 --out "$OUT/xenonnt_256.json" --runs first,warm \
  --timeout 140 --prelude "$P" xenonnt > "$OUT/xenonnt_256_log.txt" 2>&1
python benchmarks/timings/command_times.py --cache /tmp/b_256 --out "$OUT/borexino_256.json" --runs first,warm \
  --timeout 80 --prelude "$P" borexino > "$OUT/borexino_256_log.txt" 2>&1
python benchmarks/timings/command_times.py --cache /tmp/b_main --out "$OUT/borexino_main.json" --runs first,warm \
  --timeout 80 borexino > "$OUT/borexino_main_log.txt" 2>&1
python3 -c "
import json
for f in ('xenonnt_256', 'borexino_256', 'borexino_main'):
    for r in json.load(open('$OUT/' + f + '.json')):
        print(f, r.get('run'), r.get('rc'), r.get('wall_s'), r.get('seconds'), r.get('phase_start_seconds'), r.get('timed_out_after_s'))
"
