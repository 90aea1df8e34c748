# nuejax borexino with its magnetic-moment and NSI stages beside the others (NUEJAX_AHEAD=1) and in turn
# (NUEJAX_AHEAD=0): first runs on empty cache folders, warm runs on the first one's; run on the GPU machine
# from the repository root with OUT set (iminuit carried as a wheel in .whl/). Walls in $OUT/walls.txt,
# each run's JSON and summary beside it. Results of 2026-11-29: results/h200_2026-11-29_sixteenth/.
set -u
export PYTHONPATH=/tmp/site:$PWD
ls /tmp/site/iminuit >/dev/null 2>&1 || pip install -q --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/info.txt; nproc >> $OUT/info.txt
run() { # label cache ahead
  local t0=$(date +%s.%N)
  NUEJAX_CACHE_DIR=$2 NUEJAX_AHEAD=$3 python -m nuejax.cli borexino --json --no-plots --out /tmp/o_$1 > $OUT/$1.json 2> $OUT/$1.err
  local t1=$(date +%s.%N)
  echo "$1 rc=$? wall=$(python -c "print(round($t1-$t0,2))")" | tee -a $OUT/walls.txt
  cp /tmp/o_$1/summary.json $OUT/$1_summary.json 2>/dev/null
}
run first_on /tmp/c1 1
run warm_on /tmp/c1 1
run warm_off /tmp/c1 0
run warm_on2 /tmp/c1 1
run first_off /tmp/c2 0
