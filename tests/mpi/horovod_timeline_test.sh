#!/usr/bin/env bash
# A Horovod job script's HOROVOD_TIMELINE=<dir>/timeline.json (RINGSCOPE_TRACE
# unset): every rank writes ringscope's SQLite trace <dir>/timeline.rank<r>.sqlite
# (not a .json file that is not JSON), the traces pass `ringscope-trace check`,
# and rank 0 says where they are.
# Usage: horovod_timeline_test.sh MPIEXEC NP PROGRAM TRACE_TOOL
set -u
mpiexec=$1 np=$2 program=$3 tool=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
unset RINGSCOPE_TRACE
timeout 240 "$mpiexec" --allow-run-as-root --oversubscribe --bind-to none \
  -x HOROVOD_TIMELINE="$dir/timeline.json" -np "$np" "$program" --steps 3 --warmup 1 \
  --workload small >"$dir/out.txt" 2>&1 || { cat "$dir/out.txt"; echo "FAIL: the run failed"; exit 1; }
fail=0
for ((r = 0; r < np; r++)); do
  [[ -s "$dir/timeline.rank$r.sqlite" ]] || { echo "FAIL: no $dir/timeline.rank$r.sqlite"; fail=1; }
done
if compgen -G "$dir/*.json" >/dev/null; then echo "FAIL: a .json file was written"; fail=1; fi
grep -q "HOROVOD_TIMELINE=$dir/timeline.json: ringscope writes its SQLite trace, $dir/timeline.rank0.sqlite" \
  "$dir/out.txt" || { cat "$dir/out.txt"; echo "FAIL: rank 0 did not say where the trace is"; fail=1; }
[[ $(grep -c "HOROVOD_TIMELINE=" "$dir/out.txt") == 1 ]] || { echo "FAIL: said more than once"; fail=1; }
"$tool" check "$dir/timeline.sqlite" || { echo "FAIL: check"; fail=1; }
[[ $fail == 0 ]] && echo "PASS: $np ranks traced through HOROVOD_TIMELINE"
exit $fail
