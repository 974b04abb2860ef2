"""horovod.tensorflow.keras -> ringscope.tensorflow.keras."""

from ringscope.tensorflow.keras import *  # noqa: F401,F403

from horovod._forward import forwarder

__getattr__ = forwarder("ringscope.tensorflow.keras")
