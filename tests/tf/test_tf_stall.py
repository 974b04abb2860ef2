"""A stall shutdown surfaces in Python as an exception carrying the message
(run under mpirun at np=2 with RINGSCOPE_STALL_CHECK_SECONDS=0.3 and
RINGSCOPE_STALL_SHUTDOWN_SECONDS=1): rank 0 allreduces a tensor rank 1 never
submits; rank 0's op fails with the tensor name and the missing rank, and
rank 1's next op fails too instead of hanging. Each rank exits non-zero on a
wrong outcome (the runtime is down afterwards, so no harness allreduce)."""

import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import ringscope.tensorflow as hvd  # noqa: E402

hvd.init()
rank = hvd.rank()
ok = False
try:
    if rank == 0:
        hvd.allreduce(tf.ones([4]), name="lonely")
    else:
        time.sleep(2.5)  # never submits "lonely"
        hvd.allreduce(tf.ones([4]), name="after")
except tf.errors.AbortedError as e:
    msg = str(e)
    ok = "Stalled" in msg and (rank != 0 or ("'lonely'" in msg and "missing on rank 1" in msg))
    if not ok:
        print(f"[rank {rank}] unexpected message: {msg}", file=sys.stderr)
except Exception as e:  # noqa: BLE001
    print(f"[rank {rank}] wrong exception {type(e).__name__}: {e}", file=sys.stderr)
else:
    print(f"[rank {rank}] no exception: the stall was not reported", file=sys.stderr)
print(f"[rank {rank}] stall surfaced as a Python exception: {'yes' if ok else 'NO'}", flush=True)
hvd.shutdown()
sys.exit(0 if ok else 1)
