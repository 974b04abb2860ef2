"""The flight recorder from Python (np=2): dump_flight_recorder writes a
per-rank trace file with the recent ops and every Python thread's stack;
SIGUSR1 dumps a live job that goes on; SIGINT dumps and Python still
raises KeyboardInterrupt; the first stall warning (rank 1
holds back one tensor, RINGSCOPE_STALL_CHECK_SECONDS=1) dumps on every rank,
rank 0's listing the tensor it waits for and its stack showing where this
script waits for it."""

import json
import os
import pathlib
import signal
import sqlite3
import tempfile
import time

from harness import finish, hvd, test, tf

hvd.init()
R = hvd.rank()
DIR = pathlib.Path(os.environ["RINGSCOPE_FLIGHT_RECORDER_DIR"])


def meta(path):
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return dict(db.execute("SELECT key, value FROM meta"))


def names(path, kind):
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return {row[0] for row in db.execute(
            "SELECT s.text FROM events e JOIN strings s ON s.id = e.name_id "
            "JOIN event_kinds k ON k.kind = e.kind WHERE k.name = ?", (kind,))}


def dumps(reason):
    return sorted(DIR.glob(f"*/dump*-{reason}.rank{R}.sqlite"))


def wait_for(fn, seconds=30):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        found = fn()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


@test
def a_dump_holds_recent_ops_and_python_stacks():
    for i in range(3):
        hvd.allreduce(tf.ones([8]), name=f"flight.recent/{i}")
    with tempfile.TemporaryDirectory() as tmp:
        path = hvd.dump_flight_recorder(os.path.join(tmp, "mine.sqlite"))
        assert path == os.path.join(tmp, f"mine.rank{R}.sqlite"), path
        m = meta(path)
        assert m["dump_reason"] == "user", m
        assert m["pending_op_count"] == "0", m
        assert int(m["flight_recorder_bytes_held"]) <= int(m["flight_recorder_budget_bytes"]), m
        assert "a_dump_holds_recent_ops_and_python_stacks" in m["python_stacks"], \
            m["python_stacks"]
        assert {f"flight.recent/{i}" for i in range(3)} <= names(path, "ENQUEUE")


@test
def sigusr1_dumps_and_training_goes_on():
    before = len(dumps("signal"))
    os.kill(os.getpid(), signal.SIGUSR1)
    found = wait_for(lambda: dumps("signal")[before:])
    m = meta(found[0])
    assert m["dump_reason"] == "signal" and "SIGUSR1" in m["dump_detail"], m
    out = hvd.allreduce(tf.ones([4]), op=hvd.Sum, name="flight.after_signal")
    assert out.numpy().tolist() == [hvd.size()] * 4


@test
def sigint_dumps_and_python_still_raises_keyboard_interrupt():
    before = len(dumps("sigint"))
    try:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(200):  # Python raises it between bytecodes
            time.sleep(0.01)
        raise AssertionError("SIGINT raised no KeyboardInterrupt")
    except KeyboardInterrupt:
        pass
    found = wait_for(lambda: dumps("sigint")[before:])
    m = meta(found[0])
    assert m["dump_reason"] == "sigint" and "SIGINT" in m["dump_detail"], m
    out = hvd.allreduce(tf.ones([4]), op=hvd.Sum, name="flight.after_sigint")
    assert out.numpy().tolist() == [hvd.size()] * 4


def rank0_waits_here():
    return hvd.allreduce(tf.ones([4]), op=hvd.Sum, name="flight.held_back")


@test
def the_first_stall_warning_dumps_every_rank():
    if R == 0:
        out = rank0_waits_here()  # rank 1 submits only once both dumped
    else:
        wait_for(lambda: dumps("stall"))
        out = hvd.allreduce(tf.ones([4]), op=hvd.Sum, name="flight.held_back")
    assert out.numpy().tolist() == [hvd.size()] * 4
    (path,) = wait_for(lambda: dumps("stall"))
    m = meta(path)
    assert "flight.held_back" in m["dump_detail"], m["dump_detail"]
    pending = json.loads(m["pending_ops"])
    if R == 0:
        assert [p["name"] for p in pending] == ["flight.held_back"], pending
        assert "rank0_waits_here" in m["python_stacks"], m["python_stacks"]
    else:
        assert pending == [], pending
    assert "flight.held_back" in names(path, "ENQUEUE") or R == 1


finish()
