"""DistributedGradientTape: a GradientTape whose gradients are averaged
(allreduced) over all ranks, named after their variables, except those of
the variables registered as local (PartialDistributedGradientTape's
local_layers); and the gradient reduction it shares with
DistributedOptimizer (Horovod's arguments)."""

import re
import weakref

import tensorflow as tf

from ringscope.tensorflow.aggregation import aggregation_for_sources, check_passes


def _variable_label(var, index):
    """The variable's place, its layer/variable name and shape
    ("3/dense/kernel:784x128", also for a layer Keras numbered "dense_3").
    Only the last two parts of its path: a Sequential model's variables are
    "sequential/dense/kernel" where it was built and "dense/kernel" where it
    was loaded from a file (Horovod's resume pattern loads on rank 0 only),
    and a name that differs across ranks is never matched."""
    path = getattr(var, "path", None) or getattr(var, "name", None) or "var"
    label = "/".join(_counter_free(part) for part in path.split("/")[-2:])
    return f"{index}/{label}:{shape_tag(getattr(var, 'shape', None))}"


_labels = {}  # (prefix, variable ids) -> (weak references, names); at most _LABELS_KEPT
_LABELS_KEPT = 64


def _gradient_names(prefix, variables):
    """f"{prefix}/{_variable_label(v, i)}" for every variable, computed once
    per list of variables (an eager loop asks every step; 200 labels cost
    ~2 ms there). The cache holds weak references, so an id reused by a new
    variable is never taken for the old one."""
    key = (prefix, tuple(map(id, variables)))
    hit = _labels.get(key)
    if hit is not None and all(ref() is v for ref, v in zip(hit[0], variables)):
        return hit[1]
    names = [f"{prefix}/{_variable_label(v, i)}" for i, v in enumerate(variables)]
    try:
        refs = [weakref.ref(v) for v in variables]
    except TypeError:  # not weakly referable: not cached
        return names
    if len(_labels) >= _LABELS_KEPT:
        del _labels[next(iter(_labels))]
    _labels[key] = (refs, names)
    return names


def shape_tag(shape):
    """"3x2" for a [3, 2] shape ("?" for an unknown one): with the counter
    gone, two models' "0/dense/kernel" (a GAN's two tapes) differ by shape,
    so one name never alternates between shapes (each change would miss
    the response cache)."""
    if shape is None:
        return "?"
    dims = list(shape)
    return "x".join("?" if d is None else str(int(d)) for d in dims) or "scalar"


def _counter_free(part):
    """A layer name without Keras's per-process counter ("dense_3" ->
    "dense"): a rank that built one more unnamed layer (a probe model on
    rank 0 only) numbers every later layer differently, and names that
    differ across ranks are never matched. The index keeps names unique."""
    return re.sub(r"_[0-9]+$", "", part)


class GradientReduction:
    """How gradients are reduced, from Horovod's arguments.

    gradient_predivide_factor f (Average only) divides by f before the sum
    and by size/f after it, as Horovod does (also for IndexedSlices, which
    are allgathered); num_groups and groups are accepted and need nothing:
    the runtime fuses whatever is ready in a cycle."""

    def __init__(self, op=None, compression=None, sparse_as_dense=False,
                 gradient_predivide_factor=1.0, prescale_factor=1.0, postscale_factor=1.0,
                 num_groups=0, groups=None, process_set=None):
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
        self.process_set = process_set  # None: every rank

    def reduce(self, grads, variables, prefix):
        """The allreduced gradients (None stays None), handed to the runtime
        together: one grouped op per dtype (IndexedSlices allgathered), in a
        tf.function and eagerly, so the runtime fuses them either way."""
        from ringscope.tensorflow.collectives import _check_sparse, reduce_group
        from ringscope.tensorflow.process_sets import process_set_id_of

        psid = process_set_id_of(self.process_set)
        if psid and not self.process_set.included():
            return list(grads)  # as Horovod's: a rank outside the set keeps its own
        pre, post = self.scales
        pre, post = pre / self.predivide, post * self.predivide  # Average divides by size
        present = [(g, n) for g, n in zip(grads, _gradient_names(prefix, variables))
                   if g is not None]
        tensors = []
        for g, _ in present:
            if isinstance(g, tf.IndexedSlices):
                if self.sparse_as_dense:
                    g = tf.convert_to_tensor(g)
                else:  # the factors scale the gathered values
                    _check_sparse(self.op, 1.0, 1.0)
            tensors.append(g)
        # Keyed by configuration: an eager loop makes a new tape each step,
        # and the first step's function (where one is needed) serves the rest.
        reduced = iter(reduce_group(tensors, [n for _, n in present], self.op, self.compression,
                                    pre, post, ("reduce", self.sparse_as_dense), psid))
        return [None if g is None else next(reduced) for g in grads]

    def reduce_with_local(self, grads, variables, prefix, local_ids, scale_local):
        """reduce() for the variables not in ``local_ids`` (their id()); the
        local ones keep their own gradient, divided by size() when
        ``scale_local`` (Horovod's scale_local_gradients; the process set's
        size with one)."""
        from ringscope.tensorflow import size
        from ringscope.tensorflow.process_sets import process_set_id_of

        local = [id(v) in local_ids for v in variables]
        reduced = iter(self.reduce([g for g, lo in zip(grads, local) if not lo],
                                   [v for v, lo in zip(variables, local) if not lo], prefix))
        scale = 1.0
        if scale_local and any(local):  # the set's size; reduce() checked the set
            scale = 1.0 / (size() if not process_set_id_of(self.process_set)
                           else self.process_set.size())
        out = []
        for g, lo in zip(grads, local):
            if not lo:
                out.append(next(reduced))
            elif g is None or scale == 1.0:
                out.append(g)
            elif isinstance(g, tf.IndexedSlices):
                out.append(tf.IndexedSlices(g.values * scale, g.indices, g.dense_shape))
            else:
                out.append(g * scale)
        return out


def local_layer_variables(local_layers):
    """The trainable variables of ``local_layers`` (a Keras layer or a list)."""
    if local_layers is None:
        return []
    if isinstance(local_layers, tf.keras.layers.Layer):
        local_layers = [local_layers]
    if not all(isinstance(layer, tf.keras.layers.Layer) for layer in local_layers):
        raise ValueError("local_layers must be Keras layers (tf.keras.layers.Layer)")
    return [var for layer in local_layers for var in layer.trainable_weights]


class DistributedGradientTape(tf.GradientTape):
    """Wraps ``tape``; ``gradient()`` returns gradients averaged over all ranks.

    Arguments as Horovod's (device_* are accepted; the ops run on CPU;
    ``process_set`` averages over its ranks only), plus
    prescale_factor and postscale_factor, and backward_passes_per_step and
    average_aggregated_gradients as DistributedOptimizer's: with N > 1 the
    gradients of N passes (N tapes over the same sources) are summed on
    each rank and allreduced on the N-th, whose gradient() returns them;
    the others return the sums so far, not to be applied. Apply every N-th
    pass's, as Horovod's PyTorch optimizer steps every N-th backward."""

    def __init__(self, gradtape, device_dense="", device_sparse="", compression=None,
                 sparse_as_dense=False, op=None, gradient_predivide_factor=1.0, num_groups=0,
                 groups=None, prescale_factor=1.0, postscale_factor=1.0,
                 scale_local_gradients=True, backward_passes_per_step=1,
                 average_aggregated_gradients=False, process_set=None):
        del device_dense, device_sparse
        check_passes(backward_passes_per_step)
        self._ringscope_passes = (backward_passes_per_step, bool(average_aggregated_gradients))
        self.__dict__.update(gradtape.__dict__)  # share the recorded tape
        self._ringscope_reduction = GradientReduction(
            op, compression, sparse_as_dense, gradient_predivide_factor, prescale_factor,
            postscale_factor, num_groups, groups, process_set)
        self._ringscope_local = set()  # id() of the local sources (kept alive by their layers)
        self._ringscope_scale_local = bool(scale_local_gradients)

    def register_local_source(self, source):
        """The gradient of ``source`` stays on this rank (not allreduced);
        with scale_local_gradients it is divided by size(), as Horovod does,
        so that it is on the scale of the averaged ones."""
        self._ringscope_local.add(id(source))  # Keras 3 variables have no ref()

    def gradient(self, target, sources, output_gradients=None, use_generic_names=False,
                 **kwargs):
        del use_generic_names  # Horovod's; names here come from the variables
        grads = super().gradient(target, sources, output_gradients, **kwargs)
        flat_sources = tf.nest.flatten(sources)

        def reduce(values, variables):
            return self._ringscope_reduction.reduce_with_local(
                list(values), list(variables), "DistributedGradientTape", self._ringscope_local,
                self._ringscope_scale_local)

        passes, average = self._ringscope_passes
        if passes == 1:
            out = reduce(tf.nest.flatten(grads), flat_sources)
        else:
            out = aggregation_for_sources(flat_sources, passes, average).aggregate(
                tf.nest.flatten(grads), flat_sources, reduce)
        return tf.nest.pack_sequence_as(grads, out)

    def get_local_and_global_gradients(self, target, sources, output_gradients=None,
                                       use_generic_names=False):
        """Horovod's: gradient(), returned as two lists of (source, gradient)
        pairs in the order of ``sources``: the local sources'
        (register_local_source, local_layers: not allreduced, scaled as in
        gradient()) and the others' (allreduced)."""
        grads = self.gradient(target, sources, output_gradients, use_generic_names)
        local, distributed = [], []
        for source, grad in zip(tf.nest.flatten(sources), tf.nest.flatten(grads)):
            (local if id(source) in self._ringscope_local else distributed).append((source, grad))
        return local, distributed


def PartialDistributedGradientTape(gradtape, device_dense="", device_sparse="",
                                   compression=None, sparse_as_dense=False, op=None,
                                   gradient_predivide_factor=1.0, num_groups=0, groups=None,
                                   local_layers=None, scale_local_gradients=True,
                                   backward_passes_per_step=1, average_aggregated_gradients=False,
                                   process_set=None):
    """Horovod's PartialDistributedGradientTape: a DistributedGradientTape
    that leaves the gradients of ``local_layers`` (a Keras layer or a list
    of them: an expert of a mixture, a rank's own head) on this rank,
    divided by size() when scale_local_gradients is on."""
    local_vars = local_layer_variables(local_layers)
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression,
                                   sparse_as_dense, op, gradient_predivide_factor, num_groups,
                                   groups, scale_local_gradients=scale_local_gradients,
                                   backward_passes_per_step=backward_passes_per_step,
                                   average_aggregated_gradients=average_aggregated_gradients,
                                   process_set=process_set)
    for var in local_vars:
        tape.register_local_source(var)
    return tape
