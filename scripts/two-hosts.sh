#!/usr/bin/env bash
# Runs mpirun across two hosts made on this machine: two network namespaces
# (ringscope-h0, ringscope-h1) joined by a veth pair (10.77.0.1 and
# 10.77.0.2), each with a host name of its own (a UTS namespace). Open MPI
# starts its daemon on the second host through its own rsh launcher
# (plm_rsh), with scripts/netns-agent.sh in place of ssh (which also sets
# the second host's monotonic clock 12345 s ahead); the ranks talk
# over TCP between the namespaces, and Open MPI (hence the runtime) sees
# two nodes: MPI_COMM_TYPE_SHARED splits them, no shared memory between
# them. This is how the tests and benches exercise what a run across hosts
# does (cross_rank/cross_size, message-based algorithms, per-host traces)
# on one machine. Both hosts share this machine's cores, file system and
# /dev/shm. See docs/contributing.md, "Two hosts on one machine".
#
#   scripts/two-hosts.sh N0 N1 [mpirun options] program [args]
#
# runs N0 ranks on ringscope-h0 and N1 on ringscope-h1 (world ranks 0..N0-1
# on the first).
#
#   scripts/two-hosts.sh --shell command [args]
#
# runs `command` on ringscope-h0 with Open MPI's launcher set up for both
# hosts (OMPI_MCA_* variables), so that a launcher of the user's, e.g.
# `ringscope run -np 2 -H 10.77.0.1:1,10.77.0.2:1 ...`, reaches the second.
#
# Like ssh, the second host's ranks get a clean environment: pass variables
# with -x. Needs root with CAP_NET_ADMIN and iproute2; exits 77 (ctest's
# skip) where namespaces cannot be made. Concurrent calls take turns (a
# lock): the namespaces are made before and removed after each.
set -u

usage() {
  echo "usage: $0 N0 N1 [mpirun options] program [args]" >&2
  echo "       $0 --shell command [args]" >&2
  exit 2
}
shell_mode=0
if [ "${1:-}" = "--shell" ]; then
  shell_mode=1
  shift
  [ $# -ge 1 ] || usage
else
  [ $# -ge 3 ] || usage
  n0=$1
  n1=$2
  shift 2
  case "$n0$n1" in
    *[!0-9]*)
      echo "two-hosts.sh: N0 and N1 must be rank counts, got '$n0' and '$n1'" >&2
      exit 2
      ;;
  esac
  if [ "$n0" -lt 1 ] || [ "$n1" -lt 1 ]; then
    echo "two-hosts.sh: each host needs at least one rank" >&2
    exit 2
  fi
fi

here=$(cd "$(dirname "$0")" && pwd)
skip() {
  echo "two-hosts.sh: SKIP: $*" >&2
  exit 77
}
for tool in ip unshare flock mpirun; do
  command -v "$tool" >/dev/null 2>&1 || skip "'$tool' is not installed"
done
[ "$(id -u)" = 0 ] || skip "making network namespaces needs root"

lock=${RINGSCOPE_TWO_HOSTS_LOCK:-/tmp/ringscope-two-hosts.lock}
exec 9>>"$lock" || skip "cannot open the lock file $lock"
if ! flock -w 900 9; then
  echo "two-hosts.sh: another run held $lock for 15 minutes" >&2
  exit 1
fi

hosts=(ringscope-h0 ringscope-h1)
addrs=(10.77.0.1 10.77.0.2)

# Removes the hosts: first whatever still runs in them (ip netns del leaves
# processes running in an unnamed namespace), then the namespaces, and the
# veth end a run killed half-way through its set-up may have left here.
teardown() {
  for h in "${hosts[@]}"; do
    pids=$(ip netns pids "$h" 2>/dev/null)
    [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
    ip netns del "$h" 2>/dev/null
  done
  ip link del rs-veth0 2>/dev/null
  rm -f "${hostfile:-}"
}

# A run killed before its teardown leaves its namespaces; start clean.
teardown
for h in "${hosts[@]}"; do
  ip netns add "$h" 2>/dev/null || {
    teardown
    skip "cannot create network namespace $h (needs root with CAP_NET_ADMIN)"
  }
done
trap teardown EXIT
if ! {
  ip link add rs-veth0 type veth peer name rs-veth1 &&
    ip link set rs-veth0 netns "${hosts[0]}" &&
    ip link set rs-veth1 netns "${hosts[1]}" &&
    ip -n "${hosts[0]}" addr add "${addrs[0]}/24" dev rs-veth0 &&
    ip -n "${hosts[1]}" addr add "${addrs[1]}/24" dev rs-veth1 &&
    ip -n "${hosts[0]}" link set rs-veth0 up &&
    ip -n "${hosts[1]}" link set rs-veth1 up &&
    ip -n "${hosts[0]}" link set lo up &&
    ip -n "${hosts[1]}" link set lo up
}; then
  skip "cannot join the namespaces with a veth pair"
fi
ip netns exec "${hosts[0]}" unshare --uts true 2>/dev/null || skip "cannot make a UTS namespace"

# Open MPI reads its parameters from OMPI_MCA_* variables too (and passes
# them on to its daemons): the agent in place of ssh, TCP on the veth pair.
export OMPI_MCA_plm_rsh_agent="$here/netns-agent.sh"
export OMPI_MCA_btl_tcp_if_include=10.77.0.0/24
export OMPI_MCA_oob_tcp_if_include=10.77.0.0/24
# The run does not inherit the lock's descriptor: a process it leaves
# behind must not keep the next run waiting.
in_first_host() {
  ip netns exec "${hosts[0]}" unshare --uts sh -c 'hostname "$0" && exec "$@"' "${hosts[0]}" \
    "$@" 9>&-
}
if [ "$shell_mode" = 1 ]; then
  in_first_host "$@"
  exit $?
fi

hostfile=$(mktemp /tmp/ringscope-two-hosts.XXXXXX)
printf '%s slots=%d\n%s slots=%d\n' "${addrs[0]}" "$n0" "${addrs[1]}" "$n1" >"$hostfile"

# The first host runs mpirun; its address is local there, so Open MPI
# starts ranks on it directly and reaches the second through the agent.
in_first_host mpirun --allow-run-as-root --oversubscribe --bind-to none \
  --hostfile "$hostfile" -np $((n0 + n1)) "$@"
