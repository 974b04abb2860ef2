"""The collectives of ringscope.tensorflow (TensorFlow ops: eager and
inside tf.function): allreduce (dense and IndexedSlices), allgather,
broadcast, reducescatter, alltoall, their grouped forms, join and
broadcast_variables; how unnamed ops are named so that every rank's k-th
call meets the others'; and how a group is submitted together eagerly (one
cached tf.function) so the runtime fuses it."""

import ctypes
import re
import threading

import tensorflow as tf
from tensorflow.python.eager import record as _record

from ringscope.tensorflow._library import ops as _ops
from ringscope.tensorflow.compression import Compression
from ringscope.tensorflow.process_sets import global_process_set, process_set_id_of

# Reduce ops (same values as the C++ ReduceOp).
Sum, Average, Min, Max, Product = 0, 1, 2, 3, 4

_together_lock = threading.Lock()
_together_fns = {}  # eager grouped calls: one tf.function per key (names and arguments)
_TOGETHER_CACHE_SIZE = 256  # keys kept per cache, the oldest dropped first


def _auto_name(kind, name):
    """Explicit names win. In a tf.function the graph node name is used ('').
    Eagerly an unnamed op reuses one name per kind, as Horovod's eager ops
    do: each call completes before it returns, so the k-th unnamed call of
    every rank still meets the k-th of the others, and the name stays the
    same from step to step (a fresh name per call made TensorFlow build and
    keep a new kernel each time, 35 KB and 0.6 ms a call, and missed the
    response cache). Unnamed calls from other threads carry the thread's
    name; several unnamed calls at once from one thread's pool need names."""
    if name:
        return str(name)
    if not tf.executing_eagerly():
        return ""
    # Outside the main thread, the thread's name too (the same on every rank
    # when the threads are made in the same order, as thread ids are not):
    # a checkpoint thread's broadcast_object and the main thread's must not
    # meet each other's ops on another rank.
    return f"{kind}.eager{_thread_suffix()}"


def _thread_suffix():
    """"" on the main thread, else "@" and the thread's name where the user
    gave it one. Python's default names count threads per process
    ("Thread-7 (save)", "ThreadPoolExecutor-0_1", "Dummy-3") and differ
    across ranks as soon as one rank started one more thread: of those
    only the target's name is kept ("@save"), else "@thread"."""
    thread = threading.current_thread()
    if thread is threading.main_thread():
        return ""
    default = re.fullmatch(r"(?:Thread|Dummy)-\d+(?: \((.*)\))?|ThreadPoolExecutor-\d+_\d+",
                           thread.name)
    if default:
        return f"@{default.group(1) or 'thread'}"
    return f"@{thread.name}"


def _submit_together(cache, key, build, tensors):
    """``build(tensors)`` -> the collectives' outputs, with names fixed by
    ``key``. Inside a tf.function the ops are submitted as soon as their
    inputs are ready and the runtime fuses them. Eagerly each op would wait
    for the previous one to complete (a cycle each, nothing fused), so they
    run in one tf.function, kept in ``cache`` under ``key`` (traced again
    only for new shapes or dtypes)."""
    if not tf.executing_eagerly() or len(tensors) < 2:
        return build(tensors)
    with _together_lock:
        fn = cache.get(key)
        if fn is None:
            if len(cache) >= _TOGETHER_CACHE_SIZE:  # names that change every call
                del cache[next(iter(cache))]
            fn = cache[key] = tf.function(build, autograph=False, reduce_retracing=True)
    if _record.could_possibly_record() and not any(isinstance(t, tf.IndexedSlices)
                                                   for t in tensors):
        return _with_cast_gradients(fn, tensors)
    return fn(list(tensors))


def _with_cast_gradients(fn, tensors):
    """``fn(tensors)`` under a recording GradientTape, whose gradient first
    casts each output's upstream gradient to that output's dtype: a traced
    function's backward takes exactly its outputs' dtypes, where an op's
    gradient function takes any, and TensorFlow (or the caller: Horovod's
    tests pass float32 upstream gradients for float64 outputs) may give
    another."""
    inputs = [tf.convert_to_tensor(t) for t in tensors]

    @tf.custom_gradient
    def call(*ts):
        with tf.GradientTape(persistent=True) as tape:  # the outer tape may be persistent
            tape.watch([t for t in ts if t.dtype.is_floating or t.dtype.is_complex])
            outs = fn(list(ts))

        def grad(*upstream):
            upstream = [None if u is None else tf.cast(u, o.dtype)
                        for u, o in zip(upstream, outs)]
            return tape.gradient(outs, list(ts), output_gradients=upstream)

        return outs, grad

    return call(*inputs)


def _in_set(process_set_id):
    """The op attr of a process set other than the world's (none for 0, so
    the world's eager ops keep their attrs, and their kernels, as before)."""
    return {"process_set_id": process_set_id} if process_set_id else {}


def _reduce_op(op, average):
    if op is not None and average is not None:
        raise ValueError("give either op or the deprecated average, not both")
    if op is None:
        op = Sum if average is False else Average
    if op not in (Sum, Average, Min, Max, Product):
        raise ValueError(f"unknown reduce op {op!r}: use Sum, Average, Min, Max or Product")
    return op


def allreduce(tensor, average=None, device_dense="", device_sparse="",
              compression=Compression.none, op=None, prescale_factor=1.0, postscale_factor=1.0,
              name=None, ignore_name_scope=False, process_set=global_process_set):
    """Reduces ``tensor`` over all ranks (default: Average), or over the
    ranks of ``process_set``. IndexedSlices are
    allgathered (values and indices), as Horovod does: Sum and Average only,
    without scale factors, and an Average divides the values by size() as
    TensorFlow's ``/`` does (integer values become float64, as Horovod's)."""
    op = _reduce_op(op, average)
    psid = process_set_id_of(process_set)
    if isinstance(tensor, tf.IndexedSlices):
        _check_sparse(op, prescale_factor, postscale_factor)
        return _sparse_allreduce(tensor, op, _auto_name("allreduce_sparse", name), psid=psid)
    tensor = tf.convert_to_tensor(tensor)
    compressed, ctx = compression.compress(tensor)
    out = _ops.ringscope_allreduce(
        compressed, reduce_op=op, prescale_factor=float(prescale_factor),
        postscale_factor=float(postscale_factor), tensor_name=_auto_name("allreduce", name),
        **_in_set(psid))
    return compression.decompress(out, ctx)


def _check_sparse(op, prescale_factor, postscale_factor):
    """What Horovod refuses for IndexedSlices, with its exception class."""
    if op not in (Sum, Average):
        raise NotImplementedError(
            "ringscope: an allreduce of tf.IndexedSlices supports Sum and Average only (it "
            "allgathers values and indices); pass sparse_as_dense=True, or convert the "
            "slices with tf.convert_to_tensor, for other ops")
    if float(prescale_factor) != 1.0 or float(postscale_factor) != 1.0:
        raise NotImplementedError(
            "ringscope: prescale_factor and postscale_factor are not supported with "
            "tf.IndexedSlices (as in Horovod): scale the values before or after")


def _sparse_allreduce(slices, op, base, prescale=1.0, postscale=1.0, psid=0):
    """IndexedSlices summed or averaged over ranks by allgathering values and
    indices. ``prescale`` and ``postscale`` scale the values (the gradient
    reduction's factors; the public allreduce refuses them, as Horovod)."""
    values = slices.values
    if prescale != 1.0:
        values = values * tf.cast(prescale, values.dtype)
    values = _allgather(values, (base + "/values") if base else None, psid)
    indices = _allgather(slices.indices, (base + "/indices") if base else None, psid)
    if op == Average:
        # Divided by the size op's output, not a constant: in a graph
        # TensorFlow's optimizer turns a division by a constant into a
        # multiplication by its reciprocal, one rounding more (and eagerly
        # a group runs as a tf.function).
        values = values / tf.cast(_ops.ringscope_size(**_in_set(psid)), values.dtype)
    if postscale != 1.0:
        values = values * tf.cast(postscale, values.dtype)
    return tf.IndexedSlices(values, indices, dense_shape=slices.dense_shape)


def grouped_allreduce(tensors, average=None, device_dense="", device_sparse="",
                      compression=Compression.none, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, name=None, ignore_name_scope=False,
                      process_set=global_process_set):
    """Allreduces a list of tensors, handed to the runtime together (one
    grouped op per dtype: one hand-off and one completion, eagerly too), so
    the runtime fuses them. Horovod's arguments; device_dense and
    device_sparse are accepted (CPU ops)."""
    del device_dense, device_sparse
    tensors = list(tensors)
    op = _reduce_op(op, average)
    psid = process_set_id_of(process_set)
    if _has_sparse(tensors):  # before anything is submitted
        _check_sparse(op, prescale_factor, postscale_factor)
    base = _auto_name("grouped_allreduce", name)
    return reduce_group(tensors, _member_names(base, len(tensors)), op, compression,
                        float(prescale_factor), float(postscale_factor),
                        ("grouped_allreduce", base), psid)


def _has_sparse(tensors):
    """Whether any of ``tensors`` is an IndexedSlices (one C-speed pass)."""
    return tf.IndexedSlices in set(map(type, tensors))


_member_name_lists = {}


def _member_names(base, n):
    """``n`` names "<base>/<i>" (all "" when base is: a graph's node names),
    one list per (base, n) for the life of the process: a step's group is
    named alike every call."""
    names = _member_name_lists.get((base, n))
    if names is None:
        names = _member_name_lists[(base, n)] = tuple(
            f"{base}/{i}" if base else "" for i in range(n))
    return names


def reduce_group(tensors, names, op, compression, pre, post, key, psid=0):
    """Allreduces ``tensors`` (named ``names``; "" in a graph: the op's node
    name) with ``op`` and the scale factors: the dense ones with one grouped
    op per dtype (after compression), IndexedSlices by allgathers. Eagerly,
    where that is more than one op, they run in one cached tf.function (so
    the runtime sees them together); ``key`` names that function's cache
    entry. ``psid``: the process set's id (0: every rank). Returns the
    results in the order given."""
    if compression is Compression.none and tensors and tf.executing_eagerly() and not _has_sparse(
            tensors):
        try:  # one dtype (TensorFlow checks it): no per-tensor work in Python
            return list(_grouped_op(tensors, names, op, pre, post, psid))
        except (TypeError, tf.errors.InvalidArgumentError):
            # Several dtypes, refused before anything was submitted (so is
            # any other InvalidArgument of a grouped allreduce: the group
            # goes in whole or not at all): one op per dtype, below.
            pass
    dense = [i for i, t in enumerate(tensors) if not isinstance(t, tf.IndexedSlices)]
    by_dtype = {}
    for i in dense:
        by_dtype.setdefault(tf.as_dtype(tensors[i].dtype), []).append(i)
    if tf.executing_eagerly() and (len(by_dtype) > 1 or len(dense) < len(tensors)):
        full_key = key + (tuple(names), op, compression, pre, post, psid)
        return _submit_together(
            _together_fns, full_key,
            lambda ts: _reduce_group_ops(ts, names, op, compression, pre, post, psid), tensors)
    return _reduce_group_ops(tensors, names, op, compression, pre, post, psid)


def _reduce_group_ops(tensors, names, op, compression, pre, post, psid):
    out = [None] * len(tensors)
    groups = {}
    contexts = {}
    for i, t in enumerate(tensors):
        if isinstance(t, tf.IndexedSlices):
            out[i] = _sparse_allreduce(t, op, names[i], pre, post, psid)
            continue
        compressed, contexts[i] = compression.compress(tf.convert_to_tensor(t))
        groups.setdefault(compressed.dtype, []).append((i, compressed))
    for members in groups.values():
        index = [i for i, _ in members]
        reduced = _grouped_op([c for _, c in members], [names[i] for i in index], op, pre, post,
                              psid)
        for i, r in zip(index, reduced):
            out[i] = compression.decompress(r, contexts[i])
    return out


_group_keys = {}  # eager groups: member names -> the key they are registered under
_group_names = {}  # and back: key -> member names (a group's gradient names its members)


def _grouped_op(tensors, names, op, pre, post, psid=0):
    """One grouped allreduce op. Eagerly the member names are registered once
    under a key (an op's attrs are converted on every eager call: a list of
    200 names cost ~430 us a step); in a graph they are the op's attr."""
    if not all(names):  # a graph's unnamed group: "<node name>/<i>"
        return _ops.ringscope_grouped_allreduce(tensors, reduce_op=op, prescale_factor=pre,
                                                postscale_factor=post, **_in_set(psid))
    if not tf.executing_eagerly():
        return _ops.ringscope_grouped_allreduce(tensors, reduce_op=op, prescale_factor=pre,
                                                postscale_factor=post, tensor_names=names,
                                                **_in_set(psid))
    names = tuple(names)
    key = _group_keys.get(names)
    if key is None:
        key = _group_keys[names] = _register_group(names)
        _group_names[key] = names
    return _ops.ringscope_grouped_allreduce(tensors, reduce_op=op, prescale_factor=pre,
                                            postscale_factor=post, tensor_name=key,
                                            **_in_set(psid))


def group_member_names(key):
    """The member names an eager group registered under ``key`` (or None)."""
    return _group_names.get(key)


def _register_group(names):
    from ringscope.tensorflow._library import c

    key = f"ringscope.group/{len(_group_keys)}:{names[0]}"
    array = (ctypes.c_char_p * len(names))(*[n.encode() for n in names])
    c.ringscope_c_register_group(key.encode(), array, len(names))
    return key


def _as_bytes(tensor):
    """A tensor of a type the ops do not carry (bool) as uint8 that can be
    moved, and the function that turns moved bytes back."""
    if tensor.dtype == tf.bool:
        return tf.cast(tensor, tf.uint8), lambda t: tf.cast(t, tf.bool)
    return tensor, lambda t: t


def allgather(tensor, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Concatenates ``tensor`` from every rank (of ``process_set``) along
    dim 0 (dim 0 may differ)."""
    return _allgather(tensor, name, process_set_id_of(process_set))


def _allgather(tensor, name, psid):
    tensor = tf.convert_to_tensor(tensor)
    # A scalar is refused by the op with its own message; its bytes (shape
    # [2] for 16 bits) would be gathered and then fail to convert back.
    moved, back = _as_bytes(tensor) if tensor.shape.rank != 0 else (tensor, lambda t: t)
    return back(_ops.ringscope_allgather(moved, tensor_name=_auto_name("allgather", name),
                                         **_in_set(psid)))


def grouped_allgather(tensors, name=None, ignore_name_scope=False,
                      process_set=global_process_set):
    """Allgathers each tensor of a list (each one's dim 0 may differ per
    rank); they are submitted together (eagerly too)."""
    base = _auto_name("grouped_allgather", name)
    psid = process_set_id_of(process_set)

    def build(ts):
        return [_allgather(t, f"{base}/{i}" if base else None, psid) for i, t in enumerate(ts)]

    return _submit_together(_together_fns, ("grouped_allgather", base, psid), build,
                            list(tensors))


def reducescatter(tensor, device_dense="", compression=Compression.none, op=None, name=None,
                  ignore_name_scope=False, prescale_factor=1.0, postscale_factor=1.0,
                  process_set=global_process_set):
    """Reduces ``tensor`` over all ranks (default: Average) and returns this
    rank's rows of the result along dim 0: the first dim0 % size() ranks get
    one row more than the others, as in Horovod. ``op``: Sum, Average, Min
    or Max (Product, as in Horovod, is an allreduce's only). CPU tensors;
    every rank passes the same shape. Arguments in Horovod's order;
    ``device_dense`` is accepted and changes nothing."""
    _check_device_dense(device_dense)
    op = _reduce_op(op, None)
    if op == Product:
        raise ValueError("reducescatter takes Sum, Average, Min or Max, not Product (an "
                         "allreduce's op, as in Horovod)")
    tensor = tf.convert_to_tensor(tensor)
    compressed, ctx = compression.compress(tensor)
    out = _ops.ringscope_reducescatter(
        compressed, reduce_op=op, prescale_factor=float(prescale_factor),
        postscale_factor=float(postscale_factor),
        tensor_name=_auto_name("reducescatter", name), **_in_set(process_set_id_of(process_set)))
    return compression.decompress(out, ctx)


def _check_device_dense(device_dense):
    """Horovod's device string, changing nothing here. An op in its place
    (reducescatter(x, hvd.Sum), Horovod's old order) would otherwise
    be dropped silently and the default Average used."""
    if not isinstance(device_dense, str):
        raise TypeError(f"ringscope: reducescatter's second argument is device_dense (a device "
                        f"string, as in Horovod), got {device_dense!r}; pass the op as op=...")


def grouped_reducescatter(tensors, device_dense="", compression=Compression.none, op=None,
                          prescale_factor=1.0, postscale_factor=1.0, name=None,
                          ignore_name_scope=False, process_set=global_process_set):
    """reducescatter of each tensor of a list; they are submitted together
    (eagerly too). Arguments in Horovod's order."""
    _check_device_dense(device_dense)
    base = _auto_name("grouped_reducescatter", name)
    psid = process_set_id_of(process_set)  # a bad set fails here, before any op

    def build(ts):
        return [reducescatter(t, op=op, name=f"{base}/{i}" if base else None,
                              prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                              compression=compression, process_set=process_set)
                for i, t in enumerate(ts)]

    key = ("grouped_reducescatter", base, op, float(prescale_factor), float(postscale_factor),
           compression, psid)
    return _submit_together(_together_fns, key, build, list(tensors))


def alltoall(tensor, splits=None, name=None, ignore_name_scope=False,
             process_set=global_process_set):
    """Sends consecutive rows of ``tensor`` (along dim 0) to every rank:
    ``splits[d]`` rows to rank d, in rank order (default: an equal split,
    dim 0 must then divide by size()). Returns, as Horovod does, the rows
    every rank sent this rank, in rank order, and, when ``splits`` is given,
    how many came from each: ``(output, received_splits)`` (int32).
    Dimensions after the first must agree on every rank. Differentiable: the
    gradient travels the routes back."""
    tensor = tf.convert_to_tensor(tensor)
    if splits is None:
        splits_in = tf.zeros([0], tf.int32)
    else:
        splits_in = tf.reshape(tf.cast(splits, tf.int32), [-1])
    # bool and 8/16-bit integers travel as bytes: a bitcast only adds a
    # trailing dimension, so the splits over dim 0 still hold.
    moved, back = _as_bytes(tensor) if tensor.shape.rank != 0 else (tensor, lambda t: t)
    output, received_splits = _ops.ringscope_alltoall(
        moved, splits_in, tensor_name=_auto_name("alltoall", name),
        **_in_set(process_set_id_of(process_set)))
    return back(output) if splits is None else (back(output), received_splits)


def broadcast(tensor, root_rank, name=None, ignore_name_scope=False,
              process_set=global_process_set):
    """Returns ``tensor`` of rank ``root_rank`` on every rank (of
    ``process_set``; root_rank is a rank in the world, as Horovod's)."""
    moved, back = _as_bytes(tf.convert_to_tensor(tensor))
    return back(_ops.ringscope_broadcast(moved, root_rank=int(root_rank),
                                         tensor_name=_auto_name("broadcast", name),
                                         **_in_set(process_set_id_of(process_set))))


def broadcast_(variables, root_rank, name=None, process_set=global_process_set):
    """Horovod's in-place broadcast: writes rank ``root_rank``'s values into
    ``variables`` on every rank, in their own buffers (no copy is made
    unless something still holds a value read before), and returns their
    new values. Resource variables (TF2's, a Keras variable's) are written
    by one op that keeps them locked meanwhile; TF1 reference variables are
    assigned the broadcast value. Names are matched by position and
    ``name``, as Horovod's."""
    from tensorflow.python.ops import resource_variable_ops

    psid = process_set_id_of(process_set)
    variables = [getattr(v, "value", v) if _is_keras_variable(v) else v for v in variables]
    if not variables:
        return []
    base = str(name) if name else "broadcast_" + _thread_suffix()
    names = [f"{base}/{i}" for i in range(len(variables))]
    resource = [resource_variable_ops.is_resource_variable(v) for v in variables]
    if all(resource):
        op = _ops.ringscope_broadcast_inplace([v.handle for v in variables],
                                              root_rank=int(root_rank), variable_names=names,
                                              **_in_set(psid))
        with tf.control_dependencies(None if op is None else [op]):
            return [v.read_value() for v in variables]
    if not any(resource):
        return [tf.compat.v1.assign(v, broadcast(v, root_rank, name=n, process_set=process_set))
                for v, n in zip(variables, names)]
    raise ValueError("All variables passed to broadcast_() should be of the same kind, "
                     "resource or reference")


def _is_keras_variable(v):
    try:
        import keras
    except ImportError:
        return False
    return isinstance(v, keras.Variable)


def join():
    """Horovod's ``hvd.join()``: this rank has no more data. Until every
    rank has joined, it takes part in the collectives the others still run
    (with zeros for an allreduce sum or average, the reduction's identity for
    min and max, no rows for an allgather, as a receiver for a broadcast), so
    ranks with uneven shares of the data finish the epoch without a stall.
    Returns the rank that joined last, as an int32 scalar tensor. A
    reducescatter, an alltoall, a GPU tensor or a broadcast from a joined
    root fails on every rank with an error naming the joined ranks."""
    return _ops.ringscope_join()


def broadcast_global_variables(root_rank):
    """Horovod's TF1 call; Keras 3 has no global variables to find."""
    from ringscope.tensorflow.keras import broadcast_global_variables as keras_version

    keras_version(root_rank)


def _is_rng_state(var):
    """A Keras 3 SeedGenerator's state (Dropout, random augmentation), which
    Layer.variables includes and Keras 2's did not."""
    return getattr(var, "name", "") == "seed_generator_state"


def broadcast_variables(variables, root_rank, inplace=False, include_rng_state=False,
                        name=None, process_set=global_process_set):
    """Assigns every variable the value it has on ``root_rank``; the
    broadcasts are submitted together (eagerly too). A SeedGenerator's state
    stays each rank's own unless ``include_rng_state``: copied from root,
    every rank would draw the same dropout masks. ``inplace`` is Horovod's
    TF1 argument; variables are always assigned in place here."""
    del inplace
    variables = [v for v in variables if include_rng_state or not _is_rng_state(v)]
    # Matched by position, as Horovod's are: a variable's path differs
    # between a model built here and the same model loaded on root
    # ("sequential/dense/kernel" and "dense/kernel", its optimizer slots
    # "sequential_dense_kernel_momentum" and "dense_kernel_momentum").
    base = str(name) if name else "broadcast_variables" + _thread_suffix()
    names = tuple(f"{base}/{i}" for i in range(len(variables)))
    root = int(root_rank)

    psid = process_set_id_of(process_set)  # a bad set fails here, before any op

    def build(values):
        return [broadcast(v, root, name=n, process_set=process_set)
                for v, n in zip(values, names)]

    values = _submit_together(_together_fns, ("broadcast_variables", root, names, psid), build,
                              [tf.convert_to_tensor(var) for var in variables])
    # A graph (TF1 session) runs what is returned, as Horovod's group op.
    return tf.group(*[var.assign(value) for var, value in zip(variables, values)])
