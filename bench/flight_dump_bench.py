"""How long a flight recorder dump of a full default window takes, and how
many seconds of a busy workload that window holds. One rank records grouped
allreduces of 50 small tensors (hundreds of thousands of events a second,
untraced) until the ring has wrapped, then times dump_flight_recorder three
times. Prints a table and, with --json, writes the numbers.

    PYTHONPATH=build/python .venv/bin/python bench/flight_dump_bench.py \\
        --json bench/results/flight_dump_np1.json
"""

import argparse
import json
import os
import sqlite3
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

import ringscope.tensorflow as hvd  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fill-seconds", type=float, default=20.0)
    ap.add_argument("--json")
    args = ap.parse_args()
    hvd.init()
    xs = [tf.ones([16]) for _ in range(50)]
    t0 = time.monotonic()
    while time.monotonic() - t0 < args.fill_seconds:
        hvd.grouped_allreduce(xs, name="bench.flight")
    filled = time.monotonic() - t0
    seconds, meta, size = [], {}, 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(3):
            t = time.perf_counter()
            path = hvd.dump_flight_recorder(os.path.join(tmp, f"dump{i}.sqlite"))
            seconds.append(time.perf_counter() - t)
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            meta = dict(db.execute("SELECT key, value FROM meta"))
            held = db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        size = os.path.getsize(path)
    recorded = int(meta["flight_recorder_recorded_events"])
    rate = recorded / filled
    result = {
        "benchmark": "flight_dump", "ranks": hvd.size(),
        "budget_bytes": int(meta["flight_recorder_budget_bytes"]),
        "capacity_events": int(meta["flight_recorder_capacity_events"]),
        "events_in_dump": held, "events_per_s": rate, "window_s": held / rate,
        "dump_s": seconds, "dump_median_s": statistics.median(seconds), "file_bytes": size,
    }
    hvd.shutdown()
    print(f"{'budget':>10} {'capacity':>10} {'events/s':>10} {'window':>8} {'dump':>8} {'file':>8}")
    print(f"{result['budget_bytes'] >> 20:>7} MiB {result['capacity_events']:>10} "
          f"{rate / 1e3:>8.0f} k {result['window_s']:>7.2f}s {result['dump_median_s']:>7.3f}s "
          f"{size / 1e6:>6.1f}MB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
