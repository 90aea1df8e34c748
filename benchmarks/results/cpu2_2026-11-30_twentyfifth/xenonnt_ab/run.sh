#!/bin/bash
# nuejax xenonnt on 2 CPU cores: 07f82d1 (/tmp/gm/wt0) against 701aca3 (/tmp/gm/wt), first runs on
# empty cache folders, then a warm run each, alternated
cd /tmp/gm/cpu_ab
rm -rf c_before c_after
run() { # label tree cache
  local t0=$(date +%s.%N)
  NUEJAX_CACHE_DIR=$PWD/$3 PYTHONPATH=$2 timeout 1200 /work/main/.venv/bin/python -m nuejax xenonnt --json --no-plots \
    --out $PWD/o_$1 > $1.json 2> $1.err
  local rc=$? t1=$(date +%s.%N)
  echo "$1 rc=$rc wall=$(python3 -c "print(round($t1-$t0,2))")" | tee -a walls.txt
  cp o_$1/summary.json ${1}_summary.json 2>/dev/null
}
run before_first /tmp/gm/wt0 c_before
run after_first /tmp/gm/wt c_after
run before_warm /tmp/gm/wt0 c_before
run after_warm /tmp/gm/wt c_after
