"""SyncBatchNormalization (Horovod's hvd.SyncBatchNormalization): a Keras
BatchNormalization whose training-time batch statistics are those of the
global batch, every rank's batch together, instead of this rank's alone.
Each call allreduces one small tensor per layer holding every rank's
per-channel element count, mean and sum of squared deviations (each rank
fills its own row), combined as a parallel variance (numerically as sound
as the plain layer's two passes), so ranks may hold batches of different
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

    def __init__(self, *args, fused=False, **kwargs):
        # Horovod's takes fused=False (Keras 2's argument); Keras 3 has none.
        if fused:
            raise ValueError("SyncBatchNormalization does not support fused=True")
        super().__init__(*args, **kwargs)
        self.supports_jit = False  # its allreduce runs outside XLA

    def _moments(self, inputs, mask):
        from ringscope.tensorflow import Sum, allreduce, rank, size
        from ringscope.tensorflow.gradient_tape import _counter_free, shape_tag

        if size() == 1:
            return super()._moments(inputs, mask)
        axes = list(self._reduction_axes)
        eps = tf.keras.backend.epsilon()
        # Each rank's count, mean and sum of squared deviations (two passes,
        # as the plain layer), combined across ranks as Chan et al.'s
        # parallel variance: E[x^2] - E[x]^2 (Horovod's formula) loses every
        # digit in float32 when the mean is large next to the spread (mean
        # 1e4, std 1 gives a variance of 0 or 8).
        if mask is None:
            keep = None
            count = tf.cast(tf.reduce_prod(tf.gather(tf.shape(inputs), axes)), inputs.dtype)
            local_sum = tf.reduce_sum(inputs, axis=axes, keepdims=True)
            local_count = tf.fill(tf.shape(local_sum), count)
        else:
            # As the plain layer: masked-out positions are dropped (not
            # multiplied by 0, which would keep a NaN in padding).
            keep = tf.cast(tf.broadcast_to(tf.expand_dims(mask, -1), tf.shape(inputs)), tf.bool)
            local_sum = tf.reduce_sum(tf.where(keep, inputs, tf.zeros_like(inputs)), axis=axes,
                                      keepdims=True)
            local_count = tf.reduce_sum(tf.cast(keep, inputs.dtype), axis=axes, keepdims=True)
        local_mean = local_sum / tf.maximum(local_count, eps)
        deviation = inputs - local_mean
        if keep is not None:
            deviation = tf.where(keep, deviation, tf.zeros_like(deviation))
        local_m2 = tf.reduce_sum(tf.square(deviation), axis=axes, keepdims=True)
        # One collective each way: this rank's [count, mean, m2] in its own
        # row of an otherwise zero [size, 3, ...] tensor, summed (the Sum's
        # gradient is one allreduce too, and a joined rank's zeros are a
        # count of 0: no rows). An allgather would need a second collective
        # in its gradient, and row counts that join changes.
        local = tf.stack([local_count, local_mean, local_m2])
        row = tf.reshape(tf.one_hot(rank(), size(), dtype=local.dtype),
                         [size()] + [1] * len(local.shape))
        # Named without Keras's per-process layer counter (the graph node's
        # name would carry it): a rank that built one more layer would
        # otherwise wait on names the others never send.
        # Layers of one width share the name (the same shape, so the
        # response cache keeps hitting; in one graph they run in turn).
        stats = allreduce(row * tf.expand_dims(local, 0), op=Sum,
                          name=f"{_counter_free(self.name)}/moments:{shape_tag(local.shape)}")
        counts, means, m2s = stats[:, 0], stats[:, 1], stats[:, 2]
        total = tf.maximum(tf.reduce_sum(counts, axis=0), eps)
        mean = tf.reduce_sum(counts * means, axis=0) / total
        m2 = tf.reduce_sum(m2s, axis=0) + tf.reduce_sum(counts * tf.square(means - mean), axis=0)
        return tf.squeeze(mean, axis=axes), tf.squeeze(m2 / total, axis=axes)
