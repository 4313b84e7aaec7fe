#!/usr/bin/env bash
# Every check of the gpu backend that needs a GPU, and the benchmark against PyTorch's own CUDA
# backend, in one command. Run from the repository root on a machine with an NVIDIA GPU and a CUDA
# build of torch 2.11-2.15 already installed:
#   bash packages/torch-backend-cuda/gpu_checks.sh [--pending] [OUT_DIR]
# --pending: only what failed, missed its target or never finished on the last GPU, most important
# first, each step capped so that one call of a 15-minute lease settles it (the kit's torchvision,
# reduce-overhead, stress and flight-recorder tests; then alone the sum, ResNet-18 and GPT cases against CUDA, the sum's kernels
# under Nsight Compute, the compiled MLP step and its profile on both devices, the ResNet-18 step's
# profile, and graph replay against CUDAGraph). OUT_DIR/summary.txt gains each step's result as it ends.
# Steps, each logged to OUT_DIR/STEP.log (default build/gpu-checks) with its exit status and time:
#   install   core, cuda and fake: from GPU_CHECKS_WHEELS (a folder of wheels built elsewhere against
#             this torch and Python: the lent GPU machines reach no registry and their lease is short),
#             else built here, editable (needs nvcc, and hatchling and nlohmann-json or a registry)
#   report    `python -m torch_backend` with TORCH_BACKEND=gpu, and a smoke test of a few ops against CPU
#   then side by side (they check correctness, not speed):
#   kit       core's conformance kit on `gpu` (with pytest-xdist where installed)
#   tests     the package's GPU tests (compute capability, CUDA_VISIBLE_DEVICES, staged all_reduce,
#             NCCL with one rank and two ranks on one GPU, cuBLAS and TF32) and
#             tests/test_coexistence.py (CUDA training with the backends installed)
#   opinfo    the OpInfo sweep on `gpu` against CPU (float32's default tolerances, as on every backend;
#             the known failures: core's list and the package's known_failures_gpu.json over it)
#   then alone (they time):
#   bench     `python -m torch_backend.bench.reference --device gpu --reference cuda` (BENCH_ROUNDS
#             process pairs per case, default 5; BENCH_REPEATS timings each, default 5; BENCH_CASES:
#             ';'-separated parts of case names, default every case)
#   profile   some cases' ops by time on gpu and on cuda, launch blocking on both (PROFILE_CASES, as
#             BENCH_CASES; default the small add, MLP, CNN and GPT steps)
#   compile   `python -m torch_backend.bench.compile` on gpu (Inductor's Triton kernels) and, in a
#             process of its own with no backend active, on cuda: compiled steps side by side
#             (compile-gpu.json, compile-cuda.json; their device_compiled_ms compare)
# GPU_CHECKS_LIMIT_S caps every step's time limit (a lease's minutes are few; default: no cap).
# GPU_CHECKS_INSTALLED=1 skips the install step (a warm machine's second call; a dry run elsewhere).
# GPU_CHECKS_TAR=FILE.tgz: OUT_DIR packed into FILE after every step (a lease returns few files:
# put OUT_DIR elsewhere and FILE where the lease collects its results).
# Exit status: 0 when every step passed; the failed steps are listed.
set -uo pipefail
pending=""
if [ "${1:-}" = "--pending" ]; then
  pending=1
  shift
fi
out=${1:-build/gpu-checks}
mkdir -p "$out"
python=${PYTHON:-python3}
wheels=${GPU_CHECKS_WHEELS:-}
# NCCL_MULTI_RANK_GPU_ENABLE: the kit's and the tests' ranks share one GPU (NCCL 2.30+).
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1 NCCL_MULTI_RANK_GPU_ENABLE=1
state=$(mktemp -d)

# step NAME LIMIT_S COMMAND...: runs COMMAND with a time limit, its output in $out/NAME.log.
step() {
  local name=$1 limit=$2 start=$SECONDS rc
  shift 2
  limit=$((limit < ${GPU_CHECKS_LIMIT_S:-$limit} ? limit : ${GPU_CHECKS_LIMIT_S:-$limit}))
  # through bash: COMMAND may be one of the functions below (timeout runs programs only)
  timeout "$limit" bash -c '"$@"' "$name" "$@" >"$out/$name.log" 2>&1
  rc=$?
  echo "$rc $((SECONDS - start))" >"$state/$name"
}
# show NAME: the end of a step's log and its result (also appended to $out/summary.txt).
show() {
  local rc seconds
  read -r rc seconds <"$state/$1"
  echo "$1: exit $rc in $seconds s" >>"$out/summary.txt"
  echo "==== $1: exit $rc in $seconds s ($out/$1.log)"
  tail -n "${2:-30}" "$out/$1.log"
  [ "$rc" -eq 0 ] || echo "$1" >>"$state/failed"
  if [ -n "${GPU_CHECKS_TAR:-}" ]; then tar czf "$GPU_CHECKS_TAR" -C "$out" .; fi
}

install() {
  if [ -n "${GPU_CHECKS_INSTALLED:-}" ]; then
    echo "GPU_CHECKS_INSTALLED: using the packages installed for $python"
    return 0
  fi
  local pip=("$python" -m pip install -q) missing
  [ -n "$wheels" ] && pip+=(--no-index --find-links "$wheels")
  missing=$("$python" - "$wheels" <<'EOF'
import importlib.util, sys
need = {"pytest": "pytest", "expecttest": "expecttest", "nvidia.cublas": "nvidia-cublas>=13,<14",
        "nvidia.nccl": "nvidia-nccl-cu13>=2.27,<3", "nvidia.cudnn": "nvidia-cudnn-cu13>=9.10,<10"}
if not sys.argv[1]:
    need["hatchling"] = "hatchling"
    need["nlohmann_json"] = "nlohmann-json"  # core's build (PyTorch's flight-recorder header)
print(" ".join(spec for module, spec in need.items() if importlib.util.find_spec(module) is None))
EOF
  ) || return 1
  if [ -n "$missing" ]; then "${pip[@]}" $missing || return 1; fi
  if [ -n "$wheels" ]; then
    "${pip[@]}" --no-deps --force-reinstall "$wheels"/torch_backend_{core,cuda,fake}-*.whl
  else
    for package in core cuda fake; do
      "${pip[@]}" --no-build-isolation --no-deps -e "packages/torch-backend-$package" || return 1
    done
  fi
}

smoke() {
  TORCH_BACKEND=gpu "$python" -m torch_backend || return 1
  TORCH_BACKEND=gpu "$python" - <<'EOF'
import torch
torch.manual_seed(0)
x, w = torch.randn(300, 257), torch.randn(257, 64)
checks = {
    "add": lambda t: t + 1,
    "mul by a scalar": lambda t: t * 3,
    "sum over rows": lambda t: t.sum(1),
    "sum of all": lambda t: t.sum(),
    "softmax": lambda t: t.softmax(-1),
    "layer_norm": lambda t: torch.nn.functional.layer_norm(t, t.shape[-1:]),
    "matmul": lambda t: t @ (w if t.device.type == "cpu" else w.to(t.device)),
    "index_select": lambda t: t.index_select(0, torch.tensor([5, 0, 299], device=t.device)),
    "sort": lambda t: t.sort(-1).values,
    "cumsum": lambda t: t.cumsum(0),
}
failed = []
for name, fn in checks.items():
    try:
        torch.testing.assert_close(fn(x.to("gpu")).cpu(), fn(x), rtol=1e-4, atol=1e-4)
        print("ok  ", name)
    except Exception as error:  # every check runs; the failures are listed
        failed.append(name)
        print("FAIL", name, type(error).__name__, str(error)[:300])
torch.gpu.synchronize()
raise SystemExit(1 if failed else 0)
EOF
}

test_files() {
  local rc=0
  "$python" -m pytest packages/torch-backend-cuda/tests/test_gpu.py -k "not conformance_kit" -rs -q || rc=1
  "$python" -m pytest tests/test_coexistence.py -rs -q || rc=1
  return $rc
}

kit() {
  local args=(gpu --known-failures "$known/known_failures_gpu.json" -q -p no:warnings "$@")
  if [ -z "$xdist" ]; then
    "$python" -m torch_backend.testing "${args[@]}"
    return
  fi
  # In parallel, then alone what reads device-wide figures (free memory). Under a -k choice one part
  # may select no test (pytest's exit status 5): a failure only when both do.
  local parallel alone
  # shellcheck disable=SC2086  # $xdist is "-n 8": two words
  "$python" -m torch_backend.testing "${args[@]}" $xdist -m "not device_alone"
  parallel=$?
  [ "$parallel" -eq 0 ] || [ "$parallel" -eq 5 ] || return "$parallel"
  "$python" -m torch_backend.testing "${args[@]}" -m device_alone
  alone=$?
  [ "$alone" -eq 0 ] || [ "$alone" -eq 5 ] || return "$alone"
  [ "$parallel" -eq 0 ] || [ "$alone" -eq 0 ] || return 5
}

known=packages/torch-backend-cuda/tests
xdist=""
"$python" -c "import xdist" 2>/dev/null && xdist="-n 8"
# compile_bench [ARGS...]: ARGS (--workload NAME...) go to both sides.
compile_bench() {
  TORCH_BACKEND=gpu "$python" -m torch_backend.bench.compile --json "$out/compile-gpu.json" "$@" &&
    TORCH_BACKEND=none "$python" -m torch_backend.bench.compile --device cuda --json "$out/compile-cuda.json" "$@"
}

# sum_ncu: Nsight Compute's figures (throughput, occupancy, registers, waves) for the kernels of a 64M-element
# float sum, gpu's and then CUDA's: the sum case is the one where gpu trails CUDA more on an H200 than on an H100.
sum_ncu() {
  local ncu program='import torch; x = torch.randn(64 << 20, device="DEVICE"); [x.sum() for _ in range(3)]; torch.accelerator.synchronize()'
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
  [ -n "$ncu" ] || { echo "ncu not found"; return 1; }
  local args=(--clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats
    -k "regex:reduce|sums|partials" --launch-skip 2 --launch-count 4)
  echo "== gpu" && TORCH_BACKEND=gpu "$ncu" "${args[@]}" "$python" -c "${program/DEVICE/gpu}" &&
    echo "== cuda" && TORCH_BACKEND=none "$ncu" "${args[@]}" "$python" -c "${program/DEVICE/cuda}"
}

# reference_profile ARGS...: the benchmark cases ARGS (--case NAME...) profiled on gpu and on cuda.
reference_profile() {
  TORCH_BACKEND=gpu "$python" -m torch_backend.bench.reference --device gpu --reference cuda --profile "$@"
}

# compile_profile [ARGS...]: each compiled step's ops by host time, on gpu and then on cuda.
compile_profile() {
  TORCH_BACKEND=gpu "$python" -m torch_backend.bench.compile --profile "$@" &&
    TORCH_BACKEND=none "$python" -m torch_backend.bench.compile --device cuda --profile "$@"
}

# gpu's replay against torch.cuda.CUDAGraph's, from the two graphs steps' JSON (at most 1.2x).
graphs_vs_cuda() {
  "$python" -c '
import json, sys
gpu, cuda = (json.load(open(path)) for path in sys.argv[1:])
worst = 0.0
for ours, theirs in zip(gpu, cuda, strict=True):
    case, ratio = ours["case"], ours["replayed_s"] / theirs["replayed_s"]
    worst = max(worst, ratio)
    print(f"{case}: gpu replay / CUDAGraph replay = {ratio:.2f} (target <= 1.2)")
sys.exit(worst > 1.2)
' "$out/graphs-gpu.json" "$out/graphs-cuda.json"
}

export python wheels out known xdist
export -f install smoke test_files kit compile_bench compile_profile reference_profile sum_ncu graphs_vs_cuda

# cases NAMES: --case arguments of the benchmark, one per ';'-separated part of NAMES (names hold commas).
cases() {
  local names name
  IFS=';' read -ra names <<<"$1"
  for name in "${names[@]}"; do printf -- '--case\n%s\n' "$name"; done
}
finish() {
  if [ -s "$state/failed" ]; then
    echo "FAILED steps: $(tr '\n' ' ' <"$state/failed")"
    exit 1
  fi
  echo "every step passed"
  exit 0
}
: >"$out/summary.txt"

if [ -n "$pending" ]; then
  step install 240 install
  show install
  if [ -s "$state/failed" ]; then exit 1; fi
  step report 60 smoke
  show report 40
  # What failed on the last GPU (the H200, 2026-11-29) and has changed since: torchvision's ResNet-18
  # (now compared in float64) and reduce-overhead training with dropout; and never run on a GPU: the
  # stress tests and the flight-recorder dumps of issue 68 (two ranks on one GPU: NCCL >= 2.30 with
  # NCCL_MULTI_RANK_GPU_ENABLE=1, which the pip wheel provides).
  export NCCL_MULTI_RANK_GPU_ENABLE=1
  step kit-pending 300 kit -k "torchvision or reduce_overhead or stress or flight_recorder"
  show kit-pending 40
  # Then alone, what times: the targets still missed first (sum, ResNet-18, the compiled MLP step).
  mapfile -t bench_cases < <(cases "${BENCH_CASES:-sum;ResNet-18 step b8 32x32;GPT}")
  step bench 240 env TORCH_BACKEND=gpu "$python" -m torch_backend.bench.reference --device gpu \
    --reference cuda --rounds "${BENCH_ROUNDS:-3}" --repeats "${BENCH_REPEATS:-3}" --json "$out/gpu-vs-cuda.json" \
    "${bench_cases[@]}"
  show bench 20
  step sum-ncu 90 sum_ncu
  show sum-ncu 0
  step compile 300 compile_bench --workload MLP
  show compile 10
  # Where the compiled step's time goes on each device (Inductor's cache makes the compiles quick).
  step compile-profile 150 compile_profile --workload MLP
  show compile-profile 0
  # The worst ratio's ops on both devices (PROFILE_CASES; default the ResNet-18 step), for the next fix.
  mapfile -t profile_cases < <(cases "${PROFILE_CASES:-ResNet-18 step b8 32x32}")
  step profile 120 reference_profile "${profile_cases[@]}"
  show profile 0
  # Never finished on a GPU: gpu's graph replay against torch.cuda.CUDAGraph's (the last H200 call ended
  # during CUDAGraph's run).
  step graphs 120 env TORCH_BACKEND=gpu "$python" -m torch_backend.bench.graphs --device gpu \
    --rounds 2 --repeats 3 --json "$out/graphs-gpu.json"
  show graphs 10
  step graphs-cuda 120 env TORCH_BACKEND=gpu "$python" -m torch_backend.bench.graphs --device cuda \
    --rounds 2 --repeats 3 --json "$out/graphs-cuda.json"
  show graphs-cuda 10
  step graphs-vs-cuda 30 graphs_vs_cuda
  show graphs-vs-cuda 5
  finish
fi

step install 300 install
show install
if [ -s "$state/failed" ]; then exit 1; fi
step report 120 smoke
show report 40
step kit 600 kit &
step tests 600 test_files &
step opinfo 900 env TORCH_BACKEND=gpu "$python" -m torch_backend.testing.opinfo \
  --known $known/known_failures_gpu.json --json "$out/opinfo.json" &
wait
show kit
show tests
show opinfo 60
# Graphs (CUDA stream capture): a replayed training step against the eager one, on gpu.
step graphs 300 env TORCH_BACKEND=gpu "$python" -m torch_backend.bench.graphs --device gpu \
  --rounds 3 --repeats 3 --json "$out/graphs-gpu.json"
show graphs 10
# The same step replayed from torch.cuda.CUDAGraph, and gpu's replay against it (at most 1.2x).
step graphs-cuda 300 env TORCH_BACKEND=gpu "$python" -m torch_backend.bench.graphs --device cuda \
  --rounds 3 --repeats 3 --json "$out/graphs-cuda.json"
show graphs-cuda 10
step graphs-vs-cuda 30 graphs_vs_cuda
show graphs-vs-cuda 5
mapfile -t bench_cases < <(cases "${BENCH_CASES:-}")
step bench 1800 env TORCH_BACKEND=gpu "$python" -m torch_backend.bench.reference --device gpu \
  --reference cuda --rounds "${BENCH_ROUNDS:-5}" --repeats "${BENCH_REPEATS:-5}" --json "$out/gpu-vs-cuda.json" \
  "${bench_cases[@]}"
show bench 20
mapfile -t profile_cases < <(cases "${PROFILE_CASES:-add, 16;MLP;CNN;GPT}")
step profile 600 reference_profile "${profile_cases[@]}"
show profile 0
step compile 900 compile_bench
show compile 10
finish
