#!/bin/bash
# Third device call (twenty-first session): `nuejax combine`'s first run on an empty cache with the
# compile log (benchmarks/timings/compile_log.py, which now reports a run cut short too), then its
# warm run on the caches it left, on one H200. From the repository root, wheels in .whl/.
set -u
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
rm -rf /tmp/c_c && mkdir -p /tmp/c_c
NUEJAX_CACHE_DIR=/tmp/c_c timeout 400 python benchmarks/timings/compile_log.py --out "$OUT/combine_compile_log.json" \
  --top 40 -- combine --json --no-plots --out /tmp/c_c-out > "$OUT/combine_first.txt" 2>&1
echo "rc=$?" >> "$OUT/combine_first.txt"
python benchmarks/timings/command_times.py --cache /tmp/c_c --out "$OUT/commands.json" --runs warm \
  --timeout 150 combine > "$OUT/log.txt" 2>&1
grep -v "Finished XLA" "$OUT/combine_first.txt" | tail -30
python3 -c "
import json
for r in json.load(open('$OUT/commands.json')):
    print(r['command'][:16], r.get('run'), r.get('rc'), r.get('wall_s'), r.get('seconds'), r.get('phase_start_seconds'), r.get('timed_out_after_s'))
"
