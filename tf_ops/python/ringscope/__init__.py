"""ringscope: a ring-allreduce runtime with a SQLite trace of every step.

Use ``import ringscope.tensorflow as hvd`` in place of
``import horovod.tensorflow as hvd``.
"""

__version__ = "0.1.0"
