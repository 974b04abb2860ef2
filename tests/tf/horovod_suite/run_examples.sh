#!/usr/bin/env bash
# Runs Horovod's two TF2 synthetic benchmarks against ringscope under
# mpirun, through the import shim (shim/horovod), after the Keras 3 edits of
# keras3_edits.py, with a small model and few iterations:
#
#   tests/tf/horovod_suite/run_examples.sh HOROVOD_DIR [NP] [MODEL]
#
# HOROVOD_DIR holds Horovod's examples/tensorflow2 (a checkout, or
# 'git archive 2626dc87 examples'). Exits non-zero when either fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
if [ $# -lt 1 ] || [ ! -d "${1:-}/examples/tensorflow2" ]; then
  echo "usage: $0 HOROVOD_DIR [NP] [MODEL]  (HOROVOD_DIR must hold examples/tensorflow2)" >&2
  exit 2
fi
hvd_dir="$1"; np="${2:-2}"; model="${3:-MobileNetV2}"
python="$root/.venv/bin/python"
work="${HOROVOD_SUITE_WORK:-/tmp/ringscope-horovod-suite}/examples"
rm -rf "$work" && mkdir -p "$work"
status=0
for example in tensorflow2_synthetic_benchmark.py tensorflow2_keras_synthetic_benchmark.py; do
  cp "$hvd_dir/examples/tensorflow2/$example" "$work/"
  "$python" "$here/keras3_edits.py" "$work/$example"
  args=(--model "$model" --batch-size 4 --num-batches-per-iter 2 --num-iters 2 --no-cuda)
  [ "$example" = tensorflow2_synthetic_benchmark.py ] && args+=(--num-warmup-batches 1)
  echo "== $example ${args[*]} (np=$np)"
  if ! timeout 1200 mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" \
      -x PYTHONPATH="$here/shim:$root/build/python" -x TF_CPP_MIN_LOG_LEVEL=2 \
      -x RINGSCOPE_STALL_SHUTDOWN_SECONDS=120 \
      "$python" "$work/$example" "${args[@]}"; then
    echo "== $example FAILED" >&2
    status=1
  fi
done
exit $status
