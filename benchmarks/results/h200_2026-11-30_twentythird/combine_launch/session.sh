#!/bin/bash
# Device calls 2-4 (twenty-third session): `nuejax combine` first (empty caches) and warm on one
# H200. `session.sh MIN [split]`: accelerators' cheap launches padded to MIN rows at least
# (ROW_LAUNCH_MIN_CHEAP; main: 64, and 256 beyond, two solver programs per problem; 256: one), and
# with `split` the curvature term one parameter at a time (by_direction=True); `main`: as main runs.
# Calls: `64 split` (combine_64.json), `main` (combine_main.json), `256` (combine_256.json).
# From the repository root, wheels in .whl/.
set -u
MIN=${1:-64}
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
P="import functools, nuejax.inference.fitting as F; F.ROW_LAUNCH_MIN_CHEAP = $MIN"
[ "${2:-}" = split ] && P="$P; F.curvature_term = functools.partial(F.curvature_term, by_direction=True)"
[ "$MIN" = main ] && P=""
python benchmarks/timings/command_times.py --cache /tmp/c_c --out "$OUT/combine_$MIN.json" --runs first,warm \
  --timeout 330 --prelude "$P" combine > "$OUT/combine_${MIN}_log.txt" 2>&1
python3 -c "
import json
for r in json.load(open('$OUT/combine_$MIN.json')):
    print('$MIN', r.get('run'), r.get('rc'), r.get('wall_s'), r.get('seconds'), r.get('phase_start_seconds'), r.get('timed_out_after_s'))
"
