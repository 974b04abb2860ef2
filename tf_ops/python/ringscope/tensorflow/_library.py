"""Loads the ringscope TensorFlow op library and its small C interface.

Open MPI's plugins need libmpi's symbols in the global namespace, so libmpi
is loaded RTLD_GLOBAL before TensorFlow dlopens our library.
"""

import ctypes
import ctypes.util
import os
import weakref

import tensorflow as tf
from tensorflow.python.ops import control_flow_util

LIBRARY_PATH = os.environ.get(
    "RINGSCOPE_TF_OPS_LIBRARY",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "ringscope_tf_ops.so"),
)


def _preload_mpi():
    for name in (ctypes.util.find_library("mpi"), "libmpi.so.40", "libmpi.so"):
        if not name:
            continue
        try:
            ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
            return
        except OSError:
            continue


if not os.path.exists(LIBRARY_PATH):
    raise ImportError(
        f"ringscope: op library not found at {LIBRARY_PATH}; build it with "
        "scripts/setup.sh (it needs tensorflow-cpu in .venv) and put build/python on PYTHONPATH"
    )
_preload_mpi()
_raw_ops = tf.load_op_library(LIBRARY_PATH)
c = ctypes.CDLL(LIBRARY_PATH, mode=ctypes.RTLD_GLOBAL)

_COLLECTIVES = ("ringscope_allreduce", "ringscope_grouped_allreduce", "ringscope_allgather",
                "ringscope_reducescatter", "ringscope_alltoall", "ringscope_broadcast")
# Per graph, by op *name*: an op holds its graph, so a value holding ops
# would keep every traced graph alive.
_last_op_named = weakref.WeakKeyDictionary()  # graph -> {tensor name: its last collective}
_collectives_of = weakref.WeakKeyDictionary()  # graph -> its collectives, in program order


def _refuse_inside_xla(kind, name):
    """The collectives have no XLA kernel: inside a function compiled with
    jit_compile=True (Keras 3's compile() turns it on by default wherever
    TensorFlow sees a GPU) TensorFlow would fail with "unsupported op". Say
    what to change instead."""
    if tf.executing_eagerly():
        return
    if control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()):
        raise ValueError(
            f"ringscope: {kind.replace('ringscope_', '')} '{name or '(unnamed)'}' is inside an "
            "XLA-compiled function (jit_compile=True), and ringscope's collectives run outside "
            "XLA. Pass jit_compile=False to model.compile() (Keras turns it on by default on "
            "GPU machines; ringscope's Keras callbacks turn it off) or to tf.function.")


def _run_independently(out, names):
    """In a tf.function: the collectives are stateful (so they always run, on
    every rank, even where a rank does not use the result), and TensorFlow
    would run every stateful op in program order, each allreduce waiting for
    the one before and nothing fused. Marked independent (as TensorFlow's own
    collectives are), they run as soon as their inputs are ready. Two ops
    that share an explicit name (``names``: the op's tensor names) in one
    graph still run one after the other: the runtime refuses a name that is
    already in flight."""
    if tf.executing_eagerly():
        return
    op = (out[0] if isinstance(out, (tuple, list)) else out).op
    manager = getattr(op.graph, "experimental_acd_manager", None)
    if manager is None:  # a graph outside tf.function: TensorFlow's own rules
        return
    manager.run_independently(op)
    _collectives_of.setdefault(op.graph, []).append(op.name)
    last = _last_op_named.setdefault(op.graph, {})
    before = {last[n] for n in names if n and n in last}
    for name in before:
        op._add_control_input(  # pylint: disable=protected-access
            op.graph.get_operation_by_name(name))
    for n in names:
        if n:
            last[n] = op.name


def _collectives_before():
    """In a tf.function: the collectives built so far in this graph and the
    graphs it is nested in (a join inside tf.cond or an inner function), for
    join() to run after. They are independent of program order (above), so
    without this the join could reach the runtime first and the other ranks
    would complete them with this rank's stand-in zeros. Ops of an outer
    graph become control captures: the cond or call op waits for them."""
    if tf.executing_eagerly():
        return []
    ops = []
    graph = tf.compat.v1.get_default_graph()
    while graph is not None:
        ops += [graph.get_operation_by_name(n) for n in _collectives_of.get(graph, ())]
        graph = getattr(graph, "outer_graph", None)
    return ops


# Distinct names of eager collectives, up to one past the warning: TensorFlow
# keeps a kernel per distinct attribute set (~35 KB each, docs/tensorflow.md),
# so a name that changes every step grows memory without bound.
_EAGER_NAMES_WARNED_AT = 1000
_eager_names = set()


def _note_eager_name(name):
    if not name or len(_eager_names) > _EAGER_NAMES_WARNED_AT or not tf.executing_eagerly():
        return
    _eager_names.add(name)
    if len(_eager_names) > _EAGER_NAMES_WARNED_AT:
        import warnings

        warnings.warn(
            f"ringscope: more than {_EAGER_NAMES_WARNED_AT} distinct tensor names in eager "
            f"collectives (the latest '{name}'). TensorFlow keeps a kernel (~35 KB) for each, "
            "so a name that changes every step (name=f'loss_{step}') grows memory without "
            "bound: give each tensor one fixed name, or none", RuntimeWarning, stacklevel=3)


class _Ops:
    """The op library, with each collective marked by _run_independently."""

    def __getattr__(self, attr):
        # Called only on the first lookup of each name: the result is kept as
        # an attribute, so later calls cost a plain attribute read.
        fn = getattr(_raw_ops, attr)
        if attr in _COLLECTIVES:
            raw = fn

            def fn(*args, _kind=attr, **kwargs):
                _refuse_inside_xla(_kind, kwargs.get("tensor_name", ""))
                _note_eager_name(kwargs.get("tensor_name", ""))
                for key in ("prescale_factor", "postscale_factor"):
                    if key in kwargs:  # the attrs are text: exact doubles (ringscope_ops.cc)
                        kwargs[key] = repr(float(kwargs[key]))
                out = raw(*args, **kwargs)
                _run_independently(out, kwargs.get("tensor_names") or
                                   [kwargs.get("tensor_name", "")])
                return out
        elif attr == "ringscope_join":
            raw = fn

            def fn(*args, **kwargs):
                _refuse_inside_xla("ringscope_join", "join")
                with tf.control_dependencies(_collectives_before()):
                    return raw(*args, **kwargs)

        setattr(self, attr, fn)
        return fn


ops = _Ops()

for _fn in ("rank", "size", "local_rank", "local_size", "cross_rank", "cross_size", "is_initialized",
            "is_homogeneous", "built_with_cuda"):
    getattr(c, "ringscope_c_" + _fn).restype = ctypes.c_int
c.ringscope_c_init.argtypes = [ctypes.c_char_p, ctypes.c_int]
c.ringscope_c_start_trace.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
c.ringscope_c_stop_trace.argtypes = [ctypes.c_char_p, ctypes.c_int]
c.ringscope_c_agree.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
c.ringscope_c_bench_step.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_int,
                                     ctypes.POINTER(ctypes.c_double), ctypes.c_char_p, ctypes.c_int]
c.ringscope_c_register_group.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p),
                                         ctypes.c_int]
c.ringscope_c_register_group.restype = None
c.ringscope_c_dump_flight_recorder.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                               ctypes.c_char_p, ctypes.c_int]
# The stack writer: called with the GIL (a ctypes callback) on a helper
# thread of the dump; writes every thread's stack into the file and
# returns 0 (ringscope.tensorflow._stacks_in_dumps).
STACK_WRITER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
c.ringscope_c_set_stack_source.argtypes = [ctypes.c_int, ctypes.c_int, STACK_WRITER]
c.ringscope_c_set_stack_source.restype = None
c.ringscope_c_mark_step.argtypes = [ctypes.c_longlong]
c.ringscope_c_add_process_set.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int,
                                          ctypes.POINTER(ctypes.c_int), ctypes.c_char_p,
                                          ctypes.c_int]
c.ringscope_c_remove_process_set.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
c.ringscope_c_process_sets.argtypes = [ctypes.c_char_p, ctypes.c_int]
c.ringscope_c_propose_settings.argtypes = [
    ctypes.c_longlong, ctypes.c_double, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
c.ringscope_c_current_settings.argtypes = [
    ctypes.POINTER(ctypes.c_longlong), ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_int)]


class RingscopeError(RuntimeError):
    """An error reported by the ringscope runtime (the message says what and where)."""


def call(fn, *args):
    """Calls a C function that returns a status code and fills an error buffer."""
    buf = ctypes.create_string_buffer(4096)
    code = fn(*args, buf, len(buf))
    if code != 0:
        raise RingscopeError(buf.value.decode("utf-8", "replace"))
