"""Local gradient aggregation (Horovod's backward_passes_per_step): the
gradients of N backward passes are summed on each rank and allreduced once,
on the N-th pass, so a rank trains on N micro-batches for one allreduce.

Horovod's semantics: every pass adds its gradients to a sum kept per
variable and counts itself; the N-th pass allreduces the sums (divided by N
with average_aggregated_gradients), returns them, and clears the sums and
the count; the other passes return the sums so far. The count is a
variable, and the choice is a tf.cond on it, so the same code runs eagerly
and in a tf.function (model.fit), and every rank takes the same branch: all
of them count the same passes.

Sparse gradients (IndexedSlices) are added into a dense sum (a scatter-add),
so they need not be sparse_as_dense as Horovod requires; the sum is
allreduced dense."""

import weakref

import tensorflow as tf


def check_passes(backward_passes_per_step):
    """A ValueError unless it is an int >= 1."""
    if not isinstance(backward_passes_per_step, int) or backward_passes_per_step < 1:
        raise ValueError("backward_passes_per_step must be an int >= 1, got "
                         f"{backward_passes_per_step!r}")


class LocalAggregation:
    """The per-variable sums and the pass count of one optimizer, or of the
    tapes of one list of sources. ``counter`` (a tf.Variable, passes since
    the last allreduce) is read by Horovod's tests as
    ``optimizer._agg_helper.counter``."""

    def __init__(self, backward_passes_per_step, average_aggregated_gradients):
        check_passes(backward_passes_per_step)
        self.passes = backward_passes_per_step
        self.average = bool(average_aggregated_gradients)
        with tf.init_scope():  # made in a tf.function: lifted out of the graph
            self.counter = tf.Variable(0, dtype=tf.int64, trainable=False,
                                       name="ringscope_aggregation_counter")
        self._sums = {}  # id(variable) -> (weak reference to it, its sum)

    def build(self, grads, variables):
        """Creates the sum of every variable with a gradient that has none
        (in the eager context, also from a tf.function or a tf.cond)."""
        for g, v in zip(grads, variables):
            if g is None:
                continue
            entry = self._sums.get(id(v))
            if entry is not None and entry[0]() is v:
                continue
            with tf.init_scope():  # in a tf.function: lifted out of the graph
                total = tf.Variable(tf.zeros(v.shape, dtype=g.dtype), trainable=False,
                                    name="ringscope_aggregated_gradient")
            self._sums[id(v)] = (weakref.ref(v), total)

    def aggregate(self, grads, variables, reduce):
        """Adds ``grads`` (None stays None) to the sums and counts the pass;
        on the N-th pass returns ``reduce(sums)`` (the allreduce, a list in
        and out) divided by N when averaging, and clears the sums; else the
        sums so far."""
        grads, variables = list(grads), list(variables)
        self.build(grads, variables)
        present = [i for i, g in enumerate(grads) if g is not None]
        sums = [self._sums[id(variables[i])][1] for i in present]
        for i, total in zip(present, sums):
            g = grads[i]
            if isinstance(g, tf.IndexedSlices):
                total.scatter_add(tf.IndexedSlices(tf.cast(g.values, total.dtype), g.indices,
                                                   g.dense_shape))
            else:
                total.assign_add(tf.cast(g, total.dtype))
        self.counter.assign_add(1)

        def reduce_now():
            out = reduce([total.read_value() for total in sums], [variables[i] for i in present])
            if self.average:
                out = [o / tf.cast(self.passes, o.dtype) for o in out]
            # Cleared after the allreduce has read the sums (in a
            # tf.function, program order on each variable orders the reads
            # before the assigns too).
            with tf.control_dependencies(out):
                for total in sums:
                    total.assign(tf.zeros_like(total))
                self.counter.assign(0)
            return out

        def so_far():
            return [total.read_value() for total in sums]

        if present:
            values = tf.cond(tf.equal(self.counter, self.passes), reduce_now, so_far)
        else:  # nothing to sum: still counted, and cleared on the N-th pass
            self.counter.assign(tf.math.floormod(self.counter, self.passes))
            values = []
        out = [None] * len(grads)
        for i, value in zip(present, values):
            out[i] = value
        return out

    def is_update_step(self):
        """True (a bool tensor) right after the N-th pass's allreduce."""
        return tf.equal(self.counter, 0)


_by_sources = {}  # (ids of the sources, N, average) -> (weak references, LocalAggregation)
_KEPT = 16


def aggregation_for_sources(sources, backward_passes_per_step, average_aggregated_gradients):
    """The LocalAggregation of a tape's list of sources: a training loop
    makes a new tape every pass, so the sums live here, keyed by the
    sources (checked by weak reference: a reused id is not taken for the old
    variable)."""
    key = (tuple(map(id, sources)), backward_passes_per_step, bool(average_aggregated_gradients))
    hit = _by_sources.get(key)
    if hit is not None and all(ref() is s for ref, s in zip(hit[0], sources)):
        return hit[1]
    aggregation = LocalAggregation(backward_passes_per_step, average_aggregated_gradients)
    if len(_by_sources) >= _KEPT:
        del _by_sources[next(iter(_by_sources))]
    _by_sources[key] = ([weakref.ref(s) for s in sources], aggregation)
    return aggregation
