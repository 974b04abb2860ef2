"""alltoall and the gradients of every collective, under mpirun (np=2 and 3):
alltoall of every dtype with uneven and empty splits and the received splits,
the equal split, inside tf.function, wrong splits raised on every rank with
the rank named; then, with the loss summed over ranks, the gradient through
allreduce (Sum, Average with scale factors, Max, Min, Product), allgather (rows differ per
rank), broadcast, reducescatter and alltoall, eagerly and in a tf.function."""

from harness import assert_close, finish, hvd, np, test, tf

hvd.init()
R, N = hvd.rank(), hvd.size()
DTYPES = [tf.uint8, tf.int32, tf.int64, tf.float16, tf.bfloat16, tf.float32, tf.float64]


def splits_of(rank, salt):
    return [(rank * 3 + d * 5 + salt) % 4 for d in range(N)]


def rows_of(rank, salt, width):
    """Rank `rank`'s input: row i is rank * 100 + i, repeated `width` times."""
    rows = sum(splits_of(rank, salt))
    return np.repeat((rank * 100 + np.arange(rows))[:, None], width, axis=1).astype(np.float64)


def expected_alltoall(salt, width):
    out = []
    for s in range(N):
        first = sum(splits_of(s, salt)[:R])
        out.append(rows_of(s, salt, width)[first:first + splits_of(s, salt)[R]])
    return np.concatenate(out), [splits_of(s, salt)[R] for s in range(N)]


@test
def alltoall_every_dtype_with_uneven_and_empty_splits():
    for salt, dtype in enumerate(DTYPES):
        x = tf.constant(rows_of(R, salt, 2), dtype=dtype)
        out, received = hvd.alltoall(x, splits=splits_of(R, salt), name=f"a2a/{salt}")
        want, want_received = expected_alltoall(salt, 2)
        assert out.dtype == dtype
        assert_close(out.numpy(), want, dtype, f"alltoall {dtype.name}")
        assert received.dtype == tf.int32 and list(received.numpy()) == want_received, received


@test
def alltoall_equal_split_and_in_tf_function():
    x = tf.reshape(tf.range(2 * N * 3, dtype=tf.float32), [2 * N, 3]) + 1000 * R
    out = hvd.alltoall(x)  # no splits: the output alone, as in Horovod
    assert not isinstance(out, tuple)
    want = np.concatenate([np.arange(2 * N * 3).reshape(2 * N, 3)[2 * R:2 * R + 2] + 1000 * s
                           for s in range(N)])
    assert_close(out.numpy(), want, tf.float32, "equal split")

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32),
                                  tf.TensorSpec([None], tf.int32)])
    def routed(t, splits):
        y, r = hvd.alltoall(t, splits=splits)
        assert y.shape.as_list() == [None, 3]
        return y, r

    for salt in (1, 2):
        y, r = routed(tf.constant(rows_of(R, salt, 3), tf.float32),
                      tf.constant(splits_of(R, salt), tf.int32))
        want, want_received = expected_alltoall(salt, 3)
        assert_close(y.numpy(), want, tf.float32, f"tf.function salt {salt}")
        assert list(r.numpy()) == want_received


@test
def alltoall_wrong_splits_raise_on_every_rank_naming_the_rank():
    bad = [1] * N if R == N - 1 else [2] + [1] * (N - 1)  # rank N-1's do not add up
    try:
        hvd.alltoall(tf.ones([N + 1, 2]), splits=bad, name="a2a/bad")
    except tf.errors.InvalidArgumentError as e:
        assert f"rank {N - 1} gave splits" in e.message, e.message
        assert "'a2a/bad'" in e.message, e.message
    else:
        raise AssertionError("an alltoall with wrong splits succeeded")
    # the runtime goes on
    out = hvd.alltoall(tf.fill([N], float(R)), name="a2a/after")
    assert_close(out.numpy(), np.arange(N, dtype=np.float64), tf.float32, "after the error")


def grad_of(fn, x):
    x = tf.Variable(x)
    with tf.GradientTape() as tape:
        loss = fn(x)
    return tape.gradient(loss, x).numpy()


WEIGHT = float(R + 1)  # each rank's loss weighs the output by its rank + 1
WEIGHTS = N * (N + 1) / 2  # their sum over ranks


@test
def allreduce_gradients_sum_average_scale_factors_and_max():
    x = np.arange(6, dtype=np.float32).reshape(2, 3) + R
    g = grad_of(lambda v: tf.reduce_sum(hvd.allreduce(v, op=hvd.Sum, name="g/sum") * WEIGHT), x)
    assert_close(g, np.full_like(x, WEIGHTS), tf.float32, "Sum")
    g = grad_of(lambda v: tf.reduce_sum(
        hvd.allreduce(v, op=hvd.Average, prescale_factor=3.0, postscale_factor=0.5,
                      name="g/avg") * WEIGHT), x)
    assert_close(g, np.full_like(x, WEIGHTS * 1.5 / N), tf.float32, "Average with scale factors")
    # Max: the summed gradient reaches the rank holding the maximum (the last)
    g = grad_of(lambda v: tf.reduce_sum(hvd.allreduce(v, op=hvd.Max, name="g/max") * WEIGHT), x)
    assert_close(g, np.full_like(x, WEIGHTS if R == N - 1 else 0.0), tf.float32, "Max")
    # Min with a prescale: rank 0 holds it, and the factor scales its gradient
    g = grad_of(lambda v: tf.reduce_sum(
        hvd.allreduce(v, op=hvd.Min, prescale_factor=2.0, name="g/min") * WEIGHT), x)
    assert_close(g, np.full_like(x, 2 * WEIGHTS if R == 0 else 0.0), tf.float32, "Min")
    # Product with scale factors: d/dx_r of post * prod_j(pre * x_j) is
    # post * pre * prod_{j != r}(pre * x_j); a 0 on another rank zeroes it
    x = np.array([1.0, 2.0, 0.5, 3.0], np.float32) + R
    x[0] = 0.0 if R == N - 1 else x[0]
    g = grad_of(lambda v: tf.reduce_sum(
        hvd.allreduce(v, op=hvd.Product, prescale_factor=2.0, postscale_factor=0.5,
                      name="g/prod") * WEIGHT), x)
    every = [np.array([1.0, 2.0, 0.5, 3.0]) + r for r in range(N)]
    every[N - 1][0] = 0.0
    others = np.prod([2.0 * every[r] for r in range(N) if r != R], axis=0)
    assert_close(g, WEIGHTS * 0.5 * 2.0 * others, tf.float32, "Product")


@test
def allgather_broadcast_and_reducescatter_gradients():
    x = np.ones([R + 1, 2], np.float32)  # rows differ per rank
    g = grad_of(lambda v: tf.reduce_sum(hvd.allgather(v, name="g/gather") * WEIGHT), x)
    assert_close(g, np.full_like(x, WEIGHTS), tf.float32, "allgather")
    x = np.ones([3], np.float32)
    g = grad_of(lambda v: tf.reduce_sum(hvd.broadcast(v, root_rank=N - 1, name="g/bcast")
                                        * WEIGHT), x)
    assert_close(g, np.full_like(x, WEIGHTS if R == N - 1 else 0.0), tf.float32, "broadcast")
    rows = 2 * N + 1
    x = np.ones([rows, 2], np.float32)
    owner = np.concatenate([[r] * ((rows // N) + (1 if r < rows % N else 0)) for r in range(N)])
    for op, scale in ((hvd.Sum, 1.0), (hvd.Average, 1.0 / N)):
        g = grad_of(lambda v: tf.reduce_sum(
            hvd.reducescatter(v, op=op, name=f"g/rs{op}") * WEIGHT), x)
        assert_close(g, np.repeat(((owner + 1) * scale)[:, None], 2, axis=1), tf.float32,
                     f"reducescatter op {op}")
    # with a prescale, and Max: the last rank holds every maximum
    g = grad_of(lambda v: tf.reduce_sum(
        hvd.reducescatter(v, op=hvd.Sum, prescale_factor=3.0, name="g/rs_pre") * WEIGHT), x)
    assert_close(g, np.repeat((3.0 * (owner + 1))[:, None], 2, axis=1), tf.float32,
                 "reducescatter with a prescale")
    x = np.ones([rows, 2], np.float32) * (R + 1)
    g = grad_of(lambda v: tf.reduce_sum(
        hvd.reducescatter(v, op=hvd.Max, name="g/rs_max") * WEIGHT), x)
    want = np.repeat((owner + 1.0)[:, None], 2, axis=1) if R == N - 1 else np.zeros_like(x)
    assert_close(g, want, tf.float32, "reducescatter Max")


@test
def alltoall_gradient_travels_back_eagerly_and_in_tf_function():
    salt = 3
    x = rows_of(R, salt, 2).astype(np.float32)
    dest = np.concatenate([[d] * s for d, s in enumerate(splits_of(R, salt))]).astype(np.float32)
    want = np.repeat((dest + 1)[:, None], 2, axis=1)  # a row sent to rank d: weight d + 1
    g = grad_of(lambda v: tf.reduce_sum(
        hvd.alltoall(v, splits=splits_of(R, salt), name="g/a2a")[0] * WEIGHT), x)
    assert_close(g, want, tf.float32, "alltoall eagerly")

    var = tf.Variable(x)

    @tf.function
    def step():
        with tf.GradientTape(persistent=True) as tape:
            y, _ = hvd.alltoall(var, splits=splits_of(R, salt), name="g/a2a_fn")
            loss = tf.reduce_sum(y * WEIGHT)
            doubled = 2 * loss
        # the same gradient twice in one graph: each its own collective
        return tape.gradient(loss, var), tape.gradient(doubled, var)

    once, twice = step()
    assert_close(once.numpy(), want, tf.float32, "alltoall in tf.function")
    assert_close(twice.numpy(), 2 * want, tf.float32, "alltoall in tf.function, again")


finish()
