"""One rank-misbehaviour scenario for `ringscope trace blame` to diagnose,
run under mpirun by blame_scenarios.py. Every rank trains a few steps of
two gradients, 'grad/a' then 'grad/b', through hvd.allreduce; then:

  skip:    rank 1 skips 'grad/b' at step 5 and goes on to step 6 (a
           rank-dependent code path); the stall warning dumps every rank,
           the stall shutdown ends the job;
  sleep:   rank 2 sleeps in Python before 'grad/b' of step 5 (stuck in its
           input pipeline); the stall warning dumps, and it wakes up later;
  sigusr1: a healthy job gets SIGUSR1 on every rank at step 5 and trains on;
  stop:    rank 1 SIGSTOPs itself at step 5: the others time out, dump,
           and end the job (RINGSCOPE_OP_TIMEOUT_SECONDS is short);
  kill:    rank 1 SIGKILLs itself at step 5: mpirun ends the others with
           SIGTERM, and they dump before they go;
  crash:   rank 1 crashes at step 5 (SIGSEGV: it reads address 0): its
           fatal-signal handler dumps before the crash goes on, and mpirun
           ends the others with SIGTERM (they dump too);
  slow:    every rank works 20 ms a step and rank 1 40 ms more (a slow
           input pipeline) for 80 steps: rank 0 warns, live, that rank 1
           holds the others back; every rank then dumps (a user's dump);
  steady:  the same 80 steps, every rank 20 ms: no warning.

argv: SCENARIO. Dumps go to RINGSCOPE_FLIGHT_RECORDER_DIR."""

import os
import signal
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

import ringscope.tensorflow as hvd  # noqa: E402

SCENARIO = sys.argv[1]
hvd.init()
R = hvd.rank()


def input_pipeline_stuck():
    time.sleep(6)


def rank_dependent_branch(step):
    if SCENARIO == "skip" and R == 1 and step == 5:  # the bug blame must find
        return False
    return True


def crash():
    import ctypes
    ctypes.string_at(0)  # SIGSEGV


def slow_input_pipeline():
    time.sleep(0.04)


def train_step(step):
    if SCENARIO in ("slow", "steady"):
        time.sleep(0.02)
        if SCENARIO == "slow" and R == 1:
            slow_input_pipeline()
    if SCENARIO == "crash" and R == 1 and step == 5:
        crash()
    if SCENARIO in ("stop", "kill") and R == 1 and step == 5:
        os.kill(os.getpid(), signal.SIGSTOP if SCENARIO == "stop" else signal.SIGKILL)
    hvd.allreduce(tf.ones([16]), name="grad/a")
    if SCENARIO == "sleep" and R == 2 and step == 5:
        input_pipeline_stuck()
    if rank_dependent_branch(step):
        hvd.allreduce(tf.ones([16]), name="grad/b")


try:
    steps = {"skip": 8, "slow": 80, "steady": 80}.get(SCENARIO, 12)
    for step in range(steps):
        if SCENARIO == "sigusr1" and step == 5:
            os.kill(os.getpid(), signal.SIGUSR1)
            time.sleep(1.0)
        train_step(step)
except Exception as e:  # noqa: BLE001 - the stall shutdown's error is expected in 'skip'
    print(f"[rank {R}] {type(e).__name__}: {e}", flush=True)
    sys.exit(0 if SCENARIO == "skip" else 1)  # stop: shutdown at exit ends the job
if SCENARIO in ("slow", "steady"):
    hvd.dump_flight_recorder()
hvd.shutdown()
