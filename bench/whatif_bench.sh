#!/usr/bin/env bash
# How good is the what-if replay? For each workload (synthetic ResNet-50 and
# the small-tensor one) record ONE traced run, predict several other settings
# from it with `ringscope tune --what-if`, then actually run those settings
# traced, score them with the same scorer and compare. The machine's speed
# drifts (shared cores), so the measured runs go in REPEATS interleaved rounds
# (the recorded settings included) and each setting's measurement is the
# median over rounds; the spread over rounds is reported as the noise.
# Prints a table and writes bench/results/whatif.json (median relative error
# per workload).
#
#   bench/whatif_bench.sh [OUT_DIR=runs/whatif]
# Env: BUILD=build, NP=2, STEPS=20, COMPUTE_MS=10, WORKLOADS="resnet50 small",
# REC_MB=128 REC_CYCLE=1 (the recorded run's settings; cache on), REPEATS=3.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/whatif}
BUILD=${BUILD:-build}
NP=${NP:-2}
STEPS=${STEPS:-20}
COMPUTE_MS=${COMPUTE_MS:-10}
WORKLOADS=${WORKLOADS:-resnet50 small}
REC_MB=${REC_MB:-128}
REC_CYCLE=${REC_CYCLE:-1}
REPEATS=${REPEATS:-3}
RESULT=${RESULT:-bench/results/whatif.json}
RS="$BUILD/bin/ringscope"
for tool in "$RS" "$BUILD/bin/ringscope-tune" "$BUILD/bin/ringscope-run" \
  "$BUILD/bin/synthetic_gradients" jq; do
  command -v "$tool" >/dev/null || { echo "whatif_bench: missing $tool (build first)" >&2; exit 2; }
done
# Settings measured (all from the --what-if grid): "fusion_mb cycle_ms cache".
SETTINGS=("$REC_MB $REC_CYCLE on" "0 50 on" "0 1 on" "1 1 on" "8 1 on" "8 5 on" "32 0.1 on"
  "128 50 on" "128 1 off")

rm -rf "$OUT" && mkdir -p "$OUT"
declare -a WORKLOAD_JSON
for wl in $WORKLOADS; do
  echo "== $wl: recording fusion $REC_MB MiB, cycle $REC_CYCLE ms, cache on =="
  args=(--steps "$STEPS" --compute-ms "$COMPUTE_MS" --workload "$wl")
  rec="$OUT/$wl-recorded.sqlite"
  "$RS" run -np "$NP" --trace "$rec" --fusion-threshold-mb "$REC_MB" --cycle-time-ms "$REC_CYCLE" \
    -- "$BUILD/bin/synthetic_gradients" "${args[@]}" >"$rec.log" 2>&1
  t0=$(date +%s.%N)
  "$RS" tune "$rec" --what-if --explain --json "$OUT/$wl-whatif.json" >"$OUT/$wl-whatif.txt"
  t1=$(date +%s.%N)
  cat "$OUT/$wl-whatif.txt" | head -12
  # Predictions for each measured setting.
  declare -A PRED=()
  for s in "${SETTINGS[@]}"; do
    read -r mb cyc cache <<<"$s"
    cache_bool=$([[ $cache == on ]] && echo true || echo false)
    PRED[$s]=$(jq -c --argjson b "$((mb * 1048576))" --argjson c "$cyc" --argjson k "$cache_bool" \
      '.predictions[] | select(.settings.fusion_threshold_bytes == $b and .settings.cycle_time_ms == $c and .settings.cache_enabled == $k)' \
      "$OUT/$wl-whatif.json")
    [[ -n "${PRED[$s]}" ]] || { echo "whatif_bench: $s not in the what-if grid" >&2; exit 1; }
  done
  # Measurements: REPEATS interleaved rounds over all settings.
  declare -A MEAS=()
  for ((r = 0; r < REPEATS; r++)); do
    for s in "${SETTINGS[@]}"; do
      read -r mb cyc cache <<<"$s"
      trace="$OUT/$wl-f${mb}_c${cyc}_${cache}_$r.sqlite"
      cap=()
      [[ $cache == off ]] && cap=(--cache-capacity 0)
      "$RS" run -np "$NP" --trace "$trace" --fusion-threshold-mb "$mb" --cycle-time-ms "$cyc" \
        "${cap[@]}" -- "$BUILD/bin/synthetic_gradients" "${args[@]}" >"$trace.log" 2>&1
      "$RS" tune "$trace" --json "$trace.score.json" >/dev/null
      MEAS[$s]+="$(jq '.trials[0].median_bytes_per_second' "$trace.score.json") "
    done
    echo "round $((r + 1))/$REPEATS done"
  done
  declare -a ROWS=()
  for s in "${SETTINGS[@]}"; do
    read -r mb cyc cache <<<"$s"
    runs=$(echo "${MEAS[$s]}" | jq -s -c .)
    row=$(jq -n --argjson p "${PRED[$s]}" --argjson runs "$runs" \
      --arg mb "$mb" --arg cyc "$cyc" --arg cache "$cache" '
      def median: sort | if length % 2 == 1 then .[length / 2 | floor]
                         else (.[length / 2 - 1] + .[length / 2]) / 2 end;
      ($runs | median) as $m |
      {fusion_mb: ($mb | tonumber), cycle_ms: ($cyc | tonumber), cache: $cache,
       predicted_bps: $p.predicted_bytes_per_second, raw_bps: $p.raw_bytes_per_second,
       measured_bps: $m, measured_runs_bps: $runs,
       measured_spread: (($runs | max) / ($runs | min)),
       rel_error: (($p.predicted_bytes_per_second - $m) / $m),
       raw_rel_error: (($p.raw_bytes_per_second - $m) / $m)}')
    ROWS+=("$row")
    echo "$row" | jq -r '"\(.fusion_mb) MiB  \(.cycle_ms) ms  cache \(.cache)   predicted \(.predicted_bps/1e9*1000|round/1000) GB/s (raw \(.raw_bps/1e9*1000|round/1000))   measured \(.measured_bps/1e9*1000|round/1000) GB/s (runs max/min \(.measured_spread*100|round/100))   error \(.rel_error*1000|round/10)%"'
  done
  rows=$(printf '%s\n' "${ROWS[@]}" | jq -s .)
  WORKLOAD_JSON+=("$(jq -n --arg wl "$wl" --argjson rows "$rows" \
    --slurpfile w "$OUT/$wl-whatif.json" --arg rep "$REPEATS" --arg secs "$(echo "$t1 - $t0" | bc)" '
    def median: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
                       else (.[length / 2 - 1] + .[length / 2]) / 2 end;
    {workload: $wl, repeats: ($rep | tonumber), recorded: $w[0].recorded, anchor: $w[0].anchor, model: $w[0].model,
     whatif_seconds: ($secs | tonumber), grid_points: ($w[0].predictions | length), rows: $rows,
     median_abs_rel_error: ($rows | map(.rel_error | fabs) | median),
     median_abs_rel_error_raw: ($rows | map(.raw_rel_error | fabs) | median),
     median_run_spread: ($rows | map(.measured_spread) | median),
     best_measured: ($rows | max_by(.measured_bps)), best_predicted: ($rows | max_by(.predicted_bps))}')")
done
mkdir -p "$(dirname "$RESULT")"
printf '%s\n' "${WORKLOAD_JSON[@]}" | jq -s --arg np "$NP" --arg steps "$STEPS" \
  --arg compute "$COMPUTE_MS" \
  '{np: ($np | tonumber), steps: ($steps | tonumber), compute_ms: ($compute | tonumber),
    created: (now | todate), workloads: .}' >"$RESULT"
echo "== summary ($RESULT) =="
jq -r '.workloads[] | "\(.workload): median |error| \(.median_abs_rel_error*1000|round/10)% (raw, without the anchor: \(.median_abs_rel_error_raw*1000|round/10)%); best measured \(.best_measured.fusion_mb) MiB/\(.best_measured.cycle_ms) ms/cache \(.best_measured.cache), best predicted \(.best_predicted.fusion_mb) MiB/\(.best_predicted.cycle_ms) ms/cache \(.best_predicted.cache); median max/min over repeated runs \(.median_run_spread*100|round/100); what-if of \(.grid_points) settings took \(.whatif_seconds*100|round/100) s"' "$RESULT"
