#!/usr/bin/env bash
# Builds and runs the GPU tests and the GPU benchmark in one go, on a machine
# with a CUDA device (CUDA toolkit + NCCL under /usr/local/cuda, and the
# build's Debian packages: scripts/setup.sh installs them where the network
# allows). Writes logs and bench JSON to $OUT (default build-gpu/out).
#
#   tests/gpu/run_on_device.sh            # from the repository root
# Env: BUILD=build-gpu, JOBS=$(nproc), OUT=<dir>
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-$(nproc)}
OUT=${OUT:-$BUILD/out}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

command -v nvidia-smi >/dev/null && nvidia-smi | tee "$OUT/nvidia-smi.txt" || true
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DRINGSCOPE_BUILD_VIEWER=OFF \
  2>&1 | tee "$OUT/configure.log" | grep -E "GPU path|GPU tests" || true
grep -q "GPU path: ON" "$OUT/configure.log" || {
  echo "run_on_device: the GPU path is not configured (see $OUT/configure.log)" >&2
  exit 2
}
cmake --build "$BUILD" -j "$JOBS" --target gpu_tests gpu_bench unit_tests 2>&1 | tail -3

status=0
# The CPU-side GPU planning tests, then the device pipeline.
"$BUILD/bin/unit_tests" "[gpu]" 2>&1 | tee "$OUT/unit-gpu.log" || status=1
(cd "$BUILD" && ctest -L gpu --output-on-failure) 2>&1 | tee "$OUT/ctest-gpu.log" || status=1
"$BUILD/bin/gpu_bench" --json "$OUT/gpu_bench.json" 2>&1 | tee "$OUT/gpu_bench.txt" || status=1
echo "run_on_device: status $status; results in $OUT"
exit $status
