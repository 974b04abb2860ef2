"""`ringscope trace blame` on what the ranks of a misbehaving job left (the
flight recorder's dumps), one scenario per run of tests/tf/flight_scenario.py
under mpirun, the verdict asserted from `blame --json`; every dump passes
`ringscope trace check`. Then bad input: two jobs' files mixed, one rank's
file alone, a corrupt file.

argv: BUILD_DIR PYTHON SCENARIO NP REPEAT (SCENARIO: skip, sleep, sigusr1,
stop, kill, crash, slow, steady, bad-input)."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

BUILD, PYTHON, SCENARIO, NP = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
REPEAT = int(sys.argv[5]) if len(sys.argv) > 5 else 1
HERE = pathlib.Path(__file__).resolve().parent
TRACE = os.path.join(BUILD, "bin", "ringscope-trace")
MPIRUN = os.environ.get("MPIEXEC", "mpirun")


OP_TIMEOUT = 5


def run_job(scenario, np_, dump_dir, expect_ok=True):
    """Runs the job; returns (exit status, seconds, output)."""
    env = dict(os.environ, PYTHONPATH=f"{BUILD}/python", TF_CPP_MIN_LOG_LEVEL="2",
               RINGSCOPE_FLIGHT_RECORDER_DIR=str(dump_dir), RINGSCOPE_STALL_CHECK_SECONDS="1",
               RINGSCOPE_STALL_SHUTDOWN_SECONDS="4" if scenario == "skip" else "0",
               RINGSCOPE_OP_TIMEOUT_SECONDS=str(OP_TIMEOUT))
    if scenario in ("stop", "kill", "crash"):
        env["RINGSCOPE_STALL_CHECK_SECONDS"] = "0"  # the timeout and the signal dump, alone
    # Live straggler windows of 1 s, with rank 0's judgement of each logged.
    env["RINGSCOPE_STRAGGLER_WINDOW_SECONDS"] = "1"
    env["RINGSCOPE_LOG_LEVEL"] = "2" if scenario in ("slow", "steady") else "1"
    forward = []
    for var in ("PYTHONPATH", "TF_CPP_MIN_LOG_LEVEL", "RINGSCOPE_FLIGHT_RECORDER_DIR",
                "RINGSCOPE_STALL_CHECK_SECONDS", "RINGSCOPE_STALL_SHUTDOWN_SECONDS",
                "RINGSCOPE_OP_TIMEOUT_SECONDS", "RINGSCOPE_STRAGGLER_WINDOW_SECONDS",
                "RINGSCOPE_LOG_LEVEL"):
        forward += ["-x", var]
    start = time.monotonic()
    out = subprocess.run([MPIRUN, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                          "-np", str(np_)] + forward +
                         [PYTHON, str(HERE / "flight_scenario.py"), scenario],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=300)
    seconds = time.monotonic() - start
    if expect_ok and out.returncode != 0:
        sys.exit(f"the {scenario} job failed ({out.returncode}):\n{out.stdout[-4000:]}")
    return out.returncode, seconds, out.stdout


def blame(*inputs):
    out = subprocess.run([TRACE, "blame", "--json", *map(str, inputs)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=120)
    verdict = json.loads(out.stdout) if out.stdout.strip().startswith("{") else None
    return out.returncode, verdict, out.stderr


def check_all(dump_dir):
    """Every set of dumps (the same dump<k>-<reason> of every rank) passes check."""
    files = sorted(pathlib.Path(dump_dir).rglob("*.rank*.sqlite"))
    assert files, f"no dumps in {dump_dir}"
    sets = {}
    for f in files:
        sets.setdefault((f.parent, f.name.split(".rank")[0]), []).append(str(f))
    for group in sets.values():
        out = subprocess.run([TRACE, "check", *group], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=120)
        assert out.returncode == 0, f"check {group}:\n{out.stdout}"
    return files


def expect(cond, what, verdict):
    if not cond:
        sys.exit(f"{SCENARIO}: {what}\nverdict: {json.dumps(verdict, indent=1)[:6000]}")


def scenario_skip(dump_dir):
    run_job("skip", NP, dump_dir)
    check_all(dump_dir)
    rc, v, err = blame(dump_dir)
    expect(rc == 3, f"exit status {rc} ({err})", v)
    expect(v["verdict"] == "failed", "verdict", v)
    first = v["stuck"][0]
    expect(first["name"] == "grad/b" and first["missing"] == [1], "the stuck collective", v)
    expect(first["waiting"] == [r for r in range(NP) if r != 1], "who waits", v)
    expect(v["diagnosis"][0].startswith("rank 1 never submitted 'grad/b'"), "diagnosis", v)
    expect("flight_scenario.py" in v["diagnosis"][0] and "train_step" in v["diagnosis"][0],
           "rank 1's frame in the diagnosis", v)


def scenario_sleep(dump_dir):
    run_job("sleep", NP, dump_dir)
    check_all(dump_dir)
    rc, v, err = blame(dump_dir)
    expect(rc == 3 and v["verdict"] == "hung", f"exit {rc}, verdict ({err})", v)
    first = v["stuck"][0]
    expect(first["name"] == "grad/b" and first["missing"] == [2], "the stuck collective", v)
    expect("input_pipeline_stuck" in v["diagnosis"][0], "rank 2 is in its input pipeline", v)


def scenario_sigusr1(dump_dir):
    run_job("sigusr1", NP, dump_dir)
    files = check_all(dump_dir)
    expect(len(files) == NP, f"{len(files)} dumps for {NP} ranks", None)
    rc, v, err = blame(dump_dir)
    expect(rc == 0 and v["verdict"] == "ok", f"exit {rc} ({err})", v)
    expect(all(r["dump_reason"] == "signal" for r in v["ranks"]), "every rank's signal dump", v)


def scenario_stop(dump_dir):
    rc, seconds, output = run_job("stop", NP, dump_dir, expect_ok=False)
    # The survivors time out, dump, and abort the job: it ends in bounded
    # time (TensorFlow's start and the steps before take ~10 s) and fails.
    expect(rc != 0, f"exit status {rc}:\n{output[-3000:]}", None)
    expect(seconds < OP_TIMEOUT + 45, f"the job took {seconds:.0f} s to end", None)
    expect("MPI_Abort" in output, "the survivors abort the job:\n" + output[-3000:], None)
    check_all(dump_dir)
    rc, v, err = blame(dump_dir)
    expect(rc == 3 and v["verdict"] == "failed", f"exit {rc} ({err})", v)
    survivors = [r for r in range(NP) if r != 1]
    # Each survivor dumped on its timeout; one whose own timeout came after
    # the first survivor aborted the job dumped again on mpirun's SIGTERM
    # (its newest file speaks for it, the timeout dump is among the older).
    def timed_out(r):
        rank = v["ranks"][r]
        return rank["dump_reason"] == "timeout" or (
            rank["dump_reason"] == "sigterm" and
            any("-timeout." in f for f in rank["other_files"]))
    expect(all(timed_out(r) for r in survivors), "their dumps", v)
    expect(v["diagnosis"][0].startswith("rank 1 stopped answering: ranks " +
                                        " and ".join(map(str, survivors))) if NP == 3 else
           v["diagnosis"][0].startswith("rank 1 stopped answering"), "names rank 1", v)
    # Once the job is aborted, mpirun resumes and ends the stopped rank:
    # its SIGTERM dump, when it manages one, shows where it had stopped.
    if v["ranks"][1]["file"]:
        expect(v["ranks"][1]["dump_reason"] == "sigterm", "the stopped rank's dump", v)
        expect("train_step" in v["ranks"][1]["user_frame"], "its frame", v)


def scenario_kill(dump_dir):
    rc, seconds, output = run_job("kill", NP, dump_dir, expect_ok=False)
    expect(rc != 0, f"exit status {rc}", None)
    files = check_all(dump_dir)
    ranks = sorted({int(f.name.split(".rank")[1].split(".")[0]) for f in files})
    survivors = [r for r in range(NP) if r != 1]
    expect(ranks == survivors, f"dumps of ranks {ranks}:\n{output[-3000:]}", None)
    rc, v, err = blame(dump_dir)
    expect(rc == 3 and v["verdict"] in ("failed", "killed"), f"exit {rc} ({err})", v)
    expect(v["ranks"][1]["file"] == "", "the killed rank left no file", v)
    expect(any(d.startswith("rank 1 left no file") for d in v["diagnosis"]), "names rank 1", v)


def scenario_crash(dump_dir):
    rc, _, output = run_job("crash", NP, dump_dir, expect_ok=False)
    expect(rc != 0, f"exit status {rc}", None)
    files = check_all(dump_dir)
    crashed = [f for f in files if ".rank1." in f.name]
    expect(len(crashed) == 1 and "fatal-signal" in crashed[0].name,
           f"the crashed rank's dump: {[f.name for f in files]}\n{output[-3000:]}", None)
    rc, v, err = blame(dump_dir)
    expect(rc == 3 and v["verdict"] == "failed", f"exit {rc}, verdict ({err})", v)
    expect(v["ranks"][1]["dump_reason"] == "fatal-signal", "rank 1's reason", v)
    expect("SIGSEGV" in v["ranks"][1]["dump_detail"], "the signal named", v)
    expect("crash" in v["ranks"][1]["user_frame"], "its Python frame", v)
    expect(any(d.startswith("rank 1 ended with fatal-signal") for d in v["diagnosis"]),
           "diagnosis names the crash", v)


def scenario_slow(dump_dir):
    _, _, output = run_job("slow", NP, dump_dir)
    warnings = [l for l in output.splitlines() if "warning: straggler: rank" in l]
    expect(warnings, "no live straggler warning:\n" + output[-3000:], None)
    expect(all("straggler: rank 1 (host " in w for w in warnings) and
           all(w.startswith("[ringscope rank 0]") for w in warnings),
           "rank 0 names rank 1 and its host:\n" + "\n".join(warnings), None)
    check_all(dump_dir)
    rc, v, err = blame(dump_dir)
    expect(rc == 3 and v["verdict"] == "slow", f"exit {rc}, verdict ({err})", v)
    expect(v["diagnosis"][0].startswith("rank 1 held the others back"), "diagnosis", v)
    expect(all(r["straggler"] == 1 and r["straggler_count"] >= 1 for r in v["ranks"]),
           "every rank's dump holds the warning", v)


def scenario_steady(dump_dir):
    _, _, output = run_job("steady", NP, dump_dir)
    expect("straggler window:" in output, "rank 0 judged no window:\n" + output[-3000:], None)
    expect("warning: straggler" not in output, "a warning on a healthy job:\n" +
           "\n".join(l for l in output.splitlines() if "straggler" in l), None)
    rc, v, err = blame(dump_dir)
    expect(rc == 0 and v["verdict"] == "ok", f"exit {rc} ({err})", v)


def scenario_bad_input(dump_dir):
    a, b = pathlib.Path(dump_dir, "a"), pathlib.Path(dump_dir, "b")
    run_job("sigusr1", NP, a)
    run_job("skip", NP, b)
    rc, v, err = blame(a, b)
    expect(rc == 1 and "different jobs" in err, f"mixed jobs: exit {rc}: {err}", v)
    one = sorted(b.rglob("dump*-stall-shutdown.rank0.sqlite"))[0]
    rc, v, err = blame(one)
    expect(rc == 3 and any("only rank 0's file" in n for n in v["notes"]), "one rank alone", v)
    expect(all(r["file"] == "" for r in v["ranks"][1:]), "the others unknown", v)
    corrupt = pathlib.Path(dump_dir, "corrupt.rank1.sqlite")
    corrupt.write_bytes(b"SQLite format 3\0" + os.urandom(4096))
    rc, v, err = blame(one, corrupt)
    expect(rc == 3 and any("skipped" in n and "corrupt.rank1" in n for n in v["notes"]),
           f"a corrupt file is skipped with a note (exit {rc}, {err})", v)
    rc, v, err = blame(corrupt)
    expect(rc == 1 and "could be read" in err, f"only a corrupt file: exit {rc}: {err}", v)


for i in range(REPEAT):
    d = tempfile.mkdtemp(prefix=f"ringscope-blame-{SCENARIO}-")
    try:
        globals()["scenario_" + SCENARIO.replace("-", "_")](d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print(f"{SCENARIO} np={NP}: repetition {i + 1} of {REPEAT} passed", flush=True)
