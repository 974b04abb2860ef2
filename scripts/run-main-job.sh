#!/usr/bin/env bash
# The main job on built-in defaults, the user's loop once through: build;
# train a Keras CNN on the bundled digits data at np=2 with tracing on
# (through `ringscope run`); check and summarise the trace; tune from it
# (the recorded run replayed under other settings: what-if); train again
# with the tuned settings, traced; print the throughput before and after;
# show both runs in the viewer (headless screenshots when there is no
# display: the second run's timeline, and the two runs compared).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p runs
before=runs/digits.sqlite
after=runs/digits-tuned.sqlite
rs=build/bin/ringscope
train=(.venv/bin/python examples/tf_keras_digits.py)
export PYTHONPATH="$PWD/build/python${PYTHONPATH:+:$PYTHONPATH}"

echo "== 1. train with the defaults, traced =="
"$rs" run -np 2 --trace "$before" -- "${train[@]}" | tee runs/digits.log
echo
"$rs" trace check "$before"
"$rs" trace stats "$before" | tail -n 8

echo
echo "== 2. tune from the recorded run =="
"$rs" tune "$before" --with-replay --pick best --write runs/tuned.json --explain | tail -n 12

echo
echo "== 3. train again with the tuned settings, traced =="
"$rs" run -np 2 --settings runs/tuned.json --trace "$after" -- "${train[@]}" |
  tee runs/digits-tuned.log
"$rs" trace check "$after"

echo
echo "== before / after =="
throughput() { sed -n 's/.*throughput: \([0-9]*\) samples.*/\1/p' "$1" | tail -n 1; }
b=$(throughput runs/digits.log)
a=$(throughput runs/digits-tuned.log)
printf '%-28s %12s samples/s\n' "defaults (runs/digits)" "${b:-?}" "tuned (runs/digits-tuned)" "${a:-?}"
if [[ -n "$b" && -n "$a" && "$b" -gt 0 ]]; then
  awk -v a="$a" -v b="$b" 'BEGIN { printf "tuned / defaults: %.2fx  (one run each; this machine is noisy, see docs/autotune.md)\n", a / b }'
fi
# The defaults are 128 MiB, 1 ms, cache on (docs/configuration.md).
if python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["settings"]; sys.exit(0 if (s["fusion_threshold_bytes"], s["cycle_time_ms"], s["cache_enabled"]) == (134217728, 1.0, True) else 1)' runs/tuned.json; then
  echo "the tuner kept the defaults (it predicted nothing better for this workload): the difference above is run-to-run noise"
fi
"$rs" tune "$before" "$after" | tail -n 6

echo
"$rs" view --screenshot runs/digits-tuned.png --size 1600x900 "$after" ||
  echo "(no screenshot: the viewer could not render headless here)"
"$rs" view --screenshot runs/digits-compare.png --size 1600x900 --panel compare \
  --compare "$before" "$after" || echo "(no compare screenshot)"
echo
echo "trace files: runs/digits.rank*.sqlite (defaults), runs/digits-tuned.rank*.sqlite (tuned)"
echo "settings:    runs/tuned.json"
echo "viewer:      runs/digits-tuned.png, runs/digits-compare.png"
echo "             interactive: $rs view $after --compare $before   (Compare and Tune tabs)"
echo "look at it:  $rs trace stats $after"
echo "             $rs trace sql $after \"SELECT * FROM events_v LIMIT 20\""
echo "             $rs trace export --chrome runs/digits.json $after   (open in Perfetto)"
