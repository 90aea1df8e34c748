#!/bin/bash
# Second device call (nineteenth session, 54d05b6: launches of at least 8 rows on accelerators): the commands' first and warm runs on one H200 after the
# fits of one data set share one solver program (fitting.row_solver). Run from the repository
# root with the wheels of iminuit, uproot and their dependencies in .whl/ (benchmarks/NOTES.md).
set -u
export PYTHONPATH=/tmp/site:$PWD
pip install -q --no-deps --target /tmp/site .whl/*.whl 2>&1 | tail -2
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
python -c "import jax; print(jax.__version__, jax.devices())" >> "$OUT/device.txt" 2>&1
t=benchmarks/timings/command_times.py
python $t --cache /tmp/c_b --out "$OUT/commands.json" --runs first,warm,warm --timeout 250 borexino > "$OUT/log.txt" 2>&1
python $t --cache /tmp/c_d --out "$OUT/commands.json" --runs first,warm --timeout 100 demo >> "$OUT/log.txt" 2>&1
python $t --cache /tmp/c_x --out "$OUT/commands.json" --runs first,warm --timeout 260 xenonnt >> "$OUT/log.txt" 2>&1
tail -3 "$OUT/log.txt"
