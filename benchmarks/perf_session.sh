#!/usr/bin/env bash
# One device-machine session of the performance benchmarks (docs/benchmarks.md says how it ran):
#   bash benchmarks/perf_session.sh OUTDIR TAG [STEPS]
# STEPS, any of: paper (run.py float64 with fits), profile (profile_general.py), float32,
# build (build_time.py), floating (floating_response.py, default model: 2000 recoil bins, N_p 90-950),
# floating200 (the same on 200 recoil bins, as on the CPU), general (general_case.py),
# trace (gpu_trace.py), dispatch (dispatch_probe.py), migrad (migrad_profile.py),
# blocks (kernel_blocks_ab.py: the fold by kernel blocks against the dense product), gridprobe
# (grid_fold_probe.py: the grid fold's cell-lookup methods), scanconv (scan_convergence.py),
# fitoverhead (fit_overhead_probe.py: a fit's time outside MIGRAD's calls, gradients ahead of time);
# default "paper profile". Installs carried wheels (.whl/, for iminuit) if present and records the
# device, driver and JAX version. Model tensors are cached in a temporary folder, so the steps
# after the first load them instead of rebuilding (nuejax.cache).
set -u
out=${1:?output directory}; tag=${2:?tag}; steps=${3:-paper profile}
mkdir -p "$out"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
export NUEJAX_CACHE_DIR=${NUEJAX_CACHE_DIR:-/tmp/nuejax_perf_cache}
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null; date -u +%F;
  python3 -c "import jax; print('jax', jax.__version__, jax.devices())"; } > "$out/${tag}_info.txt" 2>&1
for s in $steps; do
  t0=$(date +%s)
  case $s in
    paper) python3 benchmarks/run.py --out "$out/${tag}_paper_float64.json" > "$out/${tag}_paper.log" 2>&1 ;;
    profile) python3 benchmarks/profile_general.py --out "$out/${tag}_profile_general.json" > "$out/${tag}_profile.log" 2>&1 ;;
    float32) python3 benchmarks/run.py --no-fit --dtype float32 --out "$out/${tag}_paper_float32.json" > "$out/${tag}_f32.log" 2>&1 ;;
    build) python3 benchmarks/build_time.py --repeat 2 --out "$out/${tag}_build_time.json" > "$out/${tag}_build.log" 2>&1 ;;
    floating) python3 benchmarks/floating_response.py --n-T 2000 --window 90 950 --signals all --json "$out/${tag}_floating_response.json" > "$out/${tag}_floating.log" 2>&1 ;;
    floating200) python3 benchmarks/floating_response.py --n-T 200 --window 90 950 --signals all --json "$out/${tag}_floating_response_nT200.json" > "$out/${tag}_floating200.log" 2>&1 ;;
    trace) python3 benchmarks/gpu_trace.py --out "$out/${tag}_trace_value_and_grad.json" > "$out/${tag}_trace.log" 2>&1 ;;
    dispatch) python3 benchmarks/dispatch_probe.py > "$out/${tag}_dispatch_probe.json" 2> "$out/${tag}_dispatch.log" ;;
    migrad) python3 benchmarks/migrad_profile.py --out "$out/${tag}_migrad_profile.json" > "$out/${tag}_migrad.log" 2>&1 ;;
    blocks) python3 benchmarks/kernel_blocks_ab.py --rows 256 --out "$out/${tag}_kernel_blocks_ab.json" > "$out/${tag}_blocks.log" 2>&1 ;;
    gridprobe) python3 benchmarks/grid_fold_probe.py --n-T 2000 --out "$out/${tag}_grid_fold_probe.json" > "$out/${tag}_gridprobe.log" 2>&1 ;;
    scanconv) python3 benchmarks/scan_convergence.py --out "$out/${tag}_scan_convergence.json" > "$out/${tag}_scanconv.log" 2>&1 ;;
    fitoverhead) python3 benchmarks/fit_overhead_probe.py --out "$out/${tag}_fit_overhead_probe.json" > "$out/${tag}_fitoverhead.log" 2>&1 ;;
    general) python3 benchmarks/general_case.py --n-T 2000 --json "$out/${tag}_general_case.json" > "$out/${tag}_general.log" 2>&1 ;;
    *) echo "unknown step $s" >&2 ;;
  esac
  echo "$s: rc $? in $(( $(date +%s) - t0 )) s" | tee -a "$out/${tag}_steps.txt"
done
