#!/usr/bin/env bash
# The network between two hosts goes down mid-run: every rank's allreduce
# must fail with a timeout naming the rank it waited for, and shutdown must
# return (network_cut_probe.cc). Runs the probe with N0 ranks on the first
# host and N1 on the second of scripts/two-hosts.sh, a 3 s op timeout, and
# takes the second host's link down once rank 0 has done 20 allreduces.
# Open MPI's mpirun itself cannot finish when a host's daemon is cut off
# (it waits for it), so the test ends the run with SIGKILL once every rank
# has reported.
#
#   network_cut_test.sh SOURCE_DIR PROBE N0 N1
# Exits 77 (skipped) where the two hosts cannot be made.
set -u
src=$1
probe=$2
n0=$3
n1=$4

if [ "${5:-}" != "--inside" ]; then
  work=$(mktemp -d /tmp/ringscope-network-cut.XXXXXX)
  "$src/scripts/two-hosts.sh" --shell bash "$0" "$src" "$probe" "$n0" "$n1" --inside "$work"
  rc=$?
  rm -rf "$work"
  exit $rc
fi

# ---- On the first host ----
work=$6
n=$((n0 + n1))
fail() {
  echo "network_cut_test: FAIL: $*" >&2
  [ -f "$work/mpirun.log" ] && tail -n 20 "$work/mpirun.log" >&2
  exit 1
}
setsid mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$n" \
  -H "10.77.0.1:$n0,10.77.0.2:$n1" -x RINGSCOPE_OP_TIMEOUT_SECONDS=3 \
  "$probe" "$work" >"$work/mpirun.log" 2>&1 &
run=$!
# kill -0 succeeds on a zombie: mpirun is our child, so read its state.
alive() { [ -r "/proc/$1/stat" ] && [ "$(sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f1)" != Z ]; }
# Everything the run started, on either host, is in mpirun's session.
end_run() {
  pkill -KILL -s "$run" 2>/dev/null
  wait "$run" 2>/dev/null
}
trap end_run EXIT

deadline=$((SECONDS + 60))
until [ -f "$work/running" ]; do
  alive "$run" || fail "mpirun exited before the ranks were running"
  [ "$SECONDS" -lt "$deadline" ] || fail "rank 0 did not get through 20 allreduces in 60 s"
  sleep 0.1
done
ip -n ringscope-h1 link set rs-veth1 down || fail "could not take the link down"
cut=$SECONDS
echo "network_cut_test: took ringscope-h1's link down with $n0+$n1 ranks running"

# No hang: every rank reports within a minute (the op timeout is 3 s).
for r in $(seq 0 $((n - 1))); do
  until [ -f "$work/rank$r.txt" ]; do
    [ "$SECONDS" -lt $((cut + 60)) ] || fail "rank $r reported nothing within 60 s of the cut"
    sleep 0.1
  done
done
bad=0
for r in $(seq 0 $((n - 1))); do
  f="$work/rank$r.txt"
  code=$(sed -n 's/^code=//p' "$f")
  peer=$(sed -n 's/^peer=//p' "$f")
  shutdown_s=$(sed -n 's/^shutdown_s=//p' "$f")
  message=$(sed -n 's/^message=//p' "$f")
  echo "network_cut_test: rank $r: $(tr '\n' ' ' <"$f")"
  if [ "$code" != "Timeout" ] && [ "$code" != "PeerFailure" ]; then
    echo "network_cut_test: rank $r: expected a Timeout or PeerFailure, got '$code'" >&2
    bad=1
  fi
  case "$peer" in
    '' | -* | *[!0-9]*)
      echo "network_cut_test: rank $r: the error names no peer rank" >&2
      bad=1
      ;;
  esac
  if [ "$peer" = "$r" ]; then
    echo "network_cut_test: rank $r: the error names the rank itself as the peer" >&2
    bad=1
  fi
  case "$message" in
    *"no progress for 3.00 s"*"rank $peer"*) ;;
    *)
      echo "network_cut_test: rank $r: the message is not the 3 s op timeout naming rank $peer" >&2
      bad=1
      ;;
  esac
  # A hang guard, not a speed test: shutdown must come back.
  if ! awk -v s="$shutdown_s" 'BEGIN { exit !(s != "" && s < 30) }'; then
    echo "network_cut_test: rank $r: shutdown took '$shutdown_s' s" >&2
    bad=1
  fi
done
[ "$bad" = 0 ] || fail "some rank's error was not the timeout naming its peer"
echo "network_cut_test: PASS ($n ranks reported within $((SECONDS - cut)) s of the cut)"
