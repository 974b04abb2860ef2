#!/usr/bin/env bash
# Runs every benchmark of docs/performance.md and writes its JSON into
# bench/results/ (one file per benchmark and world size). Needs a build
# (scripts/setup.sh). Takes a few minutes; numbers on these shared 2-core
# machines are noisy: compare columns measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/results
mkdir -p "$out"
mpi="scripts/mpirun.sh"
for np in 2 4; do
  $mpi -np $np build/bin/allreduce_bench --json $out/allreduce_np$np.json
done
# The pipelined ring alone (no shared memory, recursive or halving-doubling).
for np in 2 4; do
  $mpi -np $np build/bin/allreduce_bench --small-bytes 0 --no-halving --no-shared-memory \
    --no-runtime --json $out/allreduce_ring_np$np.json
done
for np in 2 4; do
  $mpi -np $np build/bin/negotiation_bench --json $out/negotiation_np$np.json
done
for np in 2 4; do
  $mpi -np $np build/bin/idle_cost_bench --json $out/idle_cost_np$np.json
done
for np in 2 4; do
  $mpi -np $np build/bin/join_bench --json $out/join_np$np.json
done
for np in 2 4; do
  $mpi -np $np build/bin/reducescatter_bench --json $out/reducescatter_np$np.json
done
for np in 2 4; do
  $mpi -np $np build/bin/alltoall_bench --json $out/alltoall_np$np.json
done
# Across the two hosts of scripts/two-hosts.sh (one rank on each, TCP
# between two network namespaces; needs root): skipped where they cannot be
# made.
rc=0
scripts/two-hosts.sh 1 1 build/bin/allreduce_bench --json $out/two_hosts_allreduce_1+1.json || rc=$?
if [ $rc = 0 ]; then
  scripts/two-hosts.sh 1 1 build/bin/negotiation_bench --json $out/two_hosts_negotiation_1+1.json
  scripts/two-hosts.sh 1 1 build/bin/reducescatter_bench \
    --json $out/two_hosts_reducescatter_1+1.json
  scripts/two-hosts.sh 1 1 build/bin/alltoall_bench --json $out/two_hosts_alltoall_1+1.json
  scripts/two-hosts.sh 1 1 build/bin/join_bench --json $out/two_hosts_join_1+1.json
elif [ $rc = 77 ]; then
  echo "two hosts could not be made here: their benchmarks were skipped"
else
  exit $rc
fi
# Where the shared-memory allreduce writes its result (no MPI).
build/bin/shared_layout_bench --json $out/shared_layout_200x16k.json
build/bin/shared_layout_bench --pieces 1 --rounds 2000 --json $out/shared_layout_1x16k.json
$mpi -np 2 build/bin/trace_overhead_bench --phases 8 --steps 5 --json $out/trace_overhead_np2.json
build/bin/trace_writer_bench --events 2000000 --json $out/trace_writer.json
if [ -x .venv/bin/python ] && [ -f build/python/ringscope/tensorflow/ringscope_tf_ops.so ]; then
  export PYTHONPATH=$PWD/build/python
  for np in 1 2; do
    for traced in off on; do
      trace_args=()
      [ $traced = on ] && trace_args=(--trace "/tmp/ringscope-synth-$np.sqlite")
      build/bin/ringscope run -np $np "${trace_args[@]}" -- .venv/bin/python \
        examples/tf_synthetic_benchmark.py --steps 20 | tee "$out/tf_synthetic_np${np}_trace_$traced.txt"
    done
  done
  # What a training script pays per call on the TensorFlow side.
  $mpi -np 2 env PYTHONPATH="$PYTHONPATH" .venv/bin/python bench/tf_collectives_bench.py \
    --json $out/tf_collectives_np2.json
fi
echo "results in $out/"
