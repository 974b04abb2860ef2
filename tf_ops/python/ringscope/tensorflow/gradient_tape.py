"""DistributedGradientTape: a GradientTape whose gradients are averaged
(allreduced) over all ranks, named after their variables."""

import tensorflow as tf


def _variable_label(var, index):
    label = getattr(var, "path", None) or getattr(var, "name", None) or "var"
    return f"{index}/{label}"


def allreduce_gradients(grads, variables, op, compression, prescale_factor, postscale_factor,
                        prefix):
    from ringscope.tensorflow import allreduce  # late import: avoids a cycle

    out = []
    for i, (g, v) in enumerate(zip(grads, variables)):
        if g is None:
            out.append(None)
            continue
        out.append(allreduce(g, op=op, compression=compression, prescale_factor=prescale_factor,
                             postscale_factor=postscale_factor,
                             name=f"{prefix}/{_variable_label(v, i)}"))
    return out


class DistributedGradientTape(tf.GradientTape):
    """Wraps ``tape``; ``gradient()`` returns gradients averaged over all ranks."""

    def __init__(self, gradtape, device_dense="", device_sparse="", compression=None, op=None,
                 prescale_factor=1.0, postscale_factor=1.0):
        from ringscope.tensorflow import Average, Compression

        self.__dict__.update(gradtape.__dict__)  # share the recorded tape
        self._ringscope_op = Average if op is None else op
        self._ringscope_compression = compression or Compression.none
        self._ringscope_scales = (prescale_factor, postscale_factor)

    def gradient(self, target, sources, output_gradients=None, **kwargs):
        grads = super().gradient(target, sources, output_gradients, **kwargs)
        flat_sources = tf.nest.flatten(sources)
        flat_grads = tf.nest.flatten(grads)
        reduced = allreduce_gradients(flat_grads, flat_sources, self._ringscope_op,
                                      self._ringscope_compression, *self._ringscope_scales,
                                      prefix="DistributedGradientTape")
        return tf.nest.pack_sequence_as(grads, reduced)
