"""The Horovod Keras callbacks on ringscope (Keras 3):
BroadcastGlobalVariablesCallback, MetricAverageCallback,
LearningRateScheduleCallback, LearningRateWarmupCallback, plus
StepMarkCallback for step marks in the trace.

Reached as ``ringscope.tensorflow.keras.callbacks.X`` (Horovod's Keras
layout) and as ``ringscope.tensorflow.X``.

Unlike Horovod, the learning-rate callbacks do not correct momentum when they
change the rate: Keras 3 compiles an optimizer's momentum into the training
step as a constant. They say so once (a warning) when the optimizer has
momentum and momentum_correction is left on.
"""

import warnings

import keras
import numpy as np
import tensorflow as tf

_warned_xla = []


class _Callback(keras.callbacks.Callback):
    """Every ringscope callback trains its model outside XLA: Keras 3's
    compile() turns jit_compile on by default wherever TensorFlow sees a GPU,
    and a DistributedOptimizer's allreduces have no XLA kernel. Keras hands
    the callbacks the model before it builds the training step."""

    def set_model(self, model):
        super().set_model(model)
        if getattr(model, "jit_compile", False) is True:
            model.jit_compile = False
            model.train_function = None  # built again, without XLA
            if not _warned_xla:
                _warned_xla.append(True)
                warnings.warn("ringscope: jit_compile turned off for this model: ringscope's "
                              "collectives run outside XLA")


class BroadcastGlobalVariablesCallback(_Callback):
    """Makes every rank train from root_rank's weights and optimizer state.

    The model's variables are broadcast when training begins if the model
    is built by then, so the first step already starts from root's weights;
    after the first batch the model's and the optimizer's variables are
    broadcast again (Keras 3 builds optimizers, and models without an
    Input, in the first step), so a state that only root restored reaches
    every rank. Variables in ``local_variables`` are left as they are on
    each rank. ``device`` is accepted for Horovod compatibility (the ops
    run on CPU)."""

    def __init__(self, root_rank=0, device="", local_variables=None):
        super().__init__()
        del device
        self.root_rank = root_rank
        if local_variables is None:
            local_variables = []
        elif not isinstance(local_variables, (list, tuple, set)):
            local_variables = [local_variables]
        for var in local_variables:
            if not hasattr(var, "assign"):
                raise ValueError("local_variables must be variables, got "
                                 f"{type(var).__name__}")
        self._local = list(local_variables)
        self._done = False

    def _is_local(self, var):
        path = getattr(var, "path", None)
        return any(var is lv or (path is not None and path == getattr(lv, "path", None))
                   for lv in self._local)

    def _broadcast(self, variables):
        from ringscope.tensorflow import broadcast_variables

        # broadcast_variables leaves each rank its own SeedGenerator state.
        broadcast_variables([v for v in variables if not self._is_local(v)], self.root_rank)

    def on_train_begin(self, logs=None):
        # Broadcast now only if the model is built on every rank: a model
        # loaded on rank 0 only (Horovod's resume pattern) is built there and
        # not elsewhere, and a broadcast on some ranks alone would wait
        # forever. Otherwise the broadcast after the first batch does it.
        from ringscope.tensorflow import Min, allreduce

        if self._done:
            return
        built = allreduce(tf.constant(int(bool(self.model.built)), tf.int32), op=Min,
                          name="BroadcastGlobalVariablesCallback/built")
        if int(built.numpy()):
            self._broadcast(self.model.variables)

    def on_train_batch_end(self, batch, logs=None):
        if not self._done:
            self._done = True
            optimizer = self.model.optimizer
            self._broadcast(list(self.model.variables) +
                            (list(optimizer.variables) if optimizer is not None else []))


class MetricAverageCallback(_Callback):
    """Averages the epoch's metrics over all ranks, so every rank logs the
    same. Put it before callbacks that read metrics (ReduceLROnPlateau,
    TensorBoard, checkpoints)."""

    def __init__(self, device=""):
        super().__init__()
        del device

    def on_epoch_end(self, epoch, logs=None):
        from ringscope.tensorflow import allreduce

        if not logs:
            return
        for key in sorted(logs):
            value = logs[key]
            if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
                value = value.numpy()  # a tensor
            if isinstance(value, (int, float, np.floating, np.integer)):
                avg = allreduce(tf.constant(float(value), tf.float64),
                                name=f"MetricAverageCallback/{key}")
                logs[key] = float(avg.numpy())
            elif isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.number):
                # Per-class metrics (F1Score(average=None)): averaged element-wise,
                # in float64 (an integer array's mean is not an integer).
                avg = allreduce(tf.constant(value.astype(np.float64)),
                                name=f"MetricAverageCallback/{key}")
                floating = np.issubdtype(value.dtype, np.floating)
                logs[key] = avg.numpy().astype(value.dtype) if floating else avg.numpy()


def _get_lr(model):
    return float(keras.ops.convert_to_numpy(model.optimizer.learning_rate))


class LearningRateScheduleCallback(_Callback):
    """Sets the learning rate to ``initial_lr * multiplier(epoch)`` from
    ``start_epoch`` up to (not including) ``end_epoch``.

    ``multiplier`` is a function of the epoch, or a number m for
    exponential decay (m ** (epoch - start_epoch)). With
    ``staircase=False`` the rate changes before every batch and the
    multiplier gets a fractional epoch (epoch + batch / steps_per_epoch);
    steps_per_epoch comes from model.fit when not given. ``initial_lr=None``
    takes the optimizer's rate at the start of training."""

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None):
        super().__init__()
        self.initial_lr = None if initial_lr is None else float(initial_lr)
        if callable(multiplier):
            self.multiplier = multiplier
        else:  # a number: exponential decay from start_epoch, as in Horovod
            factor = float(multiplier)
            self.multiplier = lambda epoch: factor ** (epoch - start_epoch)
        self.staircase = staircase
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.current_epoch = 0

    def _active(self):
        return self.current_epoch >= self.start_epoch and (
            self.end_epoch is None or self.current_epoch < self.end_epoch)

    def _set_lr(self, epoch):
        self.model.optimizer.learning_rate.assign(self.initial_lr * self.multiplier(epoch))

    def on_train_begin(self, logs=None):
        if self.initial_lr is None:
            self.initial_lr = _get_lr(self.model)
        if not self.staircase and not self.steps_per_epoch:
            self.steps_per_epoch = self.params.get("steps")
            if not self.steps_per_epoch:
                raise ValueError(f"{type(self).__name__}: model.fit did not say how many steps "
                                 "an epoch has; pass steps_per_epoch")
        momentum = getattr(self.model.optimizer, "momentum", 0.0)
        if self.momentum_correction and isinstance(momentum, (int, float)) and momentum > 0:
            warnings.warn(f"ringscope {type(self).__name__}: momentum is not corrected when the "
                          "learning rate changes (Keras 3 compiles momentum into the step)",
                          stacklevel=2)

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if not self._active():
            return
        if not self.staircase:
            self._set_lr(self.current_epoch + batch / float(self.steps_per_epoch))
        elif batch == 0:
            self._set_lr(self.current_epoch)

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = _get_lr(self.model)


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Ramps the learning rate from initial_lr / size() to initial_lr over
    warmup_epochs (Goyal et al.), before every batch; as in Horovod, batch
    b of epoch e gets the rate of epoch e + (b + 1) / steps_per_epoch."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True, steps_per_epoch=None,
                 verbose=0):
        def multiplier(epoch):
            from ringscope.tensorflow import size

            # As Horovod: one step ahead, so the last warm-up batch has initial_lr.
            epoch += 1.0 / self.steps_per_epoch
            return 1.0 / size() * (epoch * (size() - 1) / warmup_epochs + 1)

        super().__init__(initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs,
                         staircase=False, momentum_correction=momentum_correction,
                         steps_per_epoch=steps_per_epoch)
        self.warmup_epochs = warmup_epochs
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.warmup_epochs - 1:
            self.model.optimizer.learning_rate.assign(self.initial_lr)  # exactly, at the end
        super().on_epoch_end(epoch, logs)
        if epoch == self.warmup_epochs - 1:
            from ringscope.tensorflow import rank

            if self.verbose and rank() == 0:
                print(f"Epoch {epoch + 1}: finished gradual learning rate warmup to "
                      f"{self.initial_lr:.6g}.")


class StepMarkCallback(_Callback):
    """Puts a STEP mark into the ringscope trace after every training batch."""

    def __init__(self):
        super().__init__()
        self._step = 0

    def on_train_batch_end(self, batch, logs=None):
        from ringscope.tensorflow import mark_step

        mark_step(self._step)
        self._step += 1
