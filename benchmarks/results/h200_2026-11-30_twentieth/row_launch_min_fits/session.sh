#!/bin/bash
# Third device call (twentieth session): what a least launch of 64 rows (fitting.ROW_LAUNCH_MIN)
# costs where a row is costly: the paper workload's multi-start fit (general and fast path) with 8
# and with 64, and `nuejax demo` (the general path) first and warm with each, on one machine.
set -u
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
for n in 8 64; do
  timeout 200 python benchmarks/probes/multistart_probe.py --row-launch-min $n --out "$OUT/multistart_min$n.json" \
    > "$OUT/multistart_min$n.log" 2>&1
  python benchmarks/timings/command_times.py --cache /tmp/c_d$n --out "$OUT/demo.json" --runs first,warm,warm \
    --timeout 100 --prelude "import nuejax.inference.fitting as f; f.ROW_LAUNCH_MIN = $n" demo >> "$OUT/log.txt" 2>&1
done
python3 -c "
import json
for n in (8, 64):
    d = json.load(open('$OUT/multistart_min%d.json' % n))
    for k, r in d['paths'].items():
        print(n, k, 'first %.2f fit %.3f' % (r['first_s'], r['multistart_s']), ['%.3f' % x for x in r['launches_s']],
              'vgh8 %.2f vgh64 %.2f ms' % (r['vgh_batched_ms'], r['vgh_64_rows_ms']))
for r in json.load(open('$OUT/demo.json')):
    print(r['prelude'][-2:], r['run'], r['rc'], r['wall_s'])
"
