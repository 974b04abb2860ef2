"""Collectives on Python objects and a barrier, as in horovod.tensorflow:
broadcast_object, allgather_object and barrier.

Objects travel pickled (cloudpickle when it is installed, as Horovod does,
so lambdas and local classes work; else the standard pickle) through the
ordinary uint8 broadcast and allgather ops, so they show up in the trace
under their names like any tensor. They run eagerly only: the sizes must be
known in Python before the data moves.
"""

import io
import pickle

import numpy as np
import tensorflow as tf

try:
    import cloudpickle as _pickler
except ImportError:  # pragma: no cover - depends on the environment
    _pickler = pickle


def _require_eager(what):
    if not tf.executing_eagerly():
        raise RuntimeError(f"ringscope: {what} runs eagerly only; call it outside tf.function")


def _dumps(obj):
    buf = io.BytesIO()
    _pickler.dump(obj, buf)
    return np.frombuffer(buf.getvalue(), dtype=np.uint8)


def _loads(data):
    return _pickler.loads(np.asarray(data, dtype=np.uint8).tobytes())


def broadcast_object(obj, root_rank=0, session=None, name=None):
    """Returns root_rank's ``obj`` on every rank (pickled, then broadcast).

    ``session`` is accepted for Horovod compatibility and must be None."""
    from ringscope.tensorflow import _auto_name, broadcast, rank

    _require_eager("broadcast_object")
    if session is not None:
        raise ValueError("ringscope: broadcast_object takes no session (TensorFlow 1 sessions "
                         "are not supported)")
    name = _auto_name("broadcast_object", name)  # never from obj: it differs between ranks
    root = rank() == int(root_rank)
    payload = _dumps(obj) if root else np.zeros(0, np.uint8)
    length = broadcast(tf.constant([payload.size], tf.int64), root_rank, name=f"{name}.sz")
    if not root:
        payload = np.zeros(int(length.numpy()[0]), np.uint8)
    data = broadcast(tf.constant(payload), root_rank, name=f"{name}.t")
    return obj if root else _loads(data.numpy())


def allgather_object(obj, session=None, name=None):
    """Returns the list of every rank's ``obj``, indexed by rank.
    ``session`` is Horovod's TF1 argument: only None is taken."""
    from ringscope.tensorflow import _auto_name, allgather

    _require_eager("allgather_object")
    if session is not None:
        raise ValueError("ringscope: allgather_object takes no session (TensorFlow 1 sessions "
                         "are not supported)")
    name = _auto_name("allgather_object", name)
    payload = _dumps(obj)
    lengths = allgather(tf.constant([payload.size], tf.int64), name=f"{name}.sz").numpy()
    data = allgather(tf.constant(payload), name=f"{name}.t").numpy()
    ends = np.cumsum(lengths)
    return [_loads(data[end - n:end]) for n, end in zip(lengths, ends)]


def barrier():
    """Returns once every rank has called barrier() (the same number of times)."""
    from ringscope.tensorflow import Sum, _auto_name, allreduce

    _require_eager("barrier")
    allreduce(tf.zeros([1], tf.int32), op=Sum, name=_auto_name("barrier", None)).numpy()
