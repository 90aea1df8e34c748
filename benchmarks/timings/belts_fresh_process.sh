# The Feldman-Cousins belts of toy_throughput.py (default GPU sizes) end to end in fresh processes,
# on one GPU and on two (CUDA_VISIBLE_DEVICES), each count with caches of its own: a first process on
# empty caches, then warm processes with the toy-fit kernels kept across processes (NUEJAX_EXPORTED
# on, the default) and without (NUEJAX_EXPORTED=0: traced in every process, JAX's compilation cache
# only). Run on the GPU machine from the repository root with OUT set (wheels in .whl/); wall times
# in $OUT/walls.txt, each run's JSON beside it.
set -u
export PYTHONPATH=/tmp/site:$PWD
ls /tmp/site/iminuit >/dev/null 2>&1 || pip install -q --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export XLA_FLAGS="--xla_gpu_enable_triton_gemm=false --xla_gpu_autotune_level=0" XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/belts_info.txt
run() { # label gpus exported
  local t0=$(date +%s.%N)
  CUDA_VISIBLE_DEVICES=$2 NUEJAX_CACHE_DIR=/tmp/nc_$2 NUEJAX_EXPORTED=$3 python benchmarks/timings/toy_throughput.py \
    --no-throughput --compilation-cache /tmp/jc_$2 --json $OUT/belts_$1.json > $OUT/belts_$1.log 2>&1
  local rc=$? t1=$(date +%s.%N)
  echo "$1 rc=$rc wall=$(python -c "print(round($t1-$t0,2))")" | tee -a $OUT/walls.txt
}
for g in 0 0,1; do
  n=$(echo $g | tr ',' '\n' | wc -l)
  run ${n}gpu_first $g 1
  run ${n}gpu_warm_kept $g 1
  run ${n}gpu_warm_traced $g 0
done
