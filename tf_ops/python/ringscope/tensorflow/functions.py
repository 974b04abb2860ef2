"""Collectives on Python objects and a barrier, as in horovod.tensorflow:
broadcast_object, allgather_object and barrier.

Objects travel pickled (cloudpickle when it is installed, as Horovod does,
so lambdas and local classes work; else the standard pickle) through the
ordinary uint8 broadcast and allgather ops, so they show up in the trace
under their names like any tensor. They run eagerly, or in a TensorFlow 1
graph through a session (``session=``, else the default one), as Horovod's
do: the sizes must be known in Python before the data moves, so not inside
a tf.function.
"""

import io
import pickle

import numpy as np
import tensorflow as tf

try:
    import cloudpickle as _pickler
except ImportError:  # pragma: no cover - depends on the environment
    _pickler = pickle


def _runner(what, session=None):
    """A function that evaluates a tensor now: ``.numpy()`` eagerly, else
    ``session`` (or the default session of a TensorFlow 1 graph). Inside a
    tf.function nothing can be evaluated: a RuntimeError says so."""
    if tf.executing_eagerly():
        if session is not None:
            raise ValueError(f"ringscope: {what} got a session while executing eagerly")
        return lambda t: t.numpy()
    session = session or tf.compat.v1.get_default_session()
    if session is None:
        raise RuntimeError(f"ringscope: {what} runs eagerly, or in a TensorFlow 1 graph with a "
                           "session (session=, or a default session); not inside tf.function: "
                           "call it outside")
    return session.run


def _dumps(obj):
    buf = io.BytesIO()
    _pickler.dump(obj, buf)
    return np.frombuffer(buf.getvalue(), dtype=np.uint8)


def _loads(data):
    return _pickler.loads(np.asarray(data, dtype=np.uint8).tobytes())


def _dumps_or_error(obj):
    """(bytes, None), or (empty, the error) when obj cannot be pickled: the
    length still goes out (as -1), so the other ranks fail with this one
    instead of waiting for data that never comes."""
    try:
        return _dumps(obj), None
    except Exception as e:  # pickling raises many types (TypeError, PicklingError, ...)
        return np.zeros(0, np.uint8), e


def _unpicklable(what, ranks, error):
    message = (f"ringscope: {what}: the object of rank(s) {ranks} could not be pickled"
               + (f": {error!r}" if error is not None else " (that rank's error says why)"))
    return ValueError(message)


def broadcast_object(obj, root_rank=0, session=None, name=None, process_set=None):
    """Returns root_rank's ``obj`` on every rank (pickled, then broadcast).

    ``session``: the TensorFlow 1 session that runs the broadcasts in graph
    mode (default: the default session); None eagerly. ``process_set``:
    among its ranks only (root_rank a rank in the world)."""
    from ringscope.tensorflow import rank
    from ringscope.tensorflow.collectives import _auto_name, broadcast

    run = _runner("broadcast_object", session)
    name = _auto_name("broadcast_object", name) or "broadcast_object"  # never from obj: it
    root = rank() == int(root_rank)                                    # differs between ranks
    payload, error = _dumps_or_error(obj) if root else (np.zeros(0, np.uint8), None)
    size = -1 if error is not None else payload.size
    length = int(run(broadcast(tf.constant([size], tf.int64), root_rank, name=f"{name}.sz",
                               process_set=process_set))[0])
    if length < 0:
        raise _unpicklable("broadcast_object", [int(root_rank)], error)
    if not root:
        payload = np.zeros(length, np.uint8)
    data = run(broadcast(tf.constant(payload), root_rank, name=f"{name}.t",
                         process_set=process_set))
    return obj if root else _loads(data)


def allgather_object(obj, session=None, name=None, process_set=None):
    """Returns the list of every rank's ``obj``, indexed by rank (of
    ``process_set``: its ranks in order). ``session``: as in
    broadcast_object."""
    from ringscope.tensorflow.collectives import _auto_name, allgather

    run = _runner("allgather_object", session)
    name = _auto_name("allgather_object", name) or "allgather_object"
    payload, error = _dumps_or_error(obj)
    size = -1 if error is not None else payload.size
    lengths = run(allgather(tf.constant([size], tf.int64), name=f"{name}.sz",
                            process_set=process_set))
    if (lengths < 0).any():
        raise _unpicklable("allgather_object", [int(r) for r in np.flatnonzero(lengths < 0)],
                           error)
    data = run(allgather(tf.constant(payload), name=f"{name}.t", process_set=process_set))
    ends = np.cumsum(lengths)
    return [_loads(data[end - n:end]) for n, end in zip(lengths, ends)]


def barrier(name=None, session=None, process_set=None):
    """Returns once every rank has called barrier() (the same number of
    times, from the same thread, or with the same ``name``); in a
    TensorFlow 1 graph through ``session`` (default: the default session)."""
    from ringscope.tensorflow.collectives import Sum, _auto_name, allreduce

    run = _runner("barrier", session)
    name = _auto_name("barrier", name) or "barrier"
    run(allreduce(tf.zeros([1], tf.int32), op=Sum, name=name, process_set=process_set))
