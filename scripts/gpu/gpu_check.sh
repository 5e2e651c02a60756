#!/usr/bin/env bash
# The GPU checks of the CUDA backend in one run (docs/cuda.md): build with
# this machine's nvcc, the operator fixtures and zoo models on the GPU
# against MXNet's goldens (and against the CPU path where the weights are
# random), compute-sanitizer on a small model, a benchmark against PyTorch.
#
#   bash scripts/gpu/gpu_check.sh [OUT_DIR]
#
# Needs an NVIDIA GPU, nvcc, python3 with numpy (torch and torchvision for
# the benchmark). MXNet's zoo fixtures are read from build/gpu_carry (made
# by scripts/gpu/carry.sh here; models whose params are absent there are
# checked with random weights only). Everything lands in OUT_DIR (default
# $OUT, else build/gpu_check), packed as gpu_check.tar.gz beside summary.txt.
set -u
out=${1:-${OUT:-build/gpu_check}}
work=build/gpu_check
mkdir -p "$out" "$work"
{
  echo "== $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -2 | head -1
  python3 -c 'import platform; print("python", platform.python_version())'
} 2>&1 | tee "$work/summary.txt"

start=$(date +%s)
python3 amalgamation/amalgamate.py --out-dir build > /dev/null
make cuda CUDA_ARCH="${CUDA_ARCH:--arch=native}" > "$work/build.log" 2>&1
status=$?
echo "== build: exit $status, $(( $(date +%s) - start )) s, $(grep -c -i warning "$work/build.log") warning lines" \
  | tee -a "$work/summary.txt"
if [ $status -ne 0 ]; then
  tail -40 "$work/build.log"
  cp "$work/build.log" "$out/" 2>/dev/null
  exit 1
fi

# cuDNN as PyTorch's wheels install it (nvidia-cudnn-cu13): the library the
# predictors open (MXLITE_CUDNN names it, so that a failure to load is an
# error, not a silent fallback) and the headers that cudnn_abi_check.cc
# checks mxlite's declarations against.
cudnn_dir=$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null)
if [ -n "$cudnn_dir" ] && [ -e "$cudnn_dir/lib/libcudnn.so.9" ]; then
  export MXLITE_CUDNN=$cudnn_dir/lib/libcudnn.so.9
  nvcc -x cu -std=c++17 -I"$cudnn_dir/include" -c scripts/gpu/cudnn_abi_check.cc -o /dev/null \
    > "$work/cudnn_abi.log" 2>&1
  echo "== cuDNN $MXLITE_CUDNN; declarations against its headers: exit $?" | tee -a "$work/summary.txt"
  head -5 "$work/cudnn_abi.log" | tee -a "$work/summary.txt"
else
  echo "== no cuDNN found (python3 -c 'import nvidia.cudnn'); convolutions run as im2col GEMM" \
    | tee -a "$work/summary.txt"
fi

export PYTHONUNBUFFERED=1
run_stage() {  # name timeout [command prefix...]
  local stage=$1 limit=$2
  shift 2
  local begin=$(date +%s)
  timeout "$limit" "$@" python3 scripts/gpu/gpu_check.py "$stage" --out "$work" \
    > "$work/$stage.txt" 2>&1
  local code=$?
  echo "== $stage: exit $code, $(( $(date +%s) - begin )) s" | tee -a "$work/summary.txt"
  grep -v '^  FAIL' "$work/$stage.txt" | head -${STAGE_LINES:-40} | tee -a "$work/summary.txt"
  grep '^  FAIL' "$work/$stage.txt" | head -30 | tee -a "$work/summary.txt"
}
# The Python package with the CUDA backend, for the python stage.
if [ "${LIMIT_PYTHON:-180}" != 0 ]; then
  begin=$(date +%s)
  MXLITE_CUDA=1 CUDA_ARCH="${CUDA_ARCH:--arch=native}" python3 -m pip install \
    --no-build-isolation --no-deps --upgrade --target "$work/python-cuda" . \
    > "$work/python-build.log" 2>&1
  echo "== python package build: exit $?, $(( $(date +%s) - begin )) s" | tee -a "$work/summary.txt"
fi

# Each stage's time limit in seconds (LIMIT_<STAGE>); 0 leaves a stage out.
for stage in ops random zoo bench python probe sanitize; do
  limit_var="LIMIT_${stage^^}"
  limit=${!limit_var:-180}
  [ $stage = probe ] && limit=${!limit_var:-0}  # a diagnosis, asked for by LIMIT_PROBE
  [ "$limit" = 0 ] && continue
  if [ $stage = sanitize ]; then
    command -v compute-sanitizer > /dev/null || { echo "== no compute-sanitizer"; continue; }
    run_stage sanitize "$limit" compute-sanitizer --tool memcheck --error-exitcode 9
  else
    run_stage $stage "$limit"
  fi
done
tar czf "$out/gpu_check.tar.gz" -C build --exclude gpu_check/python-cuda gpu_check
cp "$work/summary.txt" "$out/summary.txt"
