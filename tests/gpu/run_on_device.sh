#!/usr/bin/env bash
# Builds and runs the GPU tests and the GPU benchmark. Three ways:
#
#   tests/gpu/run_on_device.sh build   # a GPU machine with the build's packages
#                                      # (scripts/setup.sh): build build-gpu, run
#                                      # the [gpu] unit tests, ctest -L gpu, gpu_bench
#   tests/gpu/run_on_device.sh pack    # here (no GPU): build, then copy gpu_tests,
#                                      # gpu_bench and unit_tests with the shared
#                                      # libraries they need into .device-pack/
#   tests/gpu/run_on_device.sh run     # on a bare GPU machine (CUDA driver, and
#                                      # NCCL from /usr/local/cuda or the nvidia-nccl
#                                      # pip wheel) from that pack: nothing to build,
#                                      # no MPI needed (the GPU tests run one rank
#                                      # in process)
#
# On a lent device machine that runs commands over a copy of the working
# tree: `pack` here, then run there, with .device-pack carried along:
#   bash tests/gpu/run_on_device.sh run
# Logs, gpu_bench.json and a trace (gpu-trace.rank0.sqlite) go to $OUT
# (default: <build or pack>/out).
#
# On a machine (or two) with several GPUs, with MPI and the build's packages:
#   tests/gpu/run_on_device.sh multi   # build build-gpu, then gpu_mpi_probe's
#                                      # collectives, out-of-memory and
#                                      # killed-rank modes at np=2..GPUS on this
#                                      # node, and across nodes when HOSTS is set
#                                      # (mpirun's -H, e.g. HOSTS=a:4,b:4), each
#                                      # with every GPU visible and again with
#                                      # per-rank CUDA_VISIBLE_DEVICES
# Env: BUILD=build (pack) or build-gpu (build), JOBS=$(nproc), LIMIT=300 (seconds
# per program), SANITIZE=memcheck|racecheck|... (the GPU tests under
# compute-sanitizer, without [large]), GPU_TEST_ARGS (a Catch2 test filter).
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:-build}
PACK=.device-pack
JOBS=${JOBS:-$(nproc)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
TARGETS=(gpu_tests gpu_bench unit_tests)

# Runs the three programs in `bin`, each under a time limit (LIMIT seconds,
# default 300), logging to $OUT; returns non-zero on failure. The benchmark
# runs twice, untraced for the numbers and traced (RINGSCOPE_TRACE) for the
# trace overhead and a trace of device spans to open in the viewer.
run_programs() {
  local bin=$1 status=0 limit=${LIMIT:-300}
  command -v nvidia-smi >/dev/null && nvidia-smi 2>&1 | tee -a "$OUT/env.txt" || true
  timeout "$limit" "$bin/unit_tests" "[gpu]" 2>&1 | tee "$OUT/unit-gpu.log" || status=1
  set +e
  # SANITIZE=memcheck (or racecheck, ...): the GPU tests under compute-sanitizer,
  # without the 1 GiB case (GPU_TEST_ARGS to choose others). API errors are not
  # reported: NCCL 2.28 probes kernels it was not built for with
  # cudaFuncGetAttributes (cudaErrorNoKernelImageForDevice, 32 times a run).
  local wrap=() args=(--durations yes)
  if [[ -n "${SANITIZE:-}" ]]; then
    wrap=(compute-sanitizer --tool "$SANITIZE" --error-exitcode 3 --report-api-errors no)
    args+=("${GPU_TEST_ARGS:-~[large]}")
  elif [[ -n "${GPU_TEST_ARGS:-}" ]]; then
    args+=("$GPU_TEST_ARGS")
  fi
  NCCL_DEBUG=${NCCL_DEBUG:-WARN} timeout "$limit" "${wrap[@]}" "$bin/gpu_tests" "${args[@]}" 2>&1 |
    tee "$OUT/gpu-tests.log"
  local rc=${PIPESTATUS[0]}
  set -e
  if ((rc == 77)); then
    echo "run_on_device: the GPU tests were skipped: no usable CUDA device" | tee -a "$OUT/gpu-tests.log"
    status=1
  elif ((rc != 0)); then
    echo "run_on_device: gpu_tests exited $rc" | tee -a "$OUT/gpu-tests.log"
    status=1
  fi
  timeout "$limit" "$bin/gpu_bench" --json "$OUT/gpu_bench.json" 2>&1 | tee "$OUT/gpu_bench.txt" ||
    status=1
  RINGSCOPE_TRACE="$OUT/gpu-trace.sqlite" timeout "$limit" "$bin/gpu_bench" 2>&1 |
    tee "$OUT/gpu_bench_traced.txt" || status=1
  echo "run_on_device: status $status; results in $OUT"
  return $status
}

case "$mode" in
  build)
    BUILD=${BUILD:-build-gpu}
    OUT=${OUT:-$BUILD/out}
    mkdir -p "$OUT"
    : >"$OUT/env.txt"
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DRINGSCOPE_BUILD_VIEWER=OFF \
      2>&1 | tee "$OUT/configure.log" | grep -E "GPU path|GPU tests" || true
    grep -q "GPU path: ON" "$OUT/configure.log" || {
      echo "run_on_device: the GPU path is not configured (see $OUT/configure.log)" >&2
      exit 2
    }
    cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" 2>&1 | tail -3
    run_programs "$BUILD/bin"
    ;;
  pack)
    BUILD=${BUILD:-build}
    cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" 2>&1 | tail -1
    rm -rf "$PACK" && mkdir -p "$PACK/bin" "$PACK/lib"
    for t in "${TARGETS[@]}"; do cp "$BUILD/bin/$t" "$PACK/bin/"; done
    # Every shared library they load except the C library family, the CUDA
    # driver and NCCL (218 MiB; the GPU machine has its own).
    for t in "${TARGETS[@]}"; do ldd "$BUILD/bin/$t"; done |
      awk '$3 ~ /^\// { print $1, $3 }' | sort -u |
      while read -r name path; do
        case "$name" in
          libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | ld-linux* | \
            libcuda.so.* | libnccl.so.*) ;;
          *) cp -L "$path" "$PACK/lib/$name" ;;
        esac
      done
    cp tests/gpu/run_on_device.sh "$PACK/"
    du -sh "$PACK"
    echo "packed; on the GPU machine: bash tests/gpu/run_on_device.sh run (carry $PACK)"
    ;;
  run)
    [[ -x "$PACK/bin/gpu_tests" ]] || {
      echo "run_on_device: no $PACK here; run 'tests/gpu/run_on_device.sh pack' first and carry it" >&2
      exit 2
    }
    OUT=${OUT:-$PACK/out}
    mkdir -p "$OUT"
    nccl_dir=""
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu \
      $(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null); do
      if [[ -e "$d/libnccl.so.2" ]]; then nccl_dir=$d; break; fi
    done
    if [[ -z "$nccl_dir" ]]; then  # anywhere else it may be installed
      found=$(find /usr /opt -name 'libnccl.so.2' -print -quit 2>/dev/null || true)
      [[ -n "$found" ]] && nccl_dir=$(dirname "$found")
    fi
    [[ -n "$nccl_dir" ]] || { echo "run_on_device: libnccl.so.2 not found" >&2; exit 2; }
    echo "NCCL from $nccl_dir" | tee "$OUT/env.txt"
    export LD_LIBRARY_PATH="$PWD/$PACK/lib:$nccl_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    run_programs "$PACK/bin"
    ;;
  multi)
    BUILD=${BUILD:-build-gpu}
    OUT=${OUT:-$BUILD/out}
    mkdir -p "$OUT"
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DRINGSCOPE_BUILD_VIEWER=OFF >"$OUT/configure.log" 2>&1
    cmake --build "$BUILD" -j "$JOBS" --target gpu_mpi_probe 2>&1 | tail -1
    gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
    ((gpus >= 2)) || { echo "run_on_device: multi needs 2 or more GPUs (nvidia-smi sees $gpus)" >&2; exit 2; }
    status=0
    # One run of the probe: mode, ranks, extra mpirun arguments. killed-rank
    # lets the others go on after rank 1 exits (mpirun would end them).
    probe() {
      local mode=$1 np=$2 log="$OUT/multi-$1-np$2$3.log"
      shift 3
      local mpi=(mpirun --allow-run-as-root --bind-to none -np "$np" -x RINGSCOPE_OP_TIMEOUT_SECONDS=30 "$@")
      [[ "$mode" == killed-rank ]] && mpi+=(--mca orte_abort_on_non_zero_status 0)
      echo "== $mode np=$np ${*}" | tee "$log"
      if timeout "${LIMIT:-300}" "${mpi[@]}" "$BUILD/bin/gpu_mpi_probe" "$mode" >>"$log" 2>&1; then
        echo "   passed" | tee -a "$log"
      elif [[ "$mode" == killed-rank ]] && ! grep -q "FAILED\|FAIL:" "$log" &&
        (($(grep -c ": ok$" "$log") == np - 1)); then
        echo "   passed (every other rank saw the error and shut down)" | tee -a "$log"
      else
        echo "   FAILED (see $log)" | tee -a "$log"
        status=1
      fi
    }
    for ((np = 2; np <= gpus && np <= 8; ++np)); do
      for mode in collectives out-of-memory killed-rank; do
        probe "$mode" "$np" ""
        # Per-rank visibility: each rank sees only its own GPU.
        probe "$mode" "$np" "-visible" \
          bash -c 'CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK exec "$0" "$@"'
      done
    done
    if [[ -n "${HOSTS:-}" ]]; then
      total=$(echo "$HOSTS" | tr ',' '\n' | awk -F: '{n += ($2 == "" ? 1 : $2)} END {print n}')
      for mode in collectives out-of-memory killed-rank; do
        probe "$mode" "$total" "-hosts" -H "$HOSTS"
        RINGSCOPE_HIERARCHICAL_ALLREDUCE=1 probe "$mode" "$total" "-hosts-hierarchical" -H "$HOSTS" \
          -x RINGSCOPE_HIERARCHICAL_ALLREDUCE
      done
    fi
    echo "run_on_device: multi status $status; logs in $OUT"
    exit $status
    ;;
  *)
    echo "usage: tests/gpu/run_on_device.sh build|pack|run|multi" >&2
    exit 2
    ;;
esac
