#!/usr/bin/env bash
# The main job on built-in defaults: build, run the synthetic ResNet-50
# gradient workload at np=2 with tracing on, check and summarise the trace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p runs
trace=runs/main-job.sqlite
bash scripts/mpirun.sh -np 2 -x RINGSCOPE_TRACE="$trace" \
  build/bin/synthetic_gradients --steps 30 --compute-ms 10
build/bin/ringscope-trace check "$trace"
build/bin/ringscope-trace stats "$trace" | tail -n 16
echo
echo "trace: ${trace%.sqlite}.rank0.sqlite, ${trace%.sqlite}.rank1.sqlite"
echo "look at it: build/bin/ringscope-trace stats $trace"
echo "            build/bin/ringscope-trace export --chrome runs/main-job.json $trace   (open in Perfetto)"
