"""Keras 3 integration: DistributedOptimizer and the Horovod callbacks
(BroadcastGlobalVariablesCallback, MetricAverageCallback,
LearningRateWarmupCallback), plus StepMarkCallback for step marks in traces."""

import keras
import numpy as np
import tensorflow as tf


def DistributedOptimizer(optimizer, name=None, compression=None, op=None, prescale_factor=1.0,
                         postscale_factor=1.0, **_unused):
    """Returns an optimizer of the same class and configuration whose
    gradients are allreduced (averaged by default) before they are applied."""
    from ringscope.tensorflow import Average, Compression
    from ringscope.tensorflow.gradient_tape import allreduce_gradients

    reduce_op = Average if op is None else op
    comp = compression or Compression.none
    base = type(optimizer)

    class _DistributedOptimizer(base):
        def apply(self, grads, trainable_variables=None):
            variables = (trainable_variables if trainable_variables is not None
                         else self._trainable_variables)
            grads = allreduce_gradients(list(grads), list(variables), reduce_op, comp,
                                        prescale_factor, postscale_factor,
                                        prefix=name or "DistributedOptimizer")
            return super().apply(grads, trainable_variables)

    _DistributedOptimizer.__name__ = "Distributed" + base.__name__
    return _DistributedOptimizer.from_config(optimizer.get_config())


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """Makes every rank start from root_rank's weights (and optimizer state,
    once it exists)."""

    def __init__(self, root_rank=0):
        super().__init__()
        self.root_rank = root_rank
        self._done = False

    def _broadcast(self):
        from ringscope.tensorflow import broadcast_variables

        broadcast_variables(self.model.variables, self.root_rank)
        if self.model.optimizer is not None and self.model.optimizer.variables:
            broadcast_variables(self.model.optimizer.variables, self.root_rank)

    def on_train_begin(self, logs=None):
        if not self._done:
            self._broadcast()
            self._done = True


class MetricAverageCallback(keras.callbacks.Callback):
    """Averages the epoch's metrics over all ranks, so every rank logs the same."""

    def on_epoch_end(self, epoch, logs=None):
        from ringscope.tensorflow import allreduce

        if not logs:
            return
        for key in sorted(logs):
            value = logs[key]
            if isinstance(value, (int, float, np.floating, np.integer)):
                avg = allreduce(tf.constant(float(value), tf.float64),
                                name=f"MetricAverageCallback/{key}")
                logs[key] = float(avg.numpy())


class LearningRateWarmupCallback(keras.callbacks.Callback):
    """Ramps the learning rate from initial_lr / size() to initial_lr over
    warmup_epochs (Goyal et al.), per batch when steps_per_epoch is known."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True, steps_per_epoch=None,
                 verbose=0):
        super().__init__()
        self.initial_lr = float(initial_lr)
        self.warmup_epochs = warmup_epochs
        self.steps_per_epoch = steps_per_epoch
        self.verbose = verbose
        self._epoch = 0

    def _lr(self, epoch_float):
        from ringscope.tensorflow import size

        if epoch_float >= self.warmup_epochs:
            return self.initial_lr
        p = epoch_float / self.warmup_epochs
        return self.initial_lr * (1.0 / size() * (1.0 - p) + p)

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch
        if not self.steps_per_epoch:
            self.model.optimizer.learning_rate.assign(self._lr(float(epoch)))

    def on_train_batch_begin(self, batch, logs=None):
        if self.steps_per_epoch and self._epoch < self.warmup_epochs:
            lr = self._lr(self._epoch + batch / float(self.steps_per_epoch))
            self.model.optimizer.learning_rate.assign(lr)

    def on_epoch_end(self, epoch, logs=None):
        if self.verbose and epoch < self.warmup_epochs:
            lr = float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))
            print(f"Epoch {epoch + 1}: LearningRateWarmupCallback set learning rate to {lr:.6g}")


class StepMarkCallback(keras.callbacks.Callback):
    """Puts a STEP mark into the ringscope trace after every training batch."""

    def __init__(self):
        super().__init__()
        self._step = 0

    def on_train_batch_end(self, batch, logs=None):
        from ringscope.tensorflow import mark_step

        mark_step(self._step)
        self._step += 1
