#!/usr/bin/env bash
# One device-machine session of the toy-throughput benchmarks (docs/benchmarks.md, "Toys"):
#   bash benchmarks/limits_session.sh OUTDIR TAG [extra args of toy_throughput.py]
# Records the device, driver and JAX version; runs benchmarks/toy_throughput.py on all devices,
# and on one device when there are several.
set -u
out=${1:?output directory}; tag=${2:?tag}; shift 2
mkdir -p "$out"
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; date -u +%F;
  python3 -c "import jax; print('jax', jax.__version__, jax.devices())"; } > "$out/${tag}_info.txt" 2>&1
n=$(python3 -c "import jax; print(len(jax.devices()))")
python3 benchmarks/toy_throughput.py --json "$out/${tag}_toys_${n}dev.json" "$@" > "$out/${tag}_toys_${n}dev.log" 2>&1 \
  || echo "toy run on $n devices failed" >&2
if [ "$n" -gt 1 ]; then
  CUDA_VISIBLE_DEVICES=0 python3 benchmarks/toy_throughput.py --json "$out/${tag}_toys_1dev.json" "$@" \
    > "$out/${tag}_toys_1dev.log" 2>&1 || echo "toy run on 1 device failed" >&2
fi
tail -n 4 "$out"/${tag}_toys_*.log
