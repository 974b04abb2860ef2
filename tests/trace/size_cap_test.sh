#!/usr/bin/env bash
# The trace size cap through real MPI: a synthetic_gradients run at NP ranks
# with RINGSCOPE_TRACE_MAX_MB=1 must stop tracing on every rank after the
# same cycle and go on training (its result check passes), rank 0 must say
# so, every file must be closed and name the cap in meta.stopped_by, and
# `ringscope-trace check` must pass and note it.
# Usage: size_cap_test.sh BIN_DIR MPIEXEC NP
set -euo pipefail

bin_dir="${1:?usage: size_cap_test.sh BIN_DIR MPIEXEC NP}"
mpiexec="${2:?usage: size_cap_test.sh BIN_DIR MPIEXEC NP}"
np="${3:?usage: size_cap_test.sh BIN_DIR MPIEXEC NP}"
app="$bin_dir/synthetic_gradients"
cli="$bin_dir/ringscope-trace"
tmp=$(mktemp -d /tmp/ringscope-cap-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

fail() {
  echo "size_cap_test np=$np: FAIL: $*" >&2
  [ -f "$tmp/mpirun.log" ] && { echo "--- mpirun output (tail) ---" >&2; tail -n 20 "$tmp/mpirun.log" >&2; }
  exit 1
}
# One value from a one-row `ringscope-trace sql` table (header, rule, row).
sql_value() {
  local out
  out=$("$cli" sql "$1" "$2" 2>&1) || fail "ringscope-trace sql $1 \"$2\": $out"
  printf '%s\n' "$out" | sed -n 3p | sed 's/ *$//'
}

base="$tmp/cap.sqlite"
# About 20 KiB of trace per step and rank: the cap falls within the first
# hundred steps of 300.
timeout 300 "$mpiexec" --allow-run-as-root --oversubscribe --bind-to none -np "$np" \
  -x RINGSCOPE_TRACE="$base" -x RINGSCOPE_TRACE_MAX_MB=1 \
  "$app" --workload small --steps 300 --compute-ms 1 >"$tmp/mpirun.log" 2>&1 ||
  fail "the run failed (exit $?)"
grep -q "result check: ok" "$tmp/mpirun.log" || fail "training did not finish with correct results"
grep -q "\[ringscope rank 0\] tracing stopped on every rank after cycle" "$tmp/mpirun.log" ||
  fail "rank 0 did not say that tracing stopped"
[ "$(grep -c "tracing stopped on every rank" "$tmp/mpirun.log")" = 1 ] ||
  fail "more than rank 0 said that tracing stopped"

last_cycles=()
for ((r = 0; r < np; r++)); do
  file="$tmp/cap.rank$r.sqlite"
  [ -f "$file" ] || fail "no trace file for rank $r"
  [ ! -e "$file-wal" ] || fail "rank $r's file was not finished (its -wal is still there)"
  [ "$(sql_value "$file" "SELECT finalized FROM ranks")" = 1 ] || fail "rank $r's file not closed"
  stopped=$(sql_value "$file" "SELECT substr(value, 1, 40) FROM meta WHERE key = 'stopped_by'")
  [ "$stopped" = "size cap: a trace file reached 1.0 MiB (" ] ||
    fail "rank $r's meta.stopped_by is '$stopped'"
  # The cycle each rank stopped after (agreed: the same number everywhere).
  last_cycles+=("$(sql_value "$file" "SELECT substr(value, instr(value, 'after cycle ') + 12)
                                      FROM meta WHERE key = 'stopped_by'")")
  # The cap bounds the file: what was buffered when it was seen is still
  # written (VACUUM then packs it below the cap, unless a reader kept it
  # from running), so twice the cap is a bound that holds on a slow machine.
  size=$(stat -c %s "$file")
  [ "$size" -le $((2 * 1024 * 1024)) ] || fail "rank $r's file is $size bytes, far over the cap"
done
for ((r = 1; r < np; r++)); do
  [ "${last_cycles[$r]}" = "${last_cycles[0]}" ] ||
    fail "rank $r stopped tracing after cycle ${last_cycles[$r]}, rank 0 after ${last_cycles[0]}"
done
[ "${last_cycles[0]}" -gt 10 ] || fail "tracing stopped after cycle '${last_cycles[0]}'"
# No rank recorded a cycle after that one.
for ((r = 0; r < np; r++)); do
  last=$(sql_value "$tmp/cap.rank$r.sqlite" "SELECT max(cycle) FROM events WHERE lane = 0")
  [ "$last" -le "${last_cycles[0]}" ] || fail "rank $r recorded cycle $last, after the stop"
done

"$cli" check "$base" >"$tmp/check.log" 2>&1 || { cat "$tmp/check.log" >&2; fail "check failed"; }
grep -q "tracing stopped before the run ended: size cap" "$tmp/check.log" ||
  fail "check does not note the cap: $(cat "$tmp/check.log")"
"$cli" stats "$base" >"$tmp/stats.log" 2>&1 || { cat "$tmp/stats.log" >&2; fail "stats failed"; }
grep -q "note: tracing stopped before the run ended (size cap" "$tmp/stats.log" ||
  fail "stats does not note the cap"
echo "size_cap_test np=$np: ok (every rank's trace ends at cycle ${last_cycles[0]})"
