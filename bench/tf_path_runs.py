"""Runs bench/tf_path_bench.py several times at one np, interleaved with
another build's Python package when one is given (old, new, old, new, ...),
and writes every launch's results with the median over launches of each
number: the form docs/performance.md quotes ("TensorFlow path").

    python3 bench/tf_path_runs.py --np 2 --launches 3 \\
        [--baseline /tmp/old-build/python --baseline-label COMMIT] \\
        --json bench/results/tf_path_np2.json

--pythonpath is this build's package (default build/python); --baseline
another build's, whose op library may lack the C++ step (its value is then
null). Each launch is `scripts/mpirun.sh -np N env PYTHONPATH=... python
bench/tf_path_bench.py --json FILE`.
"""

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent


def launch(np_, pythonpath, steps, out):
    cmd = [str(ROOT / "scripts" / "mpirun.sh"), "-np", str(np_), "env",
           f"PYTHONPATH={pythonpath}", str(ROOT / ".venv" / "bin" / "python"),
           str(HERE / "tf_path_bench.py"), "--steps", str(steps), "--json", str(out)]
    subprocess.run(cmd, check=True, cwd=ROOT)
    return json.loads(pathlib.Path(out).read_text())


def medians(runs):
    keys = [k for k, v in runs[0].items() if v is None or isinstance(v, (int, float))]
    result = {}
    for k in keys:
        values = [r[k] for r in runs if isinstance(r.get(k), (int, float))]
        result[k] = statistics.median(values) if values else None
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--np", type=int, required=True)
    parser.add_argument("--launches", type=int, default=3)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--pythonpath", default=str(ROOT / "build" / "python"))
    parser.add_argument("--baseline", help="another build's python package, run interleaved")
    parser.add_argument("--baseline-label", default="another build",
                        help="what the baseline is, for the report (a commit, say)")
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    sides = [("new", args.pythonpath)] + ([("old", args.baseline)] if args.baseline else [])
    runs = {name: [] for name, _ in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.launches):
            # alternate which side goes first, so a drift in the machine's
            # load does not favour one
            order = sides if i % 2 == 0 else list(reversed(sides))
            for name, path in order:
                out = pathlib.Path(tmp) / f"{name}{i}.json"
                runs[name].append(launch(args.np, path, args.steps, out))
                print(f"launch {i + 1}/{args.launches} {name}: done", file=sys.stderr)
    result = {"benchmark": "tf_path_runs", "ranks": args.np, "launches": args.launches,
              "steps": args.steps, "new": medians(runs["new"]), "new_runs": runs["new"]}
    if args.baseline:
        result["old"] = medians(runs["old"])
        result["old_label"] = args.baseline_label
        result["old_runs"] = runs["old"]
    pathlib.Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    keys = ["cpp_step_us", "grouped_eager_us", "raw_grouped_us", "tf_floor_grouped_eager_us",
            "function_ops_us", "tf_floor_function_us",
            "tape_allreduce_eager_us", "tape_allreduce_function_us", "tape_meet_function_us",
            "eager_one_4k_us",
            "cpp_one_4k_us", "tf_floor_eager_op_us"]
    print(f"np={args.np}, median of {args.launches} launches (each a median of "
          f"{args.steps} steps)")
    print(f"{'':34}" + "".join(f"{name:>12}" for name, _ in sides))
    for k in keys:
        cells = "".join("         n/a" if result[name].get(k) is None
                        else f"{result[name][k]:12.0f}"
                        for name, _ in sides)
        print(f"{k:34}{cells}")


if __name__ == "__main__":
    main()
