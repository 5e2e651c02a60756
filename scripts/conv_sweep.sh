#!/usr/bin/env bash
# The long differential sweep of the convolution algorithms
# (tests/cpp/conv_sweep_test.cc): every algorithm forced on every random
# geometry its applies() accepts, against the double-precision reference,
# under each instruction-set cap, after replaying MXNet's cases.
#
#   scripts/conv_sweep.sh [CASES_PER_ISA] [SEED]     (defaults 40000, 1000)
#
# Needs build/fixtures/conv_sweep (scripts/run_tests.sh makes it, or run
# scripts/conv_sweep_cases.py in the oracle venv). With
# MXLITE_SWEEP_AARCH64=N it also runs N cases of the aarch64 build (the NEON
# GEMM under every algorithm) under qemu-aarch64. docs/testing.md records
# the last run.
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-40000}
seed=${2:-1000}
out=build/conv-sweep
mkdir -p "$out"
python3 amalgamation/amalgamate.py --out-dir "$out" >/dev/null
c++ -std=c++17 -O2 -Wall -Wextra tests/cpp/conv_sweep_test.cc "$out/mxlite-all.cc" \
  -o "$out/conv_sweep_test" -lpthread
lscpu | grep 'Model name' || true
total=0
for isa in avx512 avx2 scalar; do
  MXLITE_ISA=$isa "$out/conv_sweep_test" --mxnet build/fixtures/conv_sweep --cases "$cases" \
    --seed "$seed" | tee "$out/$isa.log" | tail -12
  seed=$((seed + 1))
done
if [ -n "${MXLITE_SWEEP_AARCH64:-}" ]; then
  aarch64-linux-gnu-g++ -std=c++17 -O1 -static tests/cpp/conv_sweep_test.cc \
    "$out/mxlite-all.cc" -o "$out/conv_sweep_test_aarch64" -lpthread
  qemu-aarch64 "$out/conv_sweep_test_aarch64" --mxnet build/fixtures/conv_sweep \
    --cases "$MXLITE_SWEEP_AARCH64" --seed "$seed" | tee "$out/aarch64.log" | tail -12
fi
