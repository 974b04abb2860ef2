#!/usr/bin/env python3
"""Process sets against the world, in interleaved launches of
build/bin/process_set_bench: a world of 2 ranks (np=2, beside an idle job
of 2 more ranks that idle as the set's waiting ranks do, so both share the
machine alike), a process set of 2 ranks inside a world of 4 whose other
2 ranks wait (np=4), and
two disjoint sets of 2 at np=4, alone and at once. Each launch's numbers
are medians of its rounds; the table gives the median over launches, the
set / world ratio of each launch pair and the disjoint sets' overlap (the
sum of their times alone over their time at once: 2 where they overlap
fully, 1 where they run one after the other). Writes JSON.

    python3 bench/process_set_runs.py --launches 3 --json bench/results/process_sets.json
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def launch(build, np, mode, rounds, beside_idle=False):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.json"
        cmd = [str(ROOT / "scripts/mpirun.sh"), "-np", str(np),
               str(ROOT / build / "bin/process_set_bench"), "--mode", mode, "--rounds",
               str(rounds), "--json", str(path)]
        if mode == "set":
            cmd += ["--set-size", "2"]
        idle = None
        if beside_idle:  # started first; it idles past the measured launch's end
            idle = subprocess.Popen(
                [str(ROOT / "scripts/mpirun.sh"), "-np", "2",
                 str(ROOT / build / "bin/process_set_bench"), "--mode", "idle",
                 "--idle-seconds", "12"], cwd=ROOT, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL)
            time.sleep(3)
        out = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=900)
        if idle is not None and idle.wait(timeout=120) != 0:
            sys.exit("the idle job beside the world's launch failed")
        if out.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout[-3000:]}")
        return json.loads(path.read_text())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--launches", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--build", default="build")
    ap.add_argument("--json")
    args = ap.parse_args()
    runs = {"world": [], "set": [], "disjoint": []}
    for _ in range(args.launches):
        runs["world"].append(launch(args.build, 2, "world", args.rounds, beside_idle=True))
        runs["set"].append(launch(args.build, 4, "set", args.rounds))
        runs["disjoint"].append(launch(args.build, 4, "disjoint", args.rounds))
    labels = [s["label"] for s in runs["world"][0]["sizes"]]
    result = {"benchmark": "process_set_runs", "launches": args.launches,
              "rounds": args.rounds, "runs": runs, "sizes": []}
    print(f"{args.launches} interleaved launches of each, medians of {args.rounds} rounds each")
    print("| size | world of 2 (np=2) | set of 2 in np=4 | set / world | "
          "two sets of 2, each alone | both at once | overlap |")
    print("|---|---|---|---|---|---|---|")
    for i, label in enumerate(labels):
        world = [r["sizes"][i]["us"] for r in runs["world"]]
        in_set = [r["sizes"][i]["us"] for r in runs["set"]]
        ratios = [s / w for s, w in zip(in_set, world)]
        alone = [(r["sizes"][i]["us"] + r["sizes"][i]["upper_alone_us"]) / 2
                 for r in runs["disjoint"]]
        both = [r["sizes"][i]["both_us"] for r in runs["disjoint"]]
        overlap = [r["sizes"][i]["overlap"] for r in runs["disjoint"]]
        row = {"label": label, "world_us": statistics.median(world),
               "set_us": statistics.median(in_set), "set_over_world": ratios,
               "median_set_over_world": statistics.median(ratios),
               "alone_us": statistics.median(alone), "both_us": statistics.median(both),
               "overlap": overlap, "median_overlap": statistics.median(overlap)}
        result["sizes"].append(row)
        print(f"| {label} | {row['world_us']:.1f} µs | {row['set_us']:.1f} µs | "
              f"{row['median_set_over_world']:.2f} ({min(ratios):.2f}–{max(ratios):.2f}) | "
              f"{row['alone_us']:.1f} µs | {row['both_us']:.1f} µs | "
              f"{row['median_overlap']:.2f} ({min(overlap):.2f}–{max(overlap):.2f}) |")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
