#!/bin/bash
# First device call (twenty-third session), at the commit that adds it: the curvature term one
# parameter at a time against one vmap on one H200 (benchmarks/probes/curvature_rows_probe.py),
# then `nuejax xenonnt` first (empty caches) and warm, as main runs it (vmap on a GPU) and with
# by_direction=True (a prelude; its own cache folder: the on-disk programs are keyed by the code).
# From the repository root, wheels in .whl/.
set -u
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
timeout 200 python benchmarks/probes/curvature_rows_probe.py --rows 1,64,512 --calls 10 > "$OUT/probe_log.txt" 2>&1
echo "probe rc $?" >> "$OUT/probe_log.txt"
SPLIT="import functools, nuejax.inference.fitting as F; F.curvature_term = functools.partial(F.curvature_term, by_direction=True)"
python benchmarks/timings/command_times.py --cache /tmp/c_v --out "$OUT/xenonnt_vmap.json" --runs first,warm \
  --timeout 150 xenonnt > "$OUT/xenonnt_vmap_log.txt" 2>&1
python benchmarks/timings/command_times.py --cache /tmp/c_s --out "$OUT/xenonnt_split.json" --runs first,warm \
  --timeout 150 --prelude "$SPLIT" xenonnt > "$OUT/xenonnt_split_log.txt" 2>&1
python3 -c "
import json
for f in ('xenonnt_vmap', 'xenonnt_split'):
    for r in json.load(open('$OUT/' + f + '.json')):
        print(f, r.get('run'), r.get('rc'), r.get('wall_s'), r.get('seconds'), r.get('phase_start_seconds'), r.get('timed_out_after_s'))
"
grep -h '^{' "$OUT/probe_log.txt" | python3 -c "
import json, sys
for l in sys.stdin:
    r = json.loads(l); print(r['problem'], r['rows'], {k: [round(v, 2) for v in vs] for k, vs in r['ms'].items()}, r['max_rel_diff_hessian'])
"
tail -3 "$OUT/probe_log.txt"
