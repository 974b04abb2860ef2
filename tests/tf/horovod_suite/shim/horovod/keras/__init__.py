"""horovod.keras -> ringscope.tensorflow.keras (Horovod's standalone-Keras
module has the same API as horovod.tensorflow.keras)."""

from ringscope.tensorflow.keras import *  # noqa: F401,F403

from horovod._forward import forwarder

__getattr__ = forwarder("ringscope.tensorflow.keras")
