"""The one helper of horovod.tensorflow.util the tests import."""

from tensorflow.python.eager import context


def _executing_eagerly():
    return context.executing_eagerly()
