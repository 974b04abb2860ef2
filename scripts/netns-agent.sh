#!/bin/sh
# Open MPI's rsh agent (plm_rsh_agent) for scripts/two-hosts.sh: called as
# ssh would be, "netns-agent.sh HOST COMMAND...", it runs COMMAND (Open MPI's
# daemon) with `sh -c` on HOST, a network namespace with its own host name.
# Like ssh, it starts COMMAND with a clean environment: only PATH, HOME and
# the library path, so a variable reaches the ranks there only if mpirun
# forwards it (-x).
host=$1
shift
case "$host" in
  10.77.0.1) ns=ringscope-h0 ;;
  10.77.0.2) ns=ringscope-h1 ;;
  *)
    echo "netns-agent.sh: unknown host '$host' (expected 10.77.0.1 or 10.77.0.2)" >&2
    exit 255
    ;;
esac
# The second host's monotonic clock (steady_clock) reads 12345 s ahead of
# the first's, as on machines booted at different times, where the kernel
# allows a time namespace: traces must line the ranks up by the offsets they
# measure, not by a clock the hosts happen to share.
clock=""
if [ "$ns" = ringscope-h1 ] && unshare --time --monotonic 1 true 2>/dev/null; then
  clock="--time --monotonic 12345 --boottime 12345"
fi
# shellcheck disable=SC2086 # $clock is a list of options
exec ip netns exec "$ns" unshare --uts $clock env -i PATH="$PATH" HOME="${HOME:-/root}" \
  LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" sh -c "hostname $ns && $*"
