#!/usr/bin/env bash
# End-to-end autotuning benchmark on this machine: from poor settings (fusion
# off, 50 ms cycle) run traced trials of the synthetic workload (ResNet-50 or
# the small-tensor one, WORKLOAD=small),
# `ringscope tune` after each, up to 8 trials; then a grid search over the
# same space in the same run. Prints a table and writes JSON.
#
#   bench/autotune_loop.sh [OUT_DIR=runs/tune] [TRIALS=8]
# Env: BUILD=build, STEPS=20, COMPUTE_MS=10, NP=2, GRID=1 (0 skips the grid),
# WORKLOAD=resnet50|small (synthetic_gradients --workload; small: 360 tensors
# of 1-64 KiB where fusion and cycle time matter), WITH_REPLAY=1 (the tuner
# also uses what-if replay predictions from the best trial: --with-replay;
# the loop stops if the tuner can make no prediction),
# REPEATS=3: the confirm phase re-runs start, defaults, the tuned pick and the
# grid's best interleaved, REPEATS times each, because the machine's speed
# drifts over minutes (other jobs) and separate phases are not comparable.
# ONLY_CONFIRM=1 re-runs only the confirm phase on an earlier OUT_DIR.
# START=defaults starts the loop from the defaults (128 MiB, 1 ms) instead of
# the poor start: the "tuning never recommends worse than the defaults" check.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/tune}
TRIALS=${2:-8}
BUILD=${BUILD:-build}
STEPS=${STEPS:-20}
COMPUTE_MS=${COMPUTE_MS:-10}
NP=${NP:-2}
GRID=${GRID:-1}
REPEATS=${REPEATS:-3}
ONLY_CONFIRM=${ONLY_CONFIRM:-0}
START=${START:-poor}
case "$START" in
  poor) START_ARGS=(--fusion-threshold-mb 0 --cycle-time-ms 50) ;;
  defaults) START_ARGS=(--fusion-threshold-mb 128 --cycle-time-ms 1) ;;
  *) echo "autotune_loop: START must be poor or defaults, not '$START'" >&2; exit 2 ;;
esac
WORKLOAD_NAME=${WORKLOAD:-resnet50}
WITH_REPLAY=${WITH_REPLAY:-0}
TUNE_EXTRA=()
[[ "$WITH_REPLAY" == 1 ]] && TUNE_EXTRA=(--with-replay)
RS="$BUILD/bin/ringscope"
WORKLOAD=("$BUILD/bin/synthetic_gradients" --steps "$STEPS" --compute-ms "$COMPUTE_MS"
  --workload "$WORKLOAD_NAME")
for tool in "$RS" "$BUILD/bin/ringscope-tune" "${WORKLOAD[0]}" jq; do
  command -v "$tool" >/dev/null || { echo "autotune_loop: missing $tool (build first)" >&2; exit 2; }
done
# Score one trace with the tuner's scorer: prints "bytes_per_second mad".
score() {
  "$RS" tune "$1" --json "$1.score.json" >/dev/null
  jq -r '.trials[0] | "\(.median_bytes_per_second) \(.mad_bytes_per_second)"' "$1.score.json"
}

if [[ "$ONLY_CONFIRM" != 1 ]]; then
rm -rf "$OUT" "$OUT-grid"
mkdir -p "$OUT" "$OUT-grid"

echo "== tuning loop: $TRIALS trials from ${START_ARGS[*]} =="
declare -a LOOP_ROWS
for ((i = 0; i < TRIALS; i++)); do
  trace="$OUT/trial$i.sqlite"
  if ((i == 0)); then
    args=("${START_ARGS[@]}")
  else
    args=(--settings "$OUT/next.json")
  fi
  "$RS" run -np "$NP" --trace "$trace" "${args[@]}" -- "${WORKLOAD[@]}" >"$OUT/trial$i.log" 2>&1
  "$RS" tune "$OUT" --write "$OUT/next.json" --json "$OUT/tune$i.json" \
    "${TUNE_EXTRA[@]+"${TUNE_EXTRA[@]}"}" >"$OUT/tune$i.txt"
  row=$(jq -c --arg t "$(basename "$trace")" \
    '.trials[] | select(.trace | endswith($t)) | {trial: $t, settings, bps: .median_bytes_per_second, mad: .mad_bytes_per_second, step_ms: .median_step_ms}' \
    "$OUT/tune$i.json")
  LOOP_ROWS+=("$row")
  echo "$row" | jq -r '"\(.trial)  fusion \(.settings.fusion_threshold_bytes)  cycle \(.settings.cycle_time_ms) ms  cache \(.settings.cache_enabled)  \(.bps/1e9*1000|round/1000) GB/s ± \(.mad/1e9*1000|round/1000)  step \(.step_ms*100|round/100) ms"'
  if jq -e '.suggestion.converged' "$OUT/tune$i.json" >/dev/null && ((i >= 3)); then
    echo "tuner converged after $((i + 1)) trials"
    break
  fi
done
"$RS" tune "$OUT" --pick best --write "$OUT/tuned.json" --explain \
  "${TUNE_EXTRA[@]+"${TUNE_EXTRA[@]}"}" >"$OUT/final.txt"

declare -a GRID_ROWS
if [[ "$GRID" == 1 ]]; then
  echo "== grid search: fusion {off,1,8,32,128,512} MiB x cycle {0.1,1,5,50} ms, cache on =="
  for mb in 0 1 8 32 128 512; do
    for cyc in 0.1 1 5 50; do
      trace="$OUT-grid/f${mb}_c${cyc}.sqlite"
      "$RS" run -np "$NP" --trace "$trace" --fusion-threshold-mb "$mb" --cycle-time-ms "$cyc" \
        -- "${WORKLOAD[@]}" >"$trace.log" 2>&1
      read -r bps mad < <(score "$trace")
      GRID_ROWS+=("{\"fusion_mb\": $mb, \"cycle_ms\": $cyc, \"bps\": $bps, \"mad\": $mad}")
      printf 'grid  fusion %4s MiB  cycle %4s ms  %.3f GB/s ± %.3f\n' "$mb" "$cyc" \
        "$(jq -n "$bps/1e9")" "$(jq -n "$mad/1e9")"
    done
  done
fi

loop_json=$(printf '%s\n' "${LOOP_ROWS[@]}" | jq -s .)
grid_json=$(printf '%s\n' "${GRID_ROWS[@]+"${GRID_ROWS[@]}"}" | jq -s .)
jq -n --argjson loop "$loop_json" --argjson grid "$grid_json" '
  ($loop[0].bps) as $start | ($loop | max_by(.bps)) as $best |
  ($loop | to_entries | map(select(.value.bps >= 1.3 * $start)) | first | .key) as $first13 |
  {loop: $loop, grid: $grid, start_bps: $start, best_loop: $best,
   best_vs_start: ($best.bps / $start),
   trials_to_1_3x: (if $first13 == null then null else $first13 + 1 end),
   best_grid: ($grid | max_by(.bps)),
   best_loop_vs_best_grid: (if ($grid | length) > 0 then $best.bps / ($grid | max_by(.bps)).bps else null end)}' \
  >"$OUT/autotune_loop.json"
echo "== summary ($OUT/autotune_loop.json) =="
jq -r '"start: \(.start_bps/1e9*1000|round/1000) GB/s; best of loop: \(.best_loop.bps/1e9*1000|round/1000) GB/s (\(.best_loop.trial)) = \(.best_vs_start*100|round/100)x the start; first >= 1.3x at trial count \(.trials_to_1_3x)",
       (if .best_grid then "best of grid: \(.best_grid.bps/1e9*1000|round/1000) GB/s (fusion \(.best_grid.fusion_mb) MiB, cycle \(.best_grid.cycle_ms) ms); loop best / grid best = \(.best_loop_vs_best_grid*1000|round/1000)" else "grid skipped" end)' \
  "$OUT/autotune_loop.json"
echo "final recommendation: $(grep 'best predicted settings' "$OUT/final.txt")"
fi  # ONLY_CONFIRM

echo "== confirm: start / defaults / tuned (--pick best) / grid best, interleaved x$REPEATS =="
rm -rf "$OUT-confirm" && mkdir -p "$OUT-confirm"
grid_mb=$(jq -r '.best_grid.fusion_mb // 128' "$OUT/autotune_loop.json")
grid_cyc=$(jq -r '.best_grid.cycle_ms // 1' "$OUT/autotune_loop.json")
declare -A CONFIRM_ARGS=(
  [start]="${START_ARGS[*]}"
  [defaults]="--fusion-threshold-mb 128 --cycle-time-ms 1"
  [tuned]="--settings $OUT/tuned.json"
  [grid_best]="--fusion-threshold-mb $grid_mb --cycle-time-ms $grid_cyc")
declare -a CONFIRM_ROWS
for ((r = 0; r < REPEATS; r++)); do
  for name in start defaults tuned grid_best; do
    trace="$OUT-confirm/${name}_$r.sqlite"
    # shellcheck disable=SC2086  # the flags are words
    "$RS" run -np "$NP" --trace "$trace" ${CONFIRM_ARGS[$name]} -- "${WORKLOAD[@]}" >"$trace.log" 2>&1
    read -r bps mad < <(score "$trace")
    CONFIRM_ROWS+=("{\"config\": \"$name\", \"repeat\": $r, \"bps\": $bps, \"mad\": $mad}")
    printf 'confirm %-9s #%d  %.3f GB/s ± %.3f\n' "$name" "$r" "$(jq -n "$bps/1e9")" "$(jq -n "$mad/1e9")"
  done
done
printf '%s\n' "${CONFIRM_ROWS[@]}" | jq -s '
  group_by(.config) | map({config: .[0].config, runs: map(.bps), median_bps: (map(.bps) | sort | .[(length / 2 | floor)])})
  | INDEX(.config) | . as $c
  | {confirm: $c, tuned_vs_start: ($c.tuned.median_bps / $c.start.median_bps),
     tuned_vs_defaults: ($c.tuned.median_bps / $c.defaults.median_bps),
     tuned_vs_grid_best: ($c.tuned.median_bps / $c.grid_best.median_bps),
     grid_best_vs_start: ($c.grid_best.median_bps / $c.start.median_bps)}' >"$OUT/confirm.json"
jq -r '"confirm medians (GB/s): start \(.confirm.start.median_bps/1e9*1000|round/1000), defaults \(.confirm.defaults.median_bps/1e9*1000|round/1000), tuned \(.confirm.tuned.median_bps/1e9*1000|round/1000), grid best \(.confirm.grid_best.median_bps/1e9*1000|round/1000)",
       "tuned/start \(.tuned_vs_start*100|round/100)x, tuned/defaults \(.tuned_vs_defaults*100|round/100)x, tuned/grid best \(.tuned_vs_grid_best*100|round/100)x (\($file))"' \
  --arg file "$OUT/confirm.json" "$OUT/confirm.json"
