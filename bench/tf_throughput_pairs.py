#!/usr/bin/env python3
"""Training throughput through the TensorFlow path at np=2, in interleaved
pairs so the machine's noise hits both sides alike:

- the digits main job (examples/tf_keras_digits.py, samples/s): this build
  against another build's Python package and op library (--baseline), the
  regression check of a change to the TF path;
- the same job and the synthetic ResNet benchmark
  (examples/tf_synthetic_benchmark.py, images/s) untraced against traced
  (ringscope run --trace): what tracing costs on this build.

Each pair runs its two sides back to back, in alternating order. Prints a
table of medians and the median of the pairs' ratios, and writes JSON with
every pair.

    python3 bench/tf_throughput_pairs.py --pairs 5 --baseline OTHER_BUILD/python \\
        --baseline-label COMMIT --json bench/results/tf_throughput_pairs_np2.json
"""

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

from launch_util import ROOT, digits_samples_per_s, ringscope_run


def synthetic(build, env, trace=None):
    text = ringscope_run(build, env, "examples/tf_synthetic_benchmark.py", ["--steps", "20"], trace)
    found = re.findall(r"total: ([0-9.]+)", text)
    if not found:
        sys.exit("no 'total:' images/s in the synthetic benchmark's output:\n" + text[-2000:])
    return float(found[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--build", default="build")
    ap.add_argument("--baseline", help="another build's python/ folder (its op library and package)")
    ap.add_argument("--baseline-label", default="baseline")
    ap.add_argument("--json")
    args = ap.parse_args()

    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / args.build / "python")
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    trace = tempfile.mkdtemp(prefix="ringscope-throughput-pairs-")
    # (key, side a, side b, what): each side a function of nothing.
    comparisons = [("synthetic_images_per_s", "untraced", "traced",
                    lambda: synthetic(args.build, env), lambda: synthetic(args.build, env, trace)),
                   ("digits_samples_per_s", "untraced", "traced",
                    lambda: digits_samples_per_s(env, args.build),
                    lambda: digits_samples_per_s(env, args.build, trace))]
    if args.baseline:
        old = dict(env, PYTHONPATH=str(Path(args.baseline).resolve()))
        comparisons.insert(0, ("digits_samples_per_s_vs_baseline", "old", "new",
                               lambda: digits_samples_per_s(old, args.build),
                               lambda: digits_samples_per_s(env, args.build)))
    pairs = []
    for i in range(args.pairs):
        pair = {}
        for key, a, b, fa, fb in comparisons:
            order = ((a, fa), (b, fb)) if i % 2 == 0 else ((b, fb), (a, fa))
            for side, fn in order:
                pair[f"{key}_{side}"] = fn()
        pairs.append(pair)
        print(f"pair {i + 1}: " + ", ".join(f"{k} {v:.1f}" for k, v in pair.items()), flush=True)

    result = {"benchmark": "tf_throughput_pairs", "ranks": 2, "pairs": pairs,
              "baseline_label": args.baseline_label if args.baseline else None}
    print(f"\nnp=2, {args.pairs} interleaved pairs; ratio = {'b / a'} per pair, median")
    print(f"{'workload':<36} {'a':>12} {'b':>12} {'b/a median':>11} {'range':>13}")
    for key, a, b, _, _ in comparisons:
        ratios = [p[f"{key}_{b}"] / p[f"{key}_{a}"] for p in pairs]
        result[key] = {"a": a, "b": b, "ratios": ratios, "median_ratio": statistics.median(ratios),
                       "a_median": statistics.median(p[f"{key}_{a}"] for p in pairs),
                       "b_median": statistics.median(p[f"{key}_{b}"] for p in pairs)}
        r = result[key]
        print(f"{key:<36} {a + ' ' + format(r['a_median'], '.1f'):>12} "
              f"{b + ' ' + format(r['b_median'], '.1f'):>12} {r['median_ratio']:>11.3f} "
              f"{min(ratios):>6.3f}-{max(ratios):.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
