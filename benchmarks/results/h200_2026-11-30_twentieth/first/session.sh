#!/bin/bash
# First device call (twentieth session): `nuejax borexino` first and warm on one H200 after the
# Phase-III build stopped evaluating op by op (503 -> 49 XLA programs on the CPU), and a compile
# log of `nuejax xenonnt`'s first run. From the repository root, wheels in .whl/.
set -u
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
python -c "import jax; print(jax.__version__, jax.devices())" >> "$OUT/device.txt" 2>&1
python benchmarks/timings/command_times.py --cache /tmp/c_b --out "$OUT/commands.json" --runs first,warm,warm \
  --timeout 200 borexino > "$OUT/log.txt" 2>&1
NUEJAX_CACHE_DIR=/tmp/c_xl timeout 250 python benchmarks/timings/compile_log.py --out "$OUT/xenonnt_compile_log.json" \
  --top 40 -- xenonnt --no-plots --json --out /tmp/x_out > "$OUT/xenonnt_compile_log.txt" 2>&1
python3 -c "
import json; d=json.load(open('$OUT/commands.json'))
for r in d: print(r['command'][:16], r.get('run'), r.get('wall_s'), r.get('seconds'), r.get('phase_start_seconds'), r.get('timed_out_after_s'))
"
tail -42 "$OUT/xenonnt_compile_log.txt"
