"""SyncBatchNormalization (Horovod's hvd.SyncBatchNormalization): a Keras
BatchNormalization whose training-time batch statistics are those of the
global batch, every rank's batch together, instead of this rank's alone.
Each call allreduces (Sum) one small tensor per layer, the per-channel sum,
sum of squares and element count, so ranks may hold batches of different
sizes; the allreduce's gradient carries the cross-rank terms back. At
inference (and with one rank) it is the plain layer. Registered with Keras
(package "ringscope"), so a saved model loads where ringscope.tensorflow is
imported."""

import tensorflow as tf


@tf.keras.utils.register_keras_serializable(package="ringscope")
class SyncBatchNormalization(tf.keras.layers.BatchNormalization):
    """BatchNormalization over the global batch (every rank's, in training).

    Same arguments as ``tf.keras.layers.BatchNormalization``; ``synchronized``
    (tf.distribute's) is not used, the ranks are ringscope's."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.supports_jit = False  # its allreduce runs outside XLA

    def _moments(self, inputs, mask):
        from ringscope.tensorflow import Sum, allreduce, size

        if size() == 1:
            return super()._moments(inputs, mask)
        axes = list(self._reduction_axes)
        if mask is None:
            shape = tf.shape(inputs)
            count = tf.cast(tf.reduce_prod(tf.gather(shape, axes)), inputs.dtype)
            local_sum = tf.reduce_sum(inputs, axis=axes)
            local_squares = tf.reduce_sum(tf.square(inputs), axis=axes)
            local_count = tf.fill(tf.shape(local_sum), count)
        else:
            # As the plain layer: masked-out positions are dropped (not
            # multiplied by 0, which would keep a NaN in padding).
            keep = tf.cast(tf.broadcast_to(tf.expand_dims(mask, -1), tf.shape(inputs)), tf.bool)
            kept = tf.where(keep, inputs, tf.zeros_like(inputs))
            local_sum = tf.reduce_sum(kept, axis=axes)
            local_squares = tf.reduce_sum(tf.square(kept), axis=axes)
            local_count = tf.reduce_sum(tf.cast(keep, inputs.dtype), axis=axes)
        total = allreduce(tf.stack([local_sum, local_squares, local_count]), op=Sum)
        count = tf.maximum(total[2], tf.keras.backend.epsilon())
        mean = total[0] / count
        # E[x^2] - E[x]^2, as Horovod's layer computes it; never below 0.
        variance = tf.maximum(total[1] / count - tf.square(mean), 0.0)
        return mean, variance
