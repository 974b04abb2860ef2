"""Whether a rank's SIGTERM dump fits the grace Open MPI gives it: a job of
one rank (under mpirun, as users run) fills its flight recorder's default
window with small grouped allreduces and keeps training; this script then
sends mpirun SIGTERM, as a scheduler or a user does. mpirun passes SIGTERM
on to the rank and SIGKILLs it odls_base_sigkill_timeout seconds later (1 s
by default here). Per repetition: whether the rank's 'sigterm' dump exists
(a dump is renamed into place only when whole), the seconds from SIGTERM to
mpirun's exit, and the dump's size. Prints a table; --json writes it.

    python3 bench/flight_sigterm_bench.py --repeat 5 --json bench/results/flight_sigterm_np1.json
"""

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def child(fill_seconds):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    import ringscope.tensorflow as hvd
    hvd.init()
    xs = [tf.ones([16]) for _ in range(50)]
    t0 = time.monotonic()
    announced = False
    while True:  # until SIGTERM ends the process
        hvd.grouped_allreduce(xs, name="bench.sigterm")
        if not announced and time.monotonic() - t0 > fill_seconds:
            print("READY", flush=True)
            announced = True


def one(build, fill_seconds):
    with tempfile.TemporaryDirectory() as dumps:
        env = dict(os.environ, PYTHONPATH=str(ROOT / build / "python"),
                   RINGSCOPE_FLIGHT_RECORDER_DIR=dumps, TF_CPP_MIN_LOG_LEVEL="2")
        proc = subprocess.Popen(
            [str(ROOT / "scripts/mpirun.sh"), "-np", "1", "-x", "PYTHONPATH", "-x",
             "RINGSCOPE_FLIGHT_RECORDER_DIR", "-x", "TF_CPP_MIN_LOG_LEVEL",
             str(ROOT / ".venv/bin/python"), __file__, "--child", "--fill-seconds",
             str(fill_seconds)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if "READY" in line:
                break
        else:
            sys.exit("the job ended before it was ready:\n" + "".join(lines[-30:]))
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=60)
        seconds = time.monotonic() - t0
        found = sorted(Path(dumps).rglob("dump*-sigterm.rank0.sqlite"))
        events = 0
        if found:
            with sqlite3.connect(f"file:{found[0]}?mode=ro", uri=True) as db:
                events = db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
        return {"dumped": bool(found), "seconds_to_exit": seconds, "events_in_dump": events,
                "dump_bytes": found[0].stat().st_size if found else 0}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--fill-seconds", type=float, default=15.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--build", default="build")
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.child:
        child(args.fill_seconds)
        return
    runs = [one(args.build, args.fill_seconds) for _ in range(args.repeat)]
    print(f"{'run':>4} {'dumped':>7} {'SIGTERM to exit':>16} {'events':>8} {'file':>8}")
    for i, r in enumerate(runs, 1):
        print(f"{i:>4} {str(r['dumped']):>7} {r['seconds_to_exit']:>15.2f}s "
              f"{r['events_in_dump']:>8} {r['dump_bytes'] / 1e6:>6.1f}MB")
    result = {"benchmark": "flight_sigterm", "ranks": 1, "runs": runs,
              "dumped": sum(r["dumped"] for r in runs), "repeat": len(runs)}
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
