#!/usr/bin/env bash
# One device-machine session of the benchmarks (docs/benchmarks.md says how it was run):
#   bash benchmarks/gpu_session.sh OUTDIR [TAG]
# Installs carried wheels (.whl/, for iminuit) if present, records the device, driver and JAX
# version, and runs the paper workload in float64 (with fits and scan) and float32.
set -u
out=${1:?output directory}; tag=${2:-gpu}
mkdir -p "$out"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; date -u +%F;
  python3 -c "import jax; print('jax', jax.__version__, jax.devices())"; } > "$out/${tag}_info.txt" 2>&1
python3 benchmarks/run.py --out "$out/${tag}_paper_float64.json" > "$out/${tag}_f64.log" 2>&1 || echo "float64 run failed" >&2
python3 benchmarks/run.py --no-fit --dtype float32 --out "$out/${tag}_paper_float32.json" > "$out/${tag}_f32.log" 2>&1 || echo "float32 run failed" >&2
tail -3 "$out/${tag}_f64.log" "$out/${tag}_f32.log"
