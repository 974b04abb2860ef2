#!/usr/bin/env bash
# The main job on built-in defaults: build, train a Keras CNN on the bundled
# digits data at np=2 with tracing on (through `ringscope run`), then check
# and summarise the trace and say how to look at it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p runs
trace=runs/digits.sqlite
export PYTHONPATH="$PWD/build/python${PYTHONPATH:+:$PYTHONPATH}"
build/bin/ringscope run -np 2 --trace "$trace" -- .venv/bin/python examples/tf_keras_digits.py
echo
build/bin/ringscope trace check "$trace"
build/bin/ringscope trace stats "$trace" | tail -n 8
echo
echo "trace files: runs/digits.rank0.sqlite, runs/digits.rank1.sqlite"
echo "look at it:  build/bin/ringscope trace stats $trace"
echo "             build/bin/ringscope trace sql $trace \"SELECT * FROM events_v LIMIT 20\""
echo "             build/bin/ringscope trace export --chrome runs/digits.json $trace   (open in Perfetto)"
