#!/bin/bash
# nuejax demo and nuejax borexino on 2 CPU cores at HEAD (/work/main): a first run on an empty cache
# folder, then two warm runs, each command in turn
cd /tmp/gm/cmds
rm -rf c_demo c_borexino
run() { # label command cache
  local t0=$(date +%s.%N)
  NUEJAX_CACHE_DIR=$PWD/$3 timeout 1200 /work/main/.venv/bin/python -m nuejax $2 --json --no-plots --out $PWD/o_$1 \
    > $1.json 2> $1.err
  local rc=$? t1=$(date +%s.%N)
  echo "$1 rc=$rc wall=$(python3 -c "print(round($t1-$t0,2))")" | tee -a walls.txt
  cp o_$1/summary.json ${1}_summary.json 2>/dev/null
}
run demo_first demo c_demo
run demo_warm demo c_demo
run demo_warm2 demo c_demo
run borexino_first borexino c_borexino
run borexino_warm borexino c_borexino
run borexino_warm2 borexino c_borexino
