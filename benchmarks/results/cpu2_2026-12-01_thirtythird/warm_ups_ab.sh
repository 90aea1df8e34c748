#!/bin/bash
# `nuejax combine` first runs on empty cache folders, 2 cores: B, a snapshot of 9504d26 with the ε
# stage's three solver programs compiled ahead on the spare core while the μ_ν stage fits
# (run_combine: warm_ups with min_spare=1 where the stages run in turn; not committed), then A,
# 9504d26 itself. Snapshots in /tmp/gm/snapA and /tmp/gm/snapB (git archive / the working tree).
for side in B A; do
  rm -rf /tmp/gm/c_ab_$side
  t0=$(date +%s.%N)
  (cd /tmp/gm/snap$side && NUEJAX_CACHE_DIR=/tmp/gm/c_ab_$side PYTHONPATH=/tmp/gm/snap$side timeout 900 /work/main/.venv/bin/python -m nuejax combine --json --no-plots --out /tmp/gm/s33/o_ab_$side > /tmp/gm/s33/ab_$side.json 2> /tmp/gm/s33/ab_$side.err)
  echo "$side rc=$? wall=$(python3 -c "import time; print(round(time.time()-$t0,2))")" >> /tmp/gm/s33/ab_walls.txt
done
