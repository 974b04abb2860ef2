#!/usr/bin/env python3
"""The flight recorder's memory bound over a long run: build/bin/
flight_memory_bench once with the recorder off and once at its default (or
--mb), in processes of their own; the difference of their resident memory
at the end is the recorder's, set against its budget, with its own
accounting. Prints a table and writes JSON.

    python3 bench/flight_memory_runs.py --steps 1000000 --tensors 2 --json bench/results/flight_memory.json
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(build, steps, tensors, mb):
    env = dict(os.environ, RINGSCOPE_FLIGHT_RECORDER=str(mb))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "m.json"
        p = subprocess.run([str(ROOT / "scripts/mpirun.sh"), "-np", "1",
                            str(ROOT / build / "bin/flight_memory_bench"), "--steps", str(steps),
                            "--tensors", str(tensors), "--json", str(out)],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=3600)
        if p.returncode != 0:
            sys.exit(f"flight_memory_bench failed ({p.returncode}):\n{p.stdout[-3000:]}")
        return json.loads(out.read_text())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--tensors", type=int, default=200)
    ap.add_argument("--mb", type=int, default=16, help="the recorder's budget in MiB")
    ap.add_argument("--build", default="build")
    ap.add_argument("--json")
    args = ap.parse_args()
    off = run(args.build, args.steps, args.tensors, 0)
    on = run(args.build, args.steps, args.tensors, args.mb)
    budget = args.mb << 20
    diff = on["rss_end_bytes"] - off["rss_end_bytes"]
    result = {"benchmark": "flight_memory_runs", "steps": args.steps, "tensors": args.tensors,
              "ops": on["ops"], "budget_bytes": budget, "off": off, "on": on,
              "rss_difference_bytes": diff, "rss_difference_over_budget": diff / budget,
              "held_over_budget": on["held_bytes"] / budget,
              "rss_growth_off_bytes": off["rss_end_bytes"] - off["rss_start_bytes"],
              "rss_growth_on_bytes": on["rss_end_bytes"] - on["rss_start_bytes"]}
    mib = 1 << 20
    print(f"{args.steps} steps x {args.tensors} allreduces ({on['ops']:,} ops), "
          f"{on['recorded_events']:,} events recorded, ring of {on['capacity_events']:,}")
    print(f"{'':34} {'off':>10} {'on':>10}")
    print(f"{'RSS after warm-up (MiB)':34} {off['rss_start_bytes'] / mib:>10.1f} "
          f"{on['rss_start_bytes'] / mib:>10.1f}")
    print(f"{'RSS at the end (MiB)':34} {off['rss_end_bytes'] / mib:>10.1f} "
          f"{on['rss_end_bytes'] / mib:>10.1f}")
    print(f"RSS difference at the end: {diff / mib:.1f} MiB = {diff / budget:.3f} x the budget; "
          f"the recorder's own count: {on['held_bytes'] / mib:.1f} MiB "
          f"({on['held_bytes'] / budget:.3f} x)")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
