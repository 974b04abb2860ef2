#!/usr/bin/env bash
# The main job on built-in defaults, the user's loop once through: build;
# train a Keras CNN on the bundled digits data at np=2 with tracing on
# (through `ringscope run`); check and summarise the trace; render it with
# the viewer (headless screenshot); ask the tuner for settings for the next
# run.
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
build/bin/ringscope view --screenshot runs/digits.png --size 1600x900 "$trace" ||
  echo "(no screenshot: the viewer could not render headless here)"
echo
build/bin/ringscope tune "$trace" --pick best --write runs/tuned.json | tail -n 4
echo
echo "trace files: runs/digits.rank0.sqlite, runs/digits.rank1.sqlite"
echo "viewer:      runs/digits.png   (interactive: build/bin/ringscope view $trace)"
echo "next run:    build/bin/ringscope run -np 2 --settings runs/tuned.json --trace runs/digits2.sqlite -- .venv/bin/python examples/tf_keras_digits.py"
echo "look at it:  build/bin/ringscope trace stats $trace"
echo "             build/bin/ringscope trace sql $trace \"SELECT * FROM events_v LIMIT 20\""
echo "             build/bin/ringscope trace export --chrome runs/digits.json $trace   (open in Perfetto)"
