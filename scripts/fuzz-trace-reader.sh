#!/usr/bin/env bash
# Fuzzes the trace reader with libFuzzer for SECONDS (default 600): configures
# build-fuzz/ with clang (RINGSCOPE_FUZZ=ON), builds the harness, writes the
# seed corpus and runs one fuzzing process. Needs clang and libclang-rt-14-dev
# (Debian 12; not part of setup.sh, which the normal build does not need).
# Usage: scripts/fuzz-trace-reader.sh [SECONDS]   (env: JOBS, default 1)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-600}"
jobs="${JOBS:-1}"
build=build-fuzz
out="$build/fuzz-run"

if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ not found (apt-get install clang libclang-rt-14-dev)" >&2
  exit 1
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DRINGSCOPE_FUZZ=ON -DRINGSCOPE_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$build" -j"$jobs" --target trace_reader_fuzzer make_seed_corpus

artifacts="$out/artifacts-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out/corpus" "$artifacts"
"$build/bin/make_seed_corpus" "$out/seeds"
log="$out/fuzz.log"
echo "fuzz: running for ${seconds}s (log: $log, crashes: $artifacts/)"
set +e
# corpus/ keeps what the fuzzer found (reused by the next run); seeds/ is read only.
"$build/bin/trace_reader_fuzzer" "$out/corpus" "$out/seeds" \
  -max_total_time="$seconds" -max_len=1000000 -rss_limit_mb=4096 -timeout=30 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1
rc=$?
set -e

crashes=$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
  -o -name 'oom-*' \) | wc -l)
last_status=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
echo "fuzz: last status line: ${last_status:-none}"
grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb|new_units_added)' "$log" || true
echo "fuzz: exit code $rc, crash/timeout/oom artifacts: $crashes"
if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
  grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -n 20 || true
  exit 1
fi
