"""DistributedGradientTape: a GradientTape whose gradients are averaged
(allreduced) over all ranks, named after their variables; and the gradient
reduction it shares with DistributedOptimizer (Horovod's arguments)."""

import tensorflow as tf


def _variable_label(var, index):
    label = getattr(var, "path", None) or getattr(var, "name", None) or "var"
    return f"{index}/{label}"


class GradientReduction:
    """How gradients are reduced, from Horovod's arguments.

    gradient_predivide_factor f (Average only) divides by f before the sum
    and by size/f after it, as Horovod does (also for IndexedSlices, which
    are allgathered); num_groups and groups are accepted and need nothing:
    the runtime fuses whatever is ready in a cycle."""

    def __init__(self, op=None, compression=None, sparse_as_dense=False,
                 gradient_predivide_factor=1.0, prescale_factor=1.0, postscale_factor=1.0,
                 num_groups=0, groups=None):
        from ringscope.tensorflow import Average, Compression

        self.op = Average if op is None else op
        self.compression = compression or Compression.none
        self.sparse_as_dense = bool(sparse_as_dense)
        self.predivide = float(gradient_predivide_factor)
        if self.predivide <= 0:
            raise ValueError("gradient_predivide_factor must be > 0, got "
                             f"{gradient_predivide_factor!r}")
        if self.predivide != 1.0 and self.op != Average:
            raise ValueError("gradient_predivide_factor is supported with op=Average only")
        if not isinstance(num_groups, int) or num_groups < 0:
            raise ValueError(f"num_groups must be an int >= 0, got {num_groups!r}")
        if groups is not None and not isinstance(groups, (int, list, tuple)):
            raise ValueError(f"groups must be an int or a list of variable lists, got {groups!r}")
        self.scales = (float(prescale_factor), float(postscale_factor))

    def reduce(self, grads, variables, prefix):
        from ringscope.tensorflow import allreduce

        pre, post = self.scales
        pre, post = pre / self.predivide, post * self.predivide  # Average divides by size
        out = []
        for i, (g, v) in enumerate(zip(grads, variables)):
            if g is None:
                out.append(None)
                continue
            if self.sparse_as_dense and isinstance(g, tf.IndexedSlices):
                g = tf.convert_to_tensor(g)
            out.append(allreduce(g, op=self.op, compression=self.compression, prescale_factor=pre,
                                 postscale_factor=post, name=f"{prefix}/{_variable_label(v, i)}"))
        return out


class DistributedGradientTape(tf.GradientTape):
    """Wraps ``tape``; ``gradient()`` returns gradients averaged over all ranks.

    Arguments as Horovod's (device_* are accepted; the ops run on CPU), plus
    prescale_factor and postscale_factor."""

    def __init__(self, gradtape, device_dense="", device_sparse="", compression=None,
                 sparse_as_dense=False, op=None, gradient_predivide_factor=1.0, num_groups=0,
                 groups=None, prescale_factor=1.0, postscale_factor=1.0):
        del device_dense, device_sparse
        self.__dict__.update(gradtape.__dict__)  # share the recorded tape
        self._ringscope_reduction = GradientReduction(
            op, compression, sparse_as_dense, gradient_predivide_factor, prescale_factor,
            postscale_factor, num_groups, groups)

    def gradient(self, target, sources, output_gradients=None, **kwargs):
        grads = super().gradient(target, sources, output_gradients, **kwargs)
        flat_sources = tf.nest.flatten(sources)
        flat_grads = tf.nest.flatten(grads)
        reduced = self._ringscope_reduction.reduce(flat_grads, flat_sources,
                                                   prefix="DistributedGradientTape")
        return tf.nest.pack_sequence_as(grads, reduced)
