#!/bin/bash
# nuejax xenonnt on 2 cores, bfd2c80's package (before) and this checkout's (after), alternated
cd /work/main
run() { # label side cache
  local t0=$(date +%s.%N)
  if [ "$2" = before ]; then pp=/work/main/.ab_before; else pp=/work/main; fi
  NUEJAX_CACHE_DIR=$3 PYTHONPATH=$pp timeout 900 .venv/bin/python -m nuejax xenonnt --json --no-plots --out /tmp/gm/s26/xcpu/o_$1 > /tmp/gm/s26/xcpu/$1.json 2> /tmp/gm/s26/xcpu/$1.err
  local rc=$? t1=$(date +%s.%N)
  echo "$1 rc=$rc wall=$(python3 -c "print(round($t1-$t0,1))")" >> /tmp/gm/s26/xcpu/walls.txt
}
rm -rf /tmp/gm/s26/xcpu/c_a /tmp/gm/s26/xcpu/c_b
run before_first before /tmp/gm/s26/xcpu/c_a
run after_first after /tmp/gm/s26/xcpu/c_b
run before_warm before /tmp/gm/s26/xcpu/c_a
run after_warm after /tmp/gm/s26/xcpu/c_b
