#!/usr/bin/env bash
# The whole mpirun runtime suite with Open MPI's shared-memory windows in an
# 8 MiB tmpfs (osc_sm_backing_directory), as in a container with a small
# /dev/shm: the shared-memory allreduce must shrink to what fits, or give
# way to the ring, with every result still right and nothing hanging. (Open
# MPI alone hangs there: the rank that creates a window too large for the
# directory fails while the others wait inside MPI_Win_allocate_shared.)
# Mounting needs root; elsewhere the test is skipped (exit 77).
# Usage: small_shared_memory.sh MPIEXEC NP PROGRAM
set -u
mpiexec=$1 np=$2 program=$3
dir=$(mktemp -d)
if ! mount -t tmpfs -o size=8m tmpfs "$dir" 2>/dev/null; then
  echo "cannot mount a tmpfs here (not root, or no CAP_SYS_ADMIN): skipped"
  rmdir "$dir"
  exit 77
fi
trap 'umount "$dir"; rmdir "$dir"' EXIT
# Under ctest's own timeout (600 s), so that the trap still unmounts.
timeout 500 "$mpiexec" --allow-run-as-root --oversubscribe --bind-to none \
  --mca osc_sm_backing_directory "$dir" -x RINGSCOPE_OP_TIMEOUT_SECONDS=60 -np "$np" "$program"
