set -u
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
run() {  # label pythonpath cache
  for r in first warm warm; do
    s=$(date +%s.%N)
    PYTHONPATH=/tmp/site:$2 NUEJAX_CACHE_DIR=$3 python -m nuejax demo --no-plots --out /tmp/o_$1 > "$OUT/demo_$1_$r.txt" 2>&1
    e=$(date +%s.%N); echo "$1 $r $(echo "$e - $s" | bc)" >> "$OUT/ab.txt"
  done
}
run new $PWD /tmp/cn
run old $PWD/old /tmp/co
run new2 $PWD /tmp/cn2
cat "$OUT/ab.txt"
for f in "$OUT"/demo_*_warm.txt; do echo $f; grep -E "built|migrad|CL \[|total" $f; done
