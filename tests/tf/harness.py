"""A minimal test harness for scripts run under mpirun: every rank runs every
test; failures are printed with the rank; the process exits non-zero if any
rank failed, and rank 0 prints 'N passed, M failed' (and 'K skipped' when a
test raised Skip: it cannot run at this size). (pytest is not used:
it does not know that all ranks must run the same tests in the same order.)"""

import os
import sys
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import ringscope.tensorflow as hvd  # noqa: E402

_results = []
_skipped = []


class Skip(Exception):
    """Raised by a test that cannot run here (say, one that needs two ranks
    at np=1): reported skipped, never passed."""


def test(fn):
    """Decorator: registers and immediately runs a test on this rank."""
    try:
        fn()
        _results.append((fn.__name__, None))
    except Skip as why:
        _skipped.append(fn.__name__)
        if hvd.rank() == 0:
            print(f"SKIPPED {fn.__name__}: {why}", flush=True)
    except Exception:  # noqa: BLE001 - report everything
        _results.append((fn.__name__, traceback.format_exc()))
        print(f"[rank {hvd.rank()}] FAILED {fn.__name__}\n{traceback.format_exc()}",
              file=sys.stderr, flush=True)
    return fn


def finish():
    failed_here = sum(1 for _, err in _results if err)
    total_failed = int(hvd.allreduce(tf.constant(failed_here, tf.int32), op=hvd.Sum,
                                     name="harness.failures").numpy())
    if hvd.rank() == 0:
        passed = len(_results) * hvd.size() - total_failed
        skipped = f", {len(_skipped)} skipped" if _skipped else ""
        print(f"{passed} passed, {total_failed} failed{skipped}", flush=True)
    hvd.shutdown()
    sys.exit(1 if total_failed else 0)


def assert_close(got, want, dtype, msg=""):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    tol = {tf.float16: 1e-2, tf.bfloat16: 2e-2, tf.float32: 1e-5, tf.float64: 1e-12}.get(dtype, 0)
    if got.shape != want.shape:
        raise AssertionError(f"{msg}: shape {got.shape} != {want.shape}")
    bad = np.abs(got - want) > tol * np.maximum(1.0, np.abs(want)) + (0 if tol else 0)
    if bad.any():
        i = np.argwhere(bad)[0]
        raise AssertionError(f"{msg}: at {tuple(i)} got {got[tuple(i)]} want {want[tuple(i)]}")
