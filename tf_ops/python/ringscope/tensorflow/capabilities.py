"""What this build can do, under Horovod's names (mpi_built, nccl_built,
...), and the Horovod names ringscope does not provide, which raise an
AttributeError saying so (ringscope.tensorflow's module __getattr__)."""

import functools

from ringscope.tensorflow._library import c as _c


# What this build can do, under Horovod's names: MPI always (with
# MPI_THREAD_MULTIPLE), NCCL and CUDA when compiled with them, nothing else.
def mpi_built():
    return True


def mpi_enabled():
    return True


def mpi_threads_supported():
    from ringscope.tensorflow import _topology

    _topology(_c.ringscope_c_size)  # Horovod raises before init, so do we
    return True


def gloo_built():
    return False


def gloo_enabled():
    return False


@functools.lru_cache(maxsize=None)
def cuda_built():
    return bool(_c.ringscope_c_built_with_cuda())


def nccl_built():
    return cuda_built()  # ringscope's GPU path is built with both or neither


def rocm_built():
    return False


def ddl_built():
    return False


def ccl_built():
    return False


# Horovod names ringscope does not provide (docs/tensorflow.md, "Not
# provided"): an AttributeError that says so and what to use instead,
# rather than a bare "has no attribute".
_NOT_PROVIDED = {
    "elastic": "elastic training", "Adasum": "the Adasum op",
    "BroadcastGlobalVariablesHook": "TF1 session hooks (use broadcast_variables or "
    "BroadcastGlobalVariablesCallback)",
    "broadcast_object_fn": "TF1 sessions (use broadcast_object)",
    "mpi_ops": "horovod.tensorflow.mpi_ops (its functions are in ringscope.tensorflow)",
}


def not_provided(module):
    """A module __getattr__ for ``module`` that names what ringscope does
    not provide (and says so) instead of a bare "has no attribute"."""

    def __getattr__(name):
        if name in _NOT_PROVIDED:
            raise AttributeError(f"{module} has no {name}: ringscope does not provide "
                                 f"{_NOT_PROVIDED[name]}; see docs/tensorflow.md, 'Not provided'")
        raise AttributeError(f"module '{module}' has no attribute {name!r}")

    return __getattr__


__getattr__ = not_provided("ringscope.tensorflow")
