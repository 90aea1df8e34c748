#!/bin/bash
# run from the repository root on the device, with .whl/ holding iminuit's wheel
# one device call (H200, 2026-11-28): nuejax borexino first and warm, then nuejax xenonnt first, at ba887e6
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
python3 -c "import jax; print(jax.__version__, jax.devices())" >> $OUT/gpu.txt
T0=$(date +%s)
timeout 300 python3 benchmarks/timings/command_times.py borexino --cache /tmp/bxcache --out $OUT/command_times.json --runs first,warm --timeout 240 > $OUT/borexino.log 2>&1
echo "borexino rc=$? s=$(( $(date +%s) - T0 ))" >> $OUT/steps.txt
T0=$(date +%s)
timeout 230 python3 benchmarks/timings/command_times.py xenonnt --cache /tmp/xecache --out $OUT/command_times.json --runs first --timeout 220 > $OUT/xenonnt.log 2>&1
echo "xenonnt rc=$? s=$(( $(date +%s) - T0 ))" >> $OUT/steps.txt
