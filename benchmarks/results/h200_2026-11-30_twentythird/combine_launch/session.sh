#!/bin/bash
# Second and third device calls (twenty-third session): `nuejax combine` first (empty caches) and
# warm on one H200, the curvature term one parameter at a time (a prelude, as main will run it),
# with accelerators' cheap launches padded as on main (64 rows, 256 beyond: two solver programs per
# problem) or, given `256`, to 256 rows always (ROW_LAUNCH_MIN_CHEAP = 256: one program per problem).
# Given `main`: as main runs it (the curvature term by vmap on a GPU, 64/256-row launches).
# From the repository root, wheels in .whl/; the argument names the run.
set -u
MIN=${1:-64}
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
P="import functools, nuejax.inference.fitting as F; F.curvature_term = functools.partial(F.curvature_term, by_direction=True); F.ROW_LAUNCH_MIN_CHEAP = $MIN"
[ "$MIN" = main ] && P=""
python benchmarks/timings/command_times.py --cache /tmp/c_c --out "$OUT/combine_$MIN.json" --runs first,warm \
  --timeout 330 --prelude "$P" combine > "$OUT/combine_${MIN}_log.txt" 2>&1
python3 -c "
import json
for r in json.load(open('$OUT/combine_$MIN.json')):
    print('$MIN', r.get('run'), r.get('rc'), r.get('wall_s'), r.get('seconds'), r.get('phase_start_seconds'), r.get('timed_out_after_s'))
"
