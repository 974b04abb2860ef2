"""DistributedOptimizer for TensorFlow 1 optimizers (tf.compat.v1.train.X),
as Horovod's ``horovod.tensorflow.DistributedOptimizer`` wraps them: in a
graph (a TF1 session, or a tf.function), compute_gradients() returns the
allreduced gradients and apply_gradients() applies what it is given. Keras
3 optimizers go through ringscope.tensorflow.keras.DistributedOptimizer."""

import tensorflow as tf

from ringscope.tensorflow.gradient_tape import GradientReduction


def is_legacy_optimizer(optimizer):
    """Whether ``optimizer`` is a TensorFlow 1 optimizer."""
    return isinstance(optimizer, tf.compat.v1.train.Optimizer)


def LegacyDistributedOptimizer(optimizer, name=None, use_locking=False, compression=None,
                               sparse_as_dense=False, gradient_predivide_factor=1.0, op=None,
                               backward_passes_per_step=1, average_aggregated_gradients=False,
                               num_groups=0, groups=None, prescale_factor=1.0,
                               postscale_factor=1.0, process_set=None):
    """``optimizer`` (a tf.compat.v1.train.Optimizer) with its gradients
    allreduced (averaged by default) in compute_gradients(), Horovod's
    arguments. A rank outside ``process_set`` keeps its own gradients, as
    in Horovod. Local aggregation (backward_passes_per_step > 1) is the
    Keras optimizer's and the tape's: refused here, as TensorFlow 2 runs
    these optimizers in graphs only."""
    if backward_passes_per_step != 1:
        raise ValueError(
            "ringscope: backward_passes_per_step > 1 needs a Keras optimizer "
            "(keras.optimizers.X) or DistributedGradientTape; this is a TensorFlow 1 optimizer")
    del average_aggregated_gradients  # only meaningful with aggregation
    reduction = GradientReduction(op, compression, sparse_as_dense, gradient_predivide_factor,
                                  prescale_factor, postscale_factor, num_groups, groups,
                                  process_set)
    prefix = name or "DistributedOptimizer"

    class _DistributedOptimizer(tf.compat.v1.train.Optimizer):
        """Horovod's wrapper: the wrapped optimizer is ``_optimizer``."""

        def __init__(self):
            super().__init__(name=f"Distributed{type(optimizer).__name__}",
                             use_locking=use_locking)
            self._optimizer = optimizer

        def compute_gradients(self, *args, **kwargs):
            pairs = self._optimizer.compute_gradients(*args, **kwargs)
            present = [(g, v) for g, v in pairs if g is not None]
            reduced = iter(reduction.reduce([g for g, _ in present], [v for _, v in present],
                                            prefix))
            return [(next(reduced) if g is not None else None, v) for g, v in pairs]

        def apply_gradients(self, *args, **kwargs):
            return self._optimizer.apply_gradients(*args, **kwargs)

        def get_slot(self, *args, **kwargs):
            return self._optimizer.get_slot(*args, **kwargs)

        def get_slot_names(self, *args, **kwargs):
            return self._optimizer.get_slot_names(*args, **kwargs)

        def variables(self, *args, **kwargs):
            return self._optimizer.variables(*args, **kwargs)

    return _DistributedOptimizer()
