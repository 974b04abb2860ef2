#!/usr/bin/env python3
"""What the always-on flight recorder costs: the same launches with it off
(RINGSCOPE_FLIGHT_RECORDER=0) and at its default, interleaved in pairs so
the machine's noise hits both alike. Two workloads at np=2:

- the C++ runtime's fused step of 200 x 16 KiB allreduces
  (build/bin/negotiation_bench, its fusion_on_step_ms), untraced;
- the digits Keras training (examples/tf_keras_digits.py, its samples/s).

Prints a table and writes JSON: every pair's numbers, each pair's on/off
throughput ratio, and the median ratio per workload.

    python3 bench/flight_overhead_runs.py --pairs 7 --json bench/results/flight_overhead_np2.json

With --what straggler the pairs are the live straggler warnings' sampling
off (RINGSCOPE_STRAGGLER_WINDOW_SECONDS=0) and at its default instead, the
recorder at its default in both:

    python3 bench/flight_overhead_runs.py --what straggler --pairs 7 --skip-digits \
        --json bench/results/straggler_overhead_np2.json
"""

import argparse
import json
import os
import statistics
import tempfile
from pathlib import Path

from launch_util import ROOT, digits_samples_per_s, run


def step_ms(env, build):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "negotiation.json"
        run([str(ROOT / "scripts/mpirun.sh"), "-np", "2", str(ROOT / build / "bin/negotiation_bench"),
             "--json", str(path)], env)
        return json.loads(path.read_text())["fusion_on_step_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=7)
    ap.add_argument("--build", default="build")
    ap.add_argument("--skip-digits", action="store_true", help="only the C++ step")
    ap.add_argument("--what", choices=("recorder", "straggler"), default="recorder",
                    help="what is off in the 'off' runs")
    ap.add_argument("--json")
    args = ap.parse_args()

    base = dict(os.environ)
    base["PYTHONPATH"] = str(ROOT / args.build / "python")
    dumps = tempfile.mkdtemp(prefix="ringscope-flight-bench-")
    base["RINGSCOPE_FLIGHT_RECORDER_DIR"] = dumps  # none expected; never the source tree
    variable = {"recorder": "RINGSCOPE_FLIGHT_RECORDER",
                "straggler": "RINGSCOPE_STRAGGLER_WINDOW_SECONDS"}[args.what]
    for name in ("RINGSCOPE_FLIGHT_RECORDER", "RINGSCOPE_STRAGGLER_WINDOW_SECONDS"):
        base.pop(name, None)  # the defaults, but for the one switched off
    modes = {"off": dict(base, **{variable: "0"}), "on": dict(base)}

    workloads = [("cpp_step_ms", step_ms, "lower")]
    if not args.skip_digits:
        workloads.append(("digits_samples_per_s", digits_samples_per_s, "higher"))
    pairs = []
    for i in range(args.pairs):
        pair = {}
        order = ("off", "on") if i % 2 == 0 else ("on", "off")  # neither always first
        for key, fn, _ in workloads:
            for mode in order:
                pair[f"{key}_{mode}"] = fn(modes[mode], args.build)
        pairs.append(pair)
        print(f"pair {i + 1}: " + ", ".join(f"{k} {v:.3f}" for k, v in pair.items()), flush=True)

    result = {"benchmark": "flight_overhead" if args.what == "recorder" else "straggler_overhead",
              "switched": variable, "ranks": 2, "pairs": pairs}
    rows = []
    for key, _, better in workloads:
        # Throughput on / off: for a step time, off / on.
        ratios = [(p[f"{key}_off"] / p[f"{key}_on"]) if better == "lower"
                  else (p[f"{key}_on"] / p[f"{key}_off"]) for p in pairs]
        result[f"{key}_throughput_ratios"] = ratios
        result[f"{key}_median_ratio"] = statistics.median(ratios)
        result[f"{key}_off_median"] = statistics.median(p[f"{key}_off"] for p in pairs)
        result[f"{key}_on_median"] = statistics.median(p[f"{key}_on"] for p in pairs)
        rows.append((key, result[f"{key}_off_median"], result[f"{key}_on_median"],
                     result[f"{key}_median_ratio"], min(ratios), max(ratios)))
    print(f"\n{'workload (np=2)':<24} {'off':>10} {'on':>10} {'on/off thr.':>12} {'range':>15}")
    for key, off, on, med, lo, hi in rows:
        print(f"{key:<24} {off:>10.3f} {on:>10.3f} {med:>12.3f} {lo:>7.3f}-{hi:.3f}")
    left = sorted(Path(dumps).rglob("*.sqlite"))
    result["unexpected_dumps"] = [str(p) for p in left]
    if left:
        print(f"warning: {len(left)} flight recorder dumps were written: {left[:3]}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
