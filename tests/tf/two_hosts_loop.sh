#!/usr/bin/env bash
# The user's loop across two hosts (scripts/two-hosts.sh): `ringscope run -H`
# trains the Keras digits example on one rank per host with tracing on, the
# trace passes check and names both hosts with a measured clock offset, the
# tuner writes settings from it, and a second run across the hosts uses
# them. The second host starts its rank with a clean environment, as over
# ssh, so this also checks that the launcher forwards what TensorFlow and
# the runtime need (PATH, PYTHONPATH, RINGSCOPE_*).
#
#   two_hosts_loop.sh SOURCE_DIR BUILD_DIR PYTHON
# Exits 77 (skipped) where the two hosts cannot be made.
set -u
src=$1
build=$2
python=$3
rs="$build/bin/ringscope"
work=$(mktemp -d /tmp/ringscope-two-hosts-loop.XXXXXX)
trap 'rm -rf "$work"' EXIT
export PYTHONPATH="$build/python"
export TF_CPP_MIN_LOG_LEVEL=2
hosts=10.77.0.1:1,10.77.0.2:1

fail() {
  echo "FAILED: $*" >&2
  exit 1
}

# Run 1: defaults, traced.
"$src/scripts/two-hosts.sh" --shell "$rs" run -np 2 -H "$hosts" --trace "$work/a.sqlite" -- \
  "$python" "$src/examples/tf_keras_digits.py" --epochs 2 >"$work/a.log" 2>&1
rc=$?
[ "$rc" = 77 ] && exit 77
cat "$work/a.log" | grep -v oneDNN | tail -n 5
[ "$rc" = 0 ] || fail "the traced run across two hosts exited $rc"
grep -q "throughput:" "$work/a.log" || fail "run 1 printed no throughput"

"$rs" trace check "$work/a.sqlite" || fail "trace check on run 1"
"$rs" trace merge "$work/merged.sqlite" "$work/a.sqlite" >/dev/null || fail "trace merge"
hosts_seen=$("$rs" trace sql "$work/merged.sqlite" \
  "SELECT rank || ':' || hostname || ':' || (clock_rtt_ns > 0) FROM ranks ORDER BY rank" |
  grep -o '[01]:ringscope-h[01]:[01]' | tr '\n' ' ')
echo "ranks: $hosts_seen"
# Rank 0 measures no offset to itself; rank 1's comes from a round trip.
[ "$hosts_seen" = "0:ringscope-h0:0 1:ringscope-h1:1 " ] ||
  fail "expected rank 0 on ringscope-h0 and rank 1 on ringscope-h1 with a measured round trip, got '$hosts_seen'"

# Tune from it.
"$rs" tune "$work/a.sqlite" --with-replay --pick best --write "$work/tuned.json" >"$work/tune.log" 2>&1 ||
  {
    cat "$work/tune.log"
    fail "ringscope tune"
  }
grep -q '"format": "ringscope-settings"' "$work/tuned.json" || fail "no settings file written"

# Run 2: the tuned settings, across the hosts again.
"$src/scripts/two-hosts.sh" --shell "$rs" run -np 2 -H "$hosts" --settings "$work/tuned.json" \
  --trace "$work/b.sqlite" -- "$python" "$src/examples/tf_keras_digits.py" --epochs 2 \
  >"$work/b.log" 2>&1 || {
  tail -n 20 "$work/b.log"
  fail "the run with the tuned settings"
}
grep -q "throughput:" "$work/b.log" || fail "run 2 printed no throughput"
"$rs" trace check "$work/b.sqlite" || fail "trace check on run 2"
echo "the loop ran across two hosts"
