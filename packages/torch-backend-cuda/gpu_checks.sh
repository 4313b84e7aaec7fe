#!/usr/bin/env bash
# Every check of the gpu backend that needs a GPU, and the benchmark against PyTorch's own CUDA
# backend, in one command. Run from the repository root on a machine with an NVIDIA GPU, the CUDA
# toolkit (nvcc) and a CUDA build of torch 2.11-2.15 already installed:
#   bash packages/torch-backend-cuda/gpu_checks.sh [OUT_DIR]
# It builds core and the cuda package against that torch, then runs: the package's tests (core's
# conformance kit on `gpu`, compute capability, staged all_reduce, TF32), the OpInfo sweep on `gpu`
# against CPU (GPU tolerances: float32's defaults, as on every backend), and
# `python -m torch_backend.bench.reference --device gpu --reference cuda`. Results land in OUT_DIR
# (default build/gpu-checks): logs, bench JSON and chart.
set -euo pipefail
out=${1:-build/gpu-checks}
mkdir -p "$out"
python=${PYTHON:-python3}
export PIP_DISABLE_PIP_VERSION_CHECK=1
$python -m pip install -q hatchling pytest expecttest matplotlib 'nvidia-cublas>=13,<14'
$python -m pip install -q --no-build-isolation --no-deps -e packages/torch-backend-core
$python -m pip install -q --no-build-isolation --no-deps -e packages/torch-backend-cuda
TORCH_BACKEND=gpu $python -m torch_backend | tee "$out/report.txt"
status=0
$python -m pytest packages/torch-backend-cuda/tests -rs 2>&1 | tee "$out/tests.log" || status=1
TORCH_BACKEND=gpu $python -m torch_backend.testing.opinfo \
  --known packages/torch-backend-cuda/tests/known_failures.json \
  --json "$out/opinfo.json" 2>&1 | tee "$out/opinfo.log" || status=1
TORCH_BACKEND=gpu $python -m torch_backend.bench.reference --device gpu --reference cuda \
  --json "$out/gpu-vs-cuda.json" 2>&1 | tee "$out/bench.log" || status=1
exit $status
