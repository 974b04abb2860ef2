"""Horovod's semantics, under mpirun (np=2 and 3): the gradients of
allreduce (Min/Max/Product), allgather, broadcast and reducescatter as Horovod's
mpi_ops.py defines them (the default RINGSCOPE_COLLECTIVE_GRADIENTS=horovod),
eagerly, in a tf.function and in a TensorFlow 1 graph run by a session
(where a gradient one rank can prune would leave the others waiting);
averages of integer IndexedSlices; Horovod's exception classes (a mismatch
is FailedPreconditionError, a rank's own wrong argument
InvalidArgumentError, sparse misuse NotImplementedError); alltoall's return
value; DistributedGradientTape.get_local_and_global_gradients; the object
collectives in a TensorFlow 1 graph. The other convention ("sum") is tested
by test_tf_alltoall_gradients.py."""

import keras

from harness import assert_close, finish, hvd, np, test, tf

hvd.init()
R, N = hvd.rank(), hvd.size()
WEIGHT = float(R + 1)  # each rank's loss weighs the output by its rank + 1
WEIGHTS = N * (N + 1) / 2  # their sum over ranks


def grad_of(fn, x):
    x = tf.Variable(x)
    with tf.GradientTape() as tape:
        loss = fn(x)
    return tape.gradient(loss, x).numpy()


def owners(rows):
    """The rank that gets each row of a reducescatter of ``rows`` rows."""
    return np.concatenate([[r] * ((rows // N) + (1 if r < rows % N else 0)) for r in range(N)])


@test
def allgather_gradient_is_averaged_eagerly_and_in_tf_function():
    x = np.ones([R + 1, 2], np.float32)  # rows differ per rank
    g = grad_of(lambda v: tf.reduce_sum(hvd.allgather(v, name="hs/gather") * WEIGHT), x)
    assert_close(g, np.full_like(x, WEIGHTS / N), tf.float32, "allgather eagerly")
    var = tf.Variable(x)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            outs = hvd.grouped_allgather([var, 2 * var], name="hs/grouped_gather")
            loss = tf.reduce_sum(outs[0] * WEIGHT) + tf.reduce_sum(outs[1] * WEIGHT)
        return tape.gradient(loss, var)

    assert_close(step().numpy(), np.full_like(x, 3 * WEIGHTS / N), tf.float32,
                 "grouped allgather in tf.function")


@test
def broadcast_gradient_is_averaged_to_the_root():
    x = np.ones([3], np.float32)
    for root in range(N):
        g = grad_of(lambda v: tf.reduce_sum(hvd.broadcast(v, root_rank=root, name=f"hs/b{root}")
                                            * WEIGHT), x)
        want = WEIGHTS / N if R == root else 0.0
        assert_close(g, np.full_like(x, want), tf.float32, f"broadcast from {root}")


@test
def reducescatter_gradient_is_scaled_by_size_for_sum():
    rows = 2 * N + 1
    x = np.ones([rows, 2], np.float32)
    owner = owners(rows)
    for op, scale in ((hvd.Sum, N), (hvd.Average, 1.0)):
        g = grad_of(lambda v: tf.reduce_sum(
            hvd.reducescatter(v, op=op, name=f"hs/rs{op}") * WEIGHT), x)
        assert_close(g, np.repeat(((owner + 1) * scale)[:, None], 2, axis=1), tf.float32,
                     f"reducescatter op {op}")
    g = grad_of(lambda v: tf.reduce_sum(hvd.reducescatter(
        v, op=hvd.Sum, prescale_factor=3.0, postscale_factor=0.5, name="hs/rs_scaled")
        * WEIGHT), x)
    assert_close(g, np.repeat((1.5 * N * (owner + 1))[:, None], 2, axis=1), tf.float32,
                 "reducescatter with scale factors")
    var = tf.Variable(x)
    with tf.GradientTape() as tape:
        outs = hvd.grouped_reducescatter([var, var], op=hvd.Sum, name="hs/grouped_rs")
        loss = tf.reduce_sum(outs[0] * WEIGHT) + tf.reduce_sum(outs[1])
    g = tape.gradient(loss, var).numpy()
    assert_close(g, np.repeat((N * (owner + 2))[:, None], 2, axis=1), tf.float32,
                 "grouped reducescatter")


@test
def allreduce_min_max_gradients_are_reduced_with_the_same_op():
    x = np.arange(4, dtype=np.float32) + R
    g = grad_of(lambda v: tf.reduce_sum(hvd.allreduce(v, op=hvd.Max, name="hs/max") * WEIGHT), x)
    assert_close(g, np.full_like(x, N), tf.float32, "Max: the largest upstream gradient")
    g = grad_of(lambda v: tf.reduce_sum(hvd.allreduce(v, op=hvd.Min, prescale_factor=2.0,
                                                      name="hs/min") * WEIGHT), x)
    assert_close(g, np.full_like(x, 2.0), tf.float32, "Min with a prescale")
    g = grad_of(lambda v: tf.reduce_sum(hvd.allreduce(v, op=hvd.Sum, name="hs/sum") * WEIGHT), x)
    assert_close(g, np.full_like(x, WEIGHTS), tf.float32, "Sum")
    # Product: the upstream gradients (every rank's WEIGHT) multiplied
    g = grad_of(lambda v: tf.reduce_sum(hvd.allreduce(v, op=hvd.Product, name="hs/prod") * WEIGHT),
                x)
    assert_close(g, np.full_like(x, float(np.prod(np.arange(1, N + 1)))), tf.float32, "Product")


@test
def graph_mode_gradients_run_on_every_rank():
    """In a TensorFlow 1 graph only what a fetch needs runs: a gradient that
    did not depend on its allreduce on some rank would leave the others
    waiting in it."""
    with tf.Graph().as_default():
        x = tf.compat.v1.placeholder(tf.float32, [3])
        bcast = hvd.broadcast(x, root_rank=N - 1)
        gathered = hvd.allgather(tf.reshape(x, [1, 3]))
        loss = tf.reduce_sum(bcast * WEIGHT) + tf.reduce_sum(gathered * WEIGHT)
        grad = tf.gradients(loss, x)[0]
        with tf.compat.v1.Session() as sess:
            for _ in range(2):
                got = sess.run(grad, feed_dict={x: np.ones(3, np.float32)})
    want = WEIGHTS / N + (WEIGHTS / N if R == N - 1 else 0.0)
    assert_close(got, np.full(3, want), tf.float32, "graph mode")


@test
def integer_sparse_average_divides_as_horovod():
    values = tf.constant([[2 * (R + 1), 3]], tf.int32)
    sparse = tf.IndexedSlices(values, tf.constant([R]), tf.constant([N, 2]))
    avg = hvd.allreduce(sparse, op=hvd.Average, name="hs/sparse_int")
    assert avg.values.dtype == tf.float64, avg.values.dtype  # int32 / int32, as TensorFlow's /
    assert avg.indices.numpy().tolist() == list(range(N))
    assert_close(avg.values.numpy(), [[2 * (r + 1) / N, 3 / N] for r in range(N)], tf.float64,
                 "integer average")
    summed = hvd.allreduce(sparse, op=hvd.Sum, name="hs/sparse_sum")
    assert summed.values.dtype == tf.int32
    # A group runs as a tf.function eagerly, where TensorFlow would turn a
    # division by a constant into a multiplication by its reciprocal (one
    # rounding more, visible at np=3): the values are divided as x / N.
    x = np.random.default_rng(5).uniform(-100, 100, size=[2, 64])
    group = hvd.grouped_allreduce([tf.IndexedSlices(tf.constant(x), tf.constant([R, R]))] * 2,
                                  op=hvd.Average, name="hs/sparse_group")
    for out in group:
        assert (out.values.numpy() == np.concatenate([x / N] * N)).all(), "not x / N exactly"


@test
def sparse_misuse_raises_not_implemented_before_submitting():
    sparse = tf.IndexedSlices(tf.ones([1, 3]), tf.constant([R]), tf.constant([N, 3]))
    for op in (hvd.Min, hvd.Max):
        try:
            hvd.allreduce(sparse, op=op)
            raise AssertionError(f"op {op} on IndexedSlices was accepted")
        except NotImplementedError as e:
            assert "Sum and Average" in str(e), e
    for kwargs in ({"prescale_factor": 0.5}, {"postscale_factor": 0.5}):
        try:
            hvd.allreduce(sparse, op=hvd.Sum, **kwargs)
            raise AssertionError(f"{kwargs} on IndexedSlices was accepted")
        except NotImplementedError as e:
            assert "IndexedSlices" in str(e), e
    try:
        hvd.grouped_allreduce([tf.ones([2]), sparse], op=hvd.Max, name="hs/grouped_bad")
        raise AssertionError("grouped Max with IndexedSlices was accepted")
    except NotImplementedError:
        pass
    # nothing was submitted: the next collective meets its peers
    assert float(hvd.allreduce(tf.ones([1]), op=hvd.Sum, name="hs/after_sparse")[0]) == N


@test
def error_classes_are_horovods():
    if N == 1:
        return
    for kwargs, what in (({"shape": [R + 1]}, "shape"), ({"dtype": tf.int32 if R else tf.float32},
                                                         "dtype")):
        x = tf.ones(kwargs.get("shape", [2]), kwargs.get("dtype", tf.float32))
        try:
            hvd.allreduce(x, name=f"hs/mismatch_{what}")
            raise AssertionError(f"a {what} mismatch succeeded")
        except tf.errors.FailedPreconditionError as e:
            assert f"Mismatched {what} for tensor 'hs/mismatch_{what}'" in e.message, e.message
    try:  # every rank's own argument is wrong: InvalidArgumentError
        hvd.alltoall(tf.ones([N + 1]), name="hs/a2a_equal")
        raise AssertionError("an alltoall that does not split equally succeeded")
    except tf.errors.InvalidArgumentError as e:
        assert "does not divide" in e.message, e.message
    try:
        hvd.alltoall(tf.ones([N]), splits=[2] * N, name="hs/a2a_splits")
        raise AssertionError("splits that do not add up succeeded")
    except tf.errors.InvalidArgumentError as e:
        assert "add up" in e.message, e.message
    try:
        hvd.reducescatter(tf.constant(1.0), name="hs/rs_scalar")
        raise AssertionError("a scalar reducescatter succeeded")
    except tf.errors.InvalidArgumentError as e:
        assert "at least one dimension" in e.message, e.message


@test
def alltoall_returns_the_splits_only_when_given():
    out = hvd.alltoall(tf.fill([N, 2], float(R)), name="hs/a2a")
    assert isinstance(out, tf.Tensor), type(out)
    assert out.numpy()[:, 0].tolist() == [float(r) for r in range(N)]
    out, received = hvd.alltoall(tf.fill([N, 2], float(R)), splits=[1] * N, name="hs/a2a_s")
    assert received.numpy().tolist() == [1] * N


@test
def local_and_global_gradients_of_a_partial_tape():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), keras.layers.Dense(1)])
    model.set_weights([np.full(w.shape, R + 1.0, np.float32) for w in model.get_weights()])
    x = np.ones([1, 3], np.float32)
    with tf.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(model(x))
    local_grads = [g.numpy() for g in tape.gradient(loss, model.layers[0].trainable_weights)]
    tape = hvd.PartialDistributedGradientTape(tape, local_layers=model.layers[0])
    local, distributed = tape.get_local_and_global_gradients(loss, model.trainable_weights)
    local_ids = {id(v) for v in model.layers[0].trainable_weights}
    assert [id(v) for v, _ in local] == [id(v) for v in model.layers[0].trainable_weights]
    assert [id(v) for v, _ in distributed] == [id(v) for v in model.layers[1].trainable_weights]
    assert not local_ids & {id(v) for v, _ in distributed}
    for (_, g), own in zip(local, local_grads):  # not reduced, divided by size()
        assert_close(g.numpy(), own / N, tf.float32, "local gradient")
    # d loss / d kernel1 = layer 0's output, 3 (r + 1) + (r + 1) on rank r, averaged
    kernel_grad = distributed[0][1].numpy()
    want = np.full([2, 1], np.mean([4.0 * (r + 1) for r in range(N)]))
    assert_close(kernel_grad, want, tf.float32, "averaged gradient")


@test
def optimizer_compute_gradients_reduces_once():
    """Horovod's DistributedOptimizer._compute_gradients: reduced gradients
    (a local variable's divided by size()), which apply_gradients applies
    as they are."""
    shared, local = tf.Variable([1.0, 1.0]), tf.Variable([1.0])
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0))
    opt.register_local_var(local)
    pairs = opt._compute_gradients(lambda: tf.reduce_sum(shared * WEIGHT) + local[0] * WEIGHT,
                                   [shared, local])
    assert_close(pairs[0][0].numpy(), [WEIGHTS / N] * 2, tf.float32, "averaged")
    assert_close(pairs[1][0].numpy(), [WEIGHT / N], tf.float32, "local, divided by size")
    opt.apply_gradients(pairs)
    assert_close(shared.numpy(), [1 - WEIGHTS / N] * 2, tf.float32, "applied once")
    assert_close(local.numpy(), [1 - WEIGHT / N], tf.float32, "local applied once")


@test
def object_collectives_in_a_tf1_graph_and_refused_in_tf_function():
    with tf.Graph().as_default(), tf.compat.v1.Session():
        got = hvd.broadcast_object({"from": R}, root_rank=N - 1)
        every = hvd.allgather_object(("rank", R))
        hvd.barrier()
    assert got == {"from": N - 1}, got
    assert every == [("rank", r) for r in range(N)], every

    @tf.function
    def inside():
        return hvd.broadcast_object(1)

    try:
        inside()
        raise AssertionError("broadcast_object in a tf.function was accepted")
    except RuntimeError as e:
        assert "not inside tf.function" in str(e), e


finish()
