#!/bin/bash
# `nuejax combine` with the combination's ε region seeded from the experiments' end points (a
# snapshot of the working tree that became 7d63c53, in /tmp/gm/snapC), 2 cores: the first run on an
# empty cache folder, then --recompute (warm)
rm -rf /tmp/gm/c_seed
for label in first recompute; do
  extra=""; [ $label = recompute ] && extra="--recompute"
  t0=$(date +%s.%N)
  (cd /tmp/gm/snapC && NUEJAX_CACHE_DIR=/tmp/gm/c_seed PYTHONPATH=/tmp/gm/snapC timeout 900 /work/main/.venv/bin/python -m nuejax combine --json --no-plots --out /tmp/gm/s33/o_seed_$label $extra > /tmp/gm/s33/seed_$label.json 2> /tmp/gm/s33/seed_$label.err)
  echo "$label rc=$? wall=$(python3 -c "import time; print(round(time.time()-$t0,2))")" >> /tmp/gm/s33/seed_walls.txt
done
