#!/usr/bin/env bash
# Runs the CPU benchmarks (negotiation_bench: fusion and cache; allreduce_bench:
# the sweep) and the multi-process tests (mpi_tests) on a machine with more cores than ranks, where the ranks and their
# background threads do not share cores. Made for a lent device machine
# (16 cores, no MPI, no package registry), so it carries Open MPI along:
#
#   scripts/cpu-bench-on-device.sh pack   # here: build the two benches and copy
#                                         # them, Debian's Open MPI (mpirun, its
#                                         # plugins, PMIx) and every library they
#                                         # load into .cpu-bench-pack/ (~40 MiB)
#   scripts/cpu-bench-on-device.sh run    # there (carry .cpu-bench-pack): run
#                                         # the tests and benches from the pack,
#                                         # relocated with OPAL_PREFIX
#   scripts/cpu-bench-on-device.sh check  # here: `run` in a mount namespace that
#                                         # hides the system's Open MPI, to prove
#                                         # the pack needs nothing from it
#
# Env for `run`: OUT (default .cpu-bench-pack/out) gets the JSON and logs;
# THREAD_COUNTS (default "0 1") the RINGSCOPE_DATA_THREADS / --data-threads
# values compared (0: automatic); NEGOTIATION_RUNS (default 5) runs of
# negotiation_bench per thread count at each of np=2 and 4;
# SWEEP=0 skips the allreduce sweep; TEST_SIZES (default "1 2 3 4 8") the world
# sizes of mpi_tests (empty: none); LIMIT (default 120) seconds per program.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
PACK=.cpu-bench-pack
TARGETS=(negotiation_bench allreduce_bench mpi_tests)
MULTIARCH=x86_64-linux-gnu
OMPI_DIRS=("/usr/lib/$MULTIARCH/openmpi" "/usr/lib/$MULTIARCH/pmix2" /usr/share/openmpi
  /etc/openmpi)

# Copies every shared library that the files given load, except the C library
# family (every machine has its own), into $PACK/lib.
copy_libraries() {
  for f in "$@"; do ldd "$f" 2>/dev/null || true; done |
    awk '$3 ~ /^\// { print $1, $3 }' | sort -u |
    while read -r name path; do
      case "$name" in
        libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | ld-linux* | \
          libcuda.so.*) ;;
        *) [[ -e "$PACK/lib/$name" ]] || cp -L "$path" "$PACK/lib/$name" ;;
      esac
    done
}

# Runs `run` with the system's Open MPI hidden behind empty mounts.
check_in_namespace() {
  local hide=() f
  # Files first: some of them lie inside the folders hidden after them.
  for f in /usr/bin/orterun /usr/bin/orted /lib/$MULTIARCH/libmpi.so.40 \
    /lib/$MULTIARCH/libopen-pal.so.40 /lib/$MULTIARCH/libopen-rte.so.40 /lib/$MULTIARCH/libpmix.so.2; do
    [[ -e "$f" ]] && hide+=("mount --bind /dev/null $(readlink -f "$f")")
  done
  for f in "${OMPI_DIRS[@]}"; do [[ -e "$f" ]] && hide+=("mount --bind /tmp/cpu-bench-empty $f"); done
  mkdir -p /tmp/cpu-bench-empty
  local joined
  joined=$(printf '%s && ' "${hide[@]}")
  unshare -m bash -c "$joined TEST_SIZES=2 NEGOTIATION_RUNS=1 SWEEP_MAX=\$((1 << 20)) bash scripts/cpu-bench-on-device.sh run"
}

case "$mode" in
  pack)
    # A CPU-only Release build: what a CPU user runs, and no CUDA libraries to carry.
    BUILD=${BUILD:-build-cpubench}
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DRINGSCOPE_WITH_CUDA=OFF \
      -DRINGSCOPE_BUILD_VIEWER=OFF -DRINGSCOPE_BUILD_TESTS=ON >/dev/null
    cmake --build "$BUILD" -j 2 --target "${TARGETS[@]}" 2>&1 | tail -1
    rm -rf "$PACK" && mkdir -p "$PACK/bin" "$PACK/lib" "$PACK/usr/bin"
    for t in "${TARGETS[@]}"; do cp "$BUILD/bin/$t" "$PACK/bin/"; done
    for d in "${OMPI_DIRS[@]}"; do
      mkdir -p "$PACK$(dirname "$d")"
      cp -a "$d" "$PACK$d"
    done
    rm -rf "$PACK/usr/lib/$MULTIARCH/openmpi/include" "$PACK/usr/lib/$MULTIARCH/pmix2/include"
    cp -L /usr/bin/orterun /usr/bin/orted "$PACK/usr/bin/"
    ln -s orterun "$PACK/usr/bin/mpirun"
    mapfile -t loadable < <(find "$PACK/usr" "$PACK/bin" -type f \( -name '*.so*' -o -perm -u+x \))
    copy_libraries "${loadable[@]}"
    cp scripts/cpu-bench-on-device.sh "$PACK/"
    du -sh "$PACK"
    ;;
  run)
    [[ -x "$PACK/bin/negotiation_bench" ]] || {
      echo "cpu-bench-on-device: no $PACK here; run 'scripts/cpu-bench-on-device.sh pack' first and carry it" >&2
      exit 2
    }
    OUT=${OUT:-$PACK/out}
    mkdir -p "$OUT"
    root=$PWD/$PACK
    export OPAL_PREFIX=$root/usr OPAL_SYSCONFDIR=$root/etc/openmpi
    export PMIX_PREFIX=$root/usr/lib/$MULTIARCH/pmix2
    export PMIX_PKGDATADIR=$PMIX_PREFIX/share/pmix PMIX_MCA_mca_base_component_path=$PMIX_PREFIX/lib/pmix
    export PATH=$root/usr/bin:$PATH
    export LD_LIBRARY_PATH=$root/lib:$root/usr/lib/$MULTIARCH/openmpi/lib:$root/usr/lib/$MULTIARCH/pmix2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    # Debian's PMIx plugin for zlib does not load from the relocated pack
    # (a missing symbol); PMIx works without it and would warn every run.
    export PMIX_MCA_pcompress_base_silence_warning=1 PMIX_MCA_mca_base_component_show_load_errors=0
    limit=${LIMIT:-120}
    mpi=(mpirun --oversubscribe --bind-to none)
    {
      echo "cores: $(nproc)"
      grep -m1 'model name' /proc/cpuinfo || true
      "${mpi[@]}" --version | head -1
    } | tee "$OUT/env.txt"
    status=0
    # Each (np, data threads) pair alternates with the others, so a slow
    # period of the machine does not fall on one side only.
    threads=(${THREAD_COUNTS:-0 1})
    for np in ${TEST_SIZES-1 2 3 4 8}; do
      for t in "${threads[@]}"; do
        echo "mpi_tests np=$np RINGSCOPE_DATA_THREADS=$t" | tee -a "$OUT/mpi_tests.txt"
        timeout "$limit" "${mpi[@]}" -x RINGSCOPE_DATA_THREADS="$t" -np "$np" \
          "$PACK/bin/mpi_tests" --use-colour no 2>&1 | tail -4 | tee -a "$OUT/mpi_tests.txt" ||
          status=1
      done
    done
    for np in 2 4; do
      for i in $(seq 1 "${NEGOTIATION_RUNS:-5}"); do
        for t in "${threads[@]}"; do
          timeout "$limit" "${mpi[@]}" -np "$np" "$PACK/bin/negotiation_bench" --data-threads "$t" \
            --json "$OUT/run.json" 2>&1 | tee -a "$OUT/negotiation.txt" || status=1
          cat "$OUT/run.json" >>"$OUT/negotiation.jsonl" && rm -f "$OUT/run.json"
        done
      done
    done
    if [[ "${SWEEP:-1}" != 0 ]]; then
      for np in 2 4; do
        for t in "${threads[@]}"; do
          timeout "$limit" "${mpi[@]}" -np "$np" "$PACK/bin/allreduce_bench" --data-threads "$t" \
            --max-bytes "${SWEEP_MAX:-$((64 << 20))}" --json "$OUT/run.json" 2>&1 |
            tee -a "$OUT/allreduce.txt" || status=1
          cat "$OUT/run.json" >>"$OUT/allreduce.jsonl" && rm -f "$OUT/run.json"
        done
      done
    fi
    echo "cpu-bench-on-device: status $status; results in $OUT"
    exit $status
    ;;
  check) check_in_namespace ;;
  *)
    echo "usage: scripts/cpu-bench-on-device.sh pack|run|check" >&2
    exit 2
    ;;
esac
