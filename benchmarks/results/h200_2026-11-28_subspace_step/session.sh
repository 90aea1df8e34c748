#!/bin/bash
# run from the repository root on the device (2026-11-28, H200), with .whl/ holding iminuit's wheel
# one device call: toy throughput with the subspace re-solve (new) and without (old), then nuejax borexino first and warm
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
python3 -c "import jax; print(jax.__version__, jax.devices())" >> $OUT/gpu.txt
export NUEJAX_CACHE_DIR=/tmp/toycache
T0=$(date +%s)
timeout 150 python3 benchmarks/timings/toy_throughput.py --no-belts --json $OUT/toys_new.json > $OUT/toys_new.log 2>&1
echo "toys_new rc=$? s=$(( $(date +%s) - T0 ))" >> $OUT/steps.txt
cp nuejax/inference/newton.py /tmp/newton_new.py
cp bench_old_newton.py nuejax/inference/newton.py  # bench_old_newton.py: git show 5cb2eca~1:nuejax/inference/newton.py
T0=$(date +%s)
timeout 150 python3 benchmarks/timings/toy_throughput.py --no-belts --json $OUT/toys_old.json > $OUT/toys_old.log 2>&1
echo "toys_old rc=$? s=$(( $(date +%s) - T0 ))" >> $OUT/steps.txt
cp /tmp/newton_new.py nuejax/inference/newton.py
unset NUEJAX_CACHE_DIR
T0=$(date +%s)
timeout 290 python3 benchmarks/timings/command_times.py borexino --cache /tmp/bxcache --out $OUT/command_times.json --runs first,warm --timeout 230 > $OUT/borexino.log 2>&1
echo "borexino rc=$? s=$(( $(date +%s) - T0 ))" >> $OUT/steps.txt
