"""horovod.tensorflow -> ringscope.tensorflow."""

from ringscope.tensorflow import *  # noqa: F401,F403
from ringscope.tensorflow import __all__  # noqa: F401

from horovod._forward import forwarder
from horovod.tensorflow.util import _executing_eagerly  # noqa: F401  (Horovod imports it here)
from horovod.tensorflow import keras  # noqa: F401,E402
from horovod.tensorflow import mpi_ops  # noqa: F401,E402

__getattr__ = forwarder("ringscope.tensorflow")
