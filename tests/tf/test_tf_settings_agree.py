"""The Python layer's settings must agree across ranks (np=2), by
RINGSCOPE_TEST_AGREE: ``differ``: ranks set RINGSCOPE_COLLECTIVE_GRADIENTS differently, and init()
fails on every rank naming each rank's value; ``invalid``: every rank sets a
value that does not exist, and init() fails on every rank naming the
variable and the accepted values. Each ends with the runtime shut down."""

import os
import sys

rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
mode = os.environ["RINGSCOPE_TEST_AGREE"]
os.environ["RINGSCOPE_COLLECTIVE_GRADIENTS"] = (
    ("horovod" if rank == 0 else "sum") if mode == "differ" else "average")

import ringscope.tensorflow as hvd  # noqa: E402

try:
    hvd.init()
    print(f"[rank {rank}] FAILED: init accepted {mode} settings", flush=True)
    sys.exit(1)
except (hvd.RingscopeError, ValueError) as e:
    message = str(e)
want = (["RINGSCOPE_COLLECTIVE_GRADIENTS differs across ranks", "rank 0 'horovod'",
         "rank 1 'sum'"] if mode == "differ" else
        ["RINGSCOPE_COLLECTIVE_GRADIENTS='average' is invalid", "'horovod'", "'sum'"])
missing = [w for w in want if w not in message]
if missing or hvd.is_initialized():
    print(f"[rank {rank}] FAILED: {missing} not in: {message}; initialized: "
          f"{hvd.is_initialized()}", flush=True)
    sys.exit(1)
print(f"[rank {rank}] passed: {message}", flush=True)
