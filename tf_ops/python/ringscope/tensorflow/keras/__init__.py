"""Horovod's Keras module on ringscope: a script written for
``import horovod.tensorflow.keras as hvd`` runs with
``import ringscope.tensorflow.keras as hvd``.

    hvd.init()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(0.001 * hvd.size())))
    model.fit(x, y, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                               hvd.callbacks.MetricAverageCallback()])

allreduce, allgather, broadcast and reducescatter here take values (numbers, lists,
numpy arrays, tensors) and return tensors (eager ones convert with
.numpy()), as Horovod's Keras functions do under TensorFlow 2.
"""

import tensorflow as tf

from ringscope.tensorflow import (  # noqa: F401
    Average,
    Compression,
    ProcessSet,
    add_process_set,
    global_process_set,
    remove_process_set,
    Max,
    Min,
    Sum,
    allgather_object,
    barrier,
    broadcast_object,
    ccl_built,
    cross_rank,
    cross_size,
    cuda_built,
    ddl_built,
    is_homogeneous,
    gloo_built,
    gloo_enabled,
    init,
    is_initialized,
    local_rank,
    local_size,
    mark_step,
    mpi_built,
    mpi_enabled,
    mpi_threads_supported,
    nccl_built,
    rank,
    rocm_built,
    shutdown,
    size,
    start_timeline,
    start_trace,
    stop_timeline,
    stop_trace,
)
from ringscope.tensorflow.capabilities import not_provided
from ringscope.tensorflow.keras import callbacks  # noqa: F401
from ringscope.tensorflow.keras.callbacks import (  # noqa: F401
    BroadcastGlobalVariablesCallback,
    LearningRateScheduleCallback,
    LearningRateWarmupCallback,
    MetricAverageCallback,
    StepMarkCallback,
)
from ringscope.tensorflow.keras.optimizer import (  # noqa: F401
    DistributedOptimizer,
    PartialDistributedOptimizer,
    load_model,
)
from ringscope.tensorflow.sync_batch_norm import SyncBatchNormalization  # noqa: F401


def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0,
              op=None, compression=None, process_set=global_process_set):
    """Reduces ``value`` over all ranks, or those of ``process_set``
    (default: the average)."""
    from ringscope.tensorflow import allreduce as _allreduce

    return _allreduce(tf.convert_to_tensor(value), average=average, op=op,
                      compression=compression or Compression.none,
                      prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                      name=name, process_set=process_set)


def allgather(value, name=None, process_set=global_process_set):
    """Concatenates ``value`` of every rank along dim 0."""
    from ringscope.tensorflow import allgather as _allgather

    return _allgather(tf.convert_to_tensor(value), name=name, process_set=process_set)


def broadcast(value, root_rank, name=None, process_set=global_process_set):
    """Returns root_rank's ``value`` on every rank."""
    from ringscope.tensorflow import broadcast as _broadcast

    return _broadcast(tf.convert_to_tensor(value), root_rank, name=name,
                      process_set=process_set)


def reducescatter(value, name=None, op=None, process_set=global_process_set):
    """This rank's rows of the reduction (default: the average) of ``value``
    over all ranks."""
    from ringscope.tensorflow import reducescatter as _reducescatter

    return _reducescatter(tf.convert_to_tensor(value), op=op, name=name,
                          process_set=process_set)


def broadcast_global_variables(root_rank):
    """Horovod's TF1 call; Keras 3 has no global variables to find."""
    raise RuntimeError(
        "ringscope: broadcast_global_variables() needs TensorFlow 1 global variables; use "
        "hvd.callbacks.BroadcastGlobalVariablesCallback(root_rank) in model.fit, or "
        "ringscope.tensorflow.broadcast_variables(model.variables, root_rank)")


__getattr__ = not_provided("ringscope.tensorflow.keras")
