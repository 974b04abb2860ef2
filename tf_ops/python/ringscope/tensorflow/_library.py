"""Loads the ringscope TensorFlow op library and its small C interface.

Open MPI's plugins need libmpi's symbols in the global namespace, so libmpi
is loaded RTLD_GLOBAL before TensorFlow dlopens our library.
"""

import ctypes
import ctypes.util
import os

import tensorflow as tf

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
ops = tf.load_op_library(LIBRARY_PATH)
c = ctypes.CDLL(LIBRARY_PATH, mode=ctypes.RTLD_GLOBAL)

for _fn in ("rank", "size", "local_rank", "local_size", "cross_rank", "cross_size", "is_initialized",
            "built_with_cuda"):
    getattr(c, "ringscope_c_" + _fn).restype = ctypes.c_int
c.ringscope_c_init.argtypes = [ctypes.c_char_p, ctypes.c_int]
c.ringscope_c_start_trace.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
c.ringscope_c_stop_trace.argtypes = [ctypes.c_char_p, ctypes.c_int]
c.ringscope_c_mark_step.argtypes = [ctypes.c_longlong]
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
