"""DistributedOptimizer for Keras 3 optimizers, with Horovod's arguments,
and load_model, which reloads a saved model with its optimizer wrapped."""

import sys

import keras
import tensorflow as tf

from ringscope.tensorflow.aggregation import LocalAggregation
from ringscope.tensorflow.gradient_tape import GradientReduction, local_layer_variables

_DISTRIBUTED = "_ringscope_distributed"


def DistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="",
                         compression=None, sparse_as_dense=False, gradient_predivide_factor=1.0,
                         op=None, backward_passes_per_step=1, average_aggregated_gradients=False,
                         num_groups=0, groups=None, prescale_factor=1.0, postscale_factor=1.0,
                         use_locking=False, scale_local_gradients=True, process_set=None):
    """Returns an optimizer of the same class and configuration whose
    gradients are allreduced (averaged by default) before they are applied.

    Arguments as Horovod's. device_dense, device_sparse and use_locking are
    accepted and change nothing (the ops run on CPU; there are no TF1
    locks); variables registered with ``register_local_var`` keep their own
    gradient, divided by size() with scale_local_gradients (as Horovod's
    PartialDistributedOptimizer). With backward_passes_per_step N > 1 the
    gradients of N steps are summed on each rank and allreduced on the N-th
    (divided by N with average_aggregated_gradients), which alone applies
    them; every step counts in ``iterations`` (Horovod's semantics,
    aggregation.py). ``process_set`` averages over its ranks only (the
    ranks outside it must not train with this optimizer). The class keeps its name, so a model saved with it
    loads with the plain optimizer anywhere.

    With mixed_float16, wrap the loss-scale optimizer, not the other way
    round: ``DistributedOptimizer(keras.optimizers.LossScaleOptimizer(opt))``
    (then compile() does not wrap it again, and the overflow check sees the
    reduced gradients, the same on every rank)."""
    del device_dense, device_sparse, use_locking
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        # A tf_keras (Keras 2, TF_USE_LEGACY_KERAS=1) or tf.compat.v1
        # optimizer applies gradients through methods this wrapper does not
        # override: each rank would train alone, with no error.
        raise TypeError(
            f"ringscope: DistributedOptimizer wraps a Keras 3 optimizer (keras.optimizers.X); "
            f"got {type(optimizer).__module__}.{type(optimizer).__name__}. Keras 2 (tf_keras, "
            "TF_USE_LEGACY_KERAS=1) optimizers are not supported: use keras.optimizers.X, or "
            "DistributedGradientTape in a custom loop; a tf.compat.v1 optimizer goes through "
            "ringscope.tensorflow.DistributedOptimizer")
    aggregation = (LocalAggregation(backward_passes_per_step, average_aggregated_gradients)
                   if backward_passes_per_step != 1 else None)
    if getattr(optimizer, _DISTRIBUTED, False):
        raise ValueError("ringscope: this optimizer is already a DistributedOptimizer")
    reduction = GradientReduction(op, compression, sparse_as_dense, gradient_predivide_factor,
                                  prescale_factor, postscale_factor, num_groups, groups,
                                  process_set)
    prefix = name or "DistributedOptimizer"
    base = type(optimizer)

    local_ids = set()  # id() of the variables registered as local
    reduced_ids = set()  # id() of the gradients _compute_gradients returned, until applied

    def reduce(grads, variables):
        return reduction.reduce_with_local(list(grads), list(variables), prefix, local_ids,
                                           scale_local_gradients)

    def reduce_or_aggregate(grads, variables):
        if aggregation is None:
            return reduce(grads, variables)
        return aggregation.aggregate(grads, variables, reduce)

    class _DistributedOptimizer(base):
        _agg_helper = aggregation  # Horovod's name: its tests read _agg_helper.counter

        def register_local_var(self, var):
            """``var``'s gradient stays on this rank (not allreduced)."""
            local_ids.add(id(var))

        def _compute_gradients(self, loss, var_list, grad_loss=None, tape=None):
            """Horovod's: the gradients of ``loss`` (a tensor recorded on
            ``tape``, or a callable) with respect to ``var_list``, reduced as
            apply() reduces them, as (gradient, variable) pairs. apply()
            does not reduce these gradients again."""
            var_list = list(var_list() if callable(var_list) else var_list)
            tape = tf.GradientTape() if tape is None else tape
            if callable(loss):
                with tape:
                    loss = loss()
            grads = tape.gradient(loss, var_list, output_gradients=grad_loss)
            grads = reduce_or_aggregate(grads, var_list)
            reduced_ids.clear()
            reduced_ids.update(id(g) for g in grads if g is not None)
            return list(zip(grads, var_list))

        def apply(self, grads, trainable_variables=None):
            _refuse_inside_loss_scaler(self)
            variables = (trainable_variables if trainable_variables is not None
                         else self._trainable_variables)
            grads = list(grads)
            if reduced_ids and all(g is None or id(g) in reduced_ids for g in grads):
                reduced_ids.clear()  # from _compute_gradients: reduced there
            else:
                grads = reduce_or_aggregate(grads, variables)
            if aggregation is None:
                return super().apply(grads, trainable_variables)
            # Only the pass that allreduced applies; the others count. Built
            # first: no variable may be made inside a tf.cond branch.
            if not self.built:
                self.build(list(variables))
            parent = super()

            def update():
                parent.apply(grads, trainable_variables)
                return tf.constant(True)

            def count():
                self.iterations.assign_add(1)
                return tf.constant(False)

            tf.cond(aggregation.is_update_step(), update, count)
            return None

    setattr(_DistributedOptimizer, _DISTRIBUTED, True)
    for attr in ("__name__", "__qualname__", "__module__"):
        setattr(_DistributedOptimizer, attr, getattr(base, attr))
    return _rebuilt_as(_DistributedOptimizer, optimizer)


def _rebuilt_as(cls, optimizer):
    """A ``cls`` with ``optimizer``'s configuration and what its config
    leaves out: a learning-rate schedule or callable (the live object, which
    need not be serialisable: a schedule without get_config would otherwise
    fail here) and the variables excluded from weight decay (AdamW's
    exclude_from_weight_decay, not part of get_config). A LossScaleOptimizer
    is rebuilt around its inner optimizer rebuilt the same way (its
    get_config would serialise the inner one and lose both)."""
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        inner = optimizer.inner_optimizer
        return cls(_rebuilt_as(type(inner), inner), initial_scale=optimizer.initial_scale,
                   dynamic_growth_steps=optimizer.dynamic_growth_steps, name=optimizer.name)
    schedule = getattr(optimizer, "_learning_rate", None)
    live = (isinstance(schedule, keras.optimizers.schedules.LearningRateSchedule)
            or (callable(schedule) and not isinstance(schedule, keras.Variable)))
    if live:  # get_config would serialise it: a float stands in, untracked
        object.__setattr__(optimizer, "_learning_rate", 0.5)
    try:
        config = optimizer.get_config()
    finally:
        if live:
            object.__setattr__(optimizer, "_learning_rate", schedule)
    rebuilt = cls.from_config(config)
    if live:
        rebuilt.learning_rate = schedule
    for attr in ("_exclude_from_weight_decay", "_exclude_from_weight_decay_pattern"):
        if hasattr(optimizer, attr):
            setattr(rebuilt, attr, getattr(optimizer, attr))
    return rebuilt


def PartialDistributedOptimizer(optimizer, name=None, local_layers=None, **kwargs):
    """Horovod's PartialDistributedOptimizer: a DistributedOptimizer that
    leaves the gradients of ``local_layers`` (a Keras layer or a list) on
    their rank; the other arguments as DistributedOptimizer's."""
    local_vars = local_layer_variables(local_layers)
    distributed = DistributedOptimizer(optimizer, name=name, **kwargs)
    for var in local_vars:
        distributed.register_local_var(var)
    return distributed


def _refuse_inside_loss_scaler(optimizer):
    """A LossScaleOptimizer applies its inner optimizer only on ranks whose
    local gradients are finite: a rank that overflowed would skip the
    allreduce the others wait in. Checked when the step is traced."""
    frame = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return
        owner = frame.f_locals.get("self")
        if (isinstance(owner, keras.optimizers.LossScaleOptimizer)
                and owner.inner_optimizer is optimizer):
            raise ValueError(
                "ringscope: this DistributedOptimizer is inside a LossScaleOptimizer "
                "(compile() adds one under mixed_float16), which would skip the allreduce on a "
                "rank whose gradients overflow while the others wait; wrap it the other way "
                "round: hvd.DistributedOptimizer(keras.optimizers.LossScaleOptimizer(opt))")
        frame = frame.f_back


def load_model(filepath, custom_optimizers=None, custom_objects=None, compression=None):
    """Loads a model saved with ``model.save`` and wraps its optimizer in a
    DistributedOptimizer, keeping the optimizer's saved state (its
    iteration count, moments, ...). ``custom_optimizers`` (optimizer
    classes) and ``custom_objects`` are passed to keras.models.load_model."""
    objects = dict(custom_objects or {})
    for cls in custom_optimizers or []:
        objects[cls.__name__] = cls
    model = keras.models.load_model(filepath, custom_objects=objects or None)
    saved = getattr(model, "optimizer", None)  # a model saved uncompiled has none
    if saved is None:
        return model
    wrapped = DistributedOptimizer(saved, compression=compression)
    if not getattr(saved, "built", True):  # compiled, never trained: no state to keep
        model.optimizer = wrapped
        return model
    wrapped.build(model.trainable_variables)
    if len(wrapped.variables) != len(saved.variables):
        raise ValueError(f"ringscope load_model: the saved {type(saved).__name__} has "
                         f"{len(saved.variables)} variables, the wrapped one "
                         f"{len(wrapped.variables)}")
    for new, old in zip(wrapped.variables, saved.variables):
        new.assign(old)
    model.optimizer = wrapped
    return model
