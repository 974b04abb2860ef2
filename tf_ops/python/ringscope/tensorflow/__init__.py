"""Horovod-compatible TensorFlow API on the ringscope runtime.

    import ringscope.tensorflow as hvd
    hvd.init()
    tape = hvd.DistributedGradientTape(tape)
    opt = hvd.DistributedOptimizer(keras.optimizers.Adam(0.001 * hvd.size()))

Collectives are TensorFlow ops (asynchronous CPU kernels): they work eagerly
and inside tf.function. Tensors are matched across ranks by name; names come
from the variables (gradients) or the ``name`` argument, else one name per
kind (eager) or the graph node name (tf.function), so every rank must issue
the same collectives in the same program order when names are not given.
"""

import atexit
import ctypes
import faulthandler
import os
import signal
import sys
import tempfile

from ringscope.tensorflow._library import (  # noqa: F401
    STACK_WRITER as _STACK_WRITER,
    RingscopeError,
    c as _c,
    call as _call,
    ops as _ops,
)
from ringscope.tensorflow.collectives import (  # noqa: F401
    Average,
    Max,
    Min,
    Product,
    Sum,
    allgather,
    allreduce,
    alltoall,
    broadcast,
    broadcast_,
    broadcast_global_variables,
    broadcast_variables,
    grouped_allgather,
    grouped_allreduce,
    grouped_reducescatter,
    join,
    reducescatter,
)
from ringscope.tensorflow import process_sets as _process_sets
from ringscope.tensorflow.compression import Compression
from ringscope.tensorflow.process_sets import (  # noqa: F401
    ProcessSet,
    add_process_set,
    global_process_set,
    remove_process_set,
)
from ringscope.tensorflow.gradient_tape import (  # noqa: F401
    DistributedGradientTape,
    PartialDistributedGradientTape,
)

__all__ = [
    "init", "shutdown", "is_initialized", "size", "rank", "local_rank", "local_size",
    "cross_rank", "cross_size", "size_op", "rank_op", "local_size_op", "local_rank_op",
    "allreduce", "grouped_allreduce", "allgather", "broadcast", "broadcast_",
    "broadcast_variables", "DistributedGradientTape", "DistributedOptimizer",
    "BroadcastGlobalVariablesCallback", "MetricAverageCallback", "LearningRateWarmupCallback",
    "StepMarkCallback", "Compression", "Sum", "Average", "Min", "Max", "Product", "start_trace",
    "stop_trace", "mark_step", "propose_settings", "current_settings", "RingscopeError",
    "broadcast_object", "allgather_object", "barrier", "start_timeline", "stop_timeline",
    "LearningRateScheduleCallback", "mpi_built", "mpi_enabled", "mpi_threads_supported",
    "gloo_built", "gloo_enabled", "nccl_built", "cuda_built", "rocm_built", "ddl_built",
    "ccl_built", "reducescatter", "grouped_reducescatter", "grouped_allgather", "alltoall",
    "join", "SyncBatchNormalization", "PartialDistributedGradientTape",
    "broadcast_global_variables", "is_homogeneous", "dump_flight_recorder", "ProcessSet",
    "add_process_set", "remove_process_set", "global_process_set", "process_set_included_op",
]

_shutdown_at_exit = []  # atexit registered (once)


def init(comm=None, process_sets=None):
    """Starts the runtime over MPI_COMM_WORLD with settings from the environment.
    A script that never calls shutdown() is shut down at interpreter exit,
    before MPI is finalised (as Horovod does). Horovod's ``comm`` is
    accepted when it asks for the whole world; ``process_sets`` (a list of
    ProcessSet, or "dynamic") are registered in order, on every rank."""
    if _is_whole_world(comm):
        comm = None  # Horovod's hvd.init(comm=MPI.COMM_WORLD): the default
    if comm is not None:
        raise ValueError("ringscope: init(comm=...) is not supported: ringscope runs over every "
                         "rank of MPI_COMM_WORLD (launch the ranks you want with mpirun; a "
                         "subset runs its collectives in a ProcessSet)")
    starting = not is_initialized()
    _call(_c.ringscope_c_init)
    if starting:
        _agree_on_settings()
        _stacks_in_dumps()
        _process_sets._on_init(process_sets)
    if not _shutdown_at_exit:
        _shutdown_at_exit.append(True)
        atexit.register(shutdown)


def _agree_on_settings():
    """The Python layer's own settings must be the same on every rank: an
    error on every rank alike when they differ, then one for a bad value."""
    from ringscope.tensorflow import gradients

    raw = os.environ.get(gradients.CONVENTION_VARIABLE, "")
    try:
        _call(_c.ringscope_c_agree, gradients.CONVENTION_VARIABLE.encode(), raw.encode())
        gradients.convention()
    except Exception:
        shutdown()  # every rank fails alike: none is left running
        raise


def _is_whole_world(comm):
    """An mpi4py communicator with MPI_COMM_WORLD's ranks in its order."""
    if comm is None or not hasattr(comm, "Compare"):
        return False
    from mpi4py import MPI  # the caller has mpi4py: it passed one of its communicators

    return comm.Compare(MPI.COMM_WORLD) in (MPI.IDENT, MPI.CONGRUENT)


# Every Python thread's stack goes into each flight recorder dump, written
# to this file: in a live process by _write_stacks, which the dump's helper
# thread calls with the GIL; for a fatal signal's dump (the crashing thread
# may hold the GIL) by the standard library's faulthandler when the dump
# thread raises this signal (tf_ops/src/c_api.cc says why not always).
STACK_SIGNAL = signal.SIGRTMIN + 4
_stack_file = []


def _write_stacks(fd):
    """Every other Python thread's stack into `fd`, most recent call first,
    in faulthandler's format (what `ringscope trace blame` reads)."""
    try:
        import threading

        names = {t.ident: t.name for t in threading.enumerate()}
        me = threading.get_ident()
        lines = []
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            lines.append(f"Thread 0x{ident:016x} [{names.get(ident, '?')}] "
                         "(most recent call first):")
            while frame is not None:
                code = frame.f_code
                lines.append(f'  File "{code.co_filename}", line {frame.f_lineno} '
                             f"in {code.co_name}")
                frame = frame.f_back
            lines.append("")
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, "\n".join(lines).encode("utf-8", "replace"))
        return 0
    except Exception:  # noqa: BLE001 - a dump without stacks, never a failed dump
        return 1


_stack_writer = [_STACK_WRITER(_write_stacks)]  # kept alive: C holds the pointer


def _stacks_in_dumps():
    if _stack_file:
        return
    try:
        f = tempfile.TemporaryFile(prefix="ringscope-stacks-")
        faulthandler.register(STACK_SIGNAL, file=f, all_threads=True, chain=False)
    except (OSError, RuntimeError, ValueError):  # no temp dir, a signal taken: no stacks
        return
    _stack_file.append(f)
    _c.ringscope_c_set_stack_source(int(STACK_SIGNAL), f.fileno(), _stack_writer[0])


def dump_flight_recorder(path=None):
    """Writes this rank's flight recorder (its most recent events, the ops
    it waits for, the settings and every Python thread's stack) to a
    per-rank trace file and returns its path: <path>.rank<r>.sqlite, or by
    default the next file in RINGSCOPE_FLIGHT_RECORDER_DIR. Needs no other
    rank; training goes on."""
    written = ctypes.create_string_buffer(4096)
    _call(_c.ringscope_c_dump_flight_recorder, None if path is None else str(path).encode(),
          written, len(written))
    return written.value.decode()


def shutdown():
    _c.ringscope_c_shutdown()
    if _stack_file:
        _c.ringscope_c_set_stack_source(0, -1, _stack_writer[0])
        faulthandler.unregister(STACK_SIGNAL)
        _stack_file.pop().close()


def is_initialized():
    return bool(_c.ringscope_c_is_initialized())


def _topology(fn):
    value = fn()
    if value < 0:
        raise RingscopeError("ringscope is not initialised: call ringscope.tensorflow.init() first")
    return value


def size():
    return _topology(_c.ringscope_c_size)


def rank():
    return _topology(_c.ringscope_c_rank)


def local_rank():
    return _topology(_c.ringscope_c_local_rank)


def local_size():
    return _topology(_c.ringscope_c_local_size)


def cross_rank():
    return _topology(_c.ringscope_c_cross_rank)


def cross_size():
    return _topology(_c.ringscope_c_cross_size)


def size_op(process_set_id=0, name=None):
    """size() as an int32 scalar tensor (graph-friendly, like Horovod's);
    the size of process set ``process_set_id``."""
    return _ops.ringscope_size(process_set_id=int(process_set_id), name=name)


def process_set_included_op(process_set_id=0, name=None):
    """1 (int32) where this rank is in process set ``process_set_id``, else 0."""
    return _ops.ringscope_process_set_included(process_set_id=int(process_set_id), name=name)


def rank_op():
    return _ops.ringscope_rank()


def local_size_op():
    return _ops.ringscope_local_size()


def local_rank_op():
    return _ops.ringscope_local_rank()


def start_trace(path):
    """Traces into <path without .sqlite>.rank<r>.sqlite on every rank (call on every rank)."""
    _call(_c.ringscope_c_start_trace, str(path).encode())


def stop_trace():
    _call(_c.ringscope_c_stop_trace)


def start_timeline(file_path, mark_cycles=False):
    """Horovod's name for start_trace: ringscope writes its SQLite trace,
    <file_path without .sqlite>.rank<r>.sqlite on every rank (cycles are
    always recorded, so mark_cycles changes nothing). `ringscope trace
    export --chrome` turns the traces into a Chrome-tracing JSON like
    Horovod's timeline. A .json ending becomes .sqlite, as with
    HOROVOD_TIMELINE (t.json: t.rank<r>.sqlite)."""
    del mark_cycles
    path = str(file_path)
    if path.endswith(".json"):
        path = path[: -len(".json")] + ".sqlite"
    start_trace(path)


def stop_timeline():
    stop_trace()


def mark_step(step):
    """Marks the end of training step ``step`` in the trace."""
    _c.ringscope_c_mark_step(int(step))


def propose_settings(fusion_threshold_bytes, cycle_time_ms, cache_enabled=True):
    """On rank 0: new settings, applied by every rank at the same cycle."""
    _call(_c.ringscope_c_propose_settings, int(fusion_threshold_bytes), float(cycle_time_ms),
          1 if cache_enabled else 0)


def current_settings():
    t, cyc, cache = ctypes.c_longlong(), ctypes.c_double(), ctypes.c_int()
    _c.ringscope_c_current_settings(ctypes.byref(t), ctypes.byref(cyc), ctypes.byref(cache))
    return {"fusion_threshold_bytes": t.value, "cycle_time_ms": cyc.value,
            "cache_enabled": bool(cache.value)}


def is_homogeneous():
    """Whether every host runs the same number of ranks (agreed at init)."""
    _topology(_c.ringscope_c_size)  # raises before init
    return bool(_c.ringscope_c_is_homogeneous())


# What this build can do, under Horovod's names, and the Horovod names it
# lacks (a module __getattr__ that says so).
from ringscope.tensorflow.capabilities import (  # noqa: E402,F401
    __getattr__,
    ccl_built,
    cuda_built,
    ddl_built,
    gloo_built,
    gloo_enabled,
    mpi_built,
    mpi_enabled,
    mpi_threads_supported,
    nccl_built,
    rocm_built,
)

# Imported last: these modules use the functions above at import time.
from ringscope.tensorflow import gradients  # noqa: E402,F401  (registers the ops' gradients)
from ringscope.tensorflow.functions import allgather_object, barrier, broadcast_object  # noqa: E402,F401
from ringscope.tensorflow.sync_batch_norm import SyncBatchNormalization  # noqa: E402,F401
from ringscope.tensorflow import keras  # noqa: E402,F401
from ringscope.tensorflow.keras import DistributedOptimizer as _KerasDistributedOptimizer  # noqa: E402
from ringscope.tensorflow.legacy_optimizer import (  # noqa: E402
    LegacyDistributedOptimizer as _LegacyDistributedOptimizer,
    is_legacy_optimizer as _is_legacy_optimizer,
)


def DistributedOptimizer(optimizer, name=None, **kwargs):
    """Horovod's: ``optimizer`` with its gradients allreduced (averaged by
    default) before they are applied. A Keras 3 optimizer (keras.optimizers.X)
    is wrapped as ringscope.tensorflow.keras.DistributedOptimizer wraps it; a
    TensorFlow 1 optimizer (tf.compat.v1.train.X, in a graph) allreduces in
    compute_gradients(), as Horovod's. Arguments after ``name`` by keyword."""
    if _is_legacy_optimizer(optimizer):
        for accepted in ("device_dense", "device_sparse", "scale_local_gradients"):
            kwargs.pop(accepted, None)  # CPU ops; no local variables in TF1 graphs here
        return _LegacyDistributedOptimizer(optimizer, name=name, **kwargs)
    return _KerasDistributedOptimizer(optimizer, name=name, **kwargs)


from ringscope.tensorflow.keras.callbacks import (  # noqa: E402,F401
    BroadcastGlobalVariablesCallback,
    LearningRateScheduleCallback,
    LearningRateWarmupCallback,
    MetricAverageCallback,
    StepMarkCallback,
)

