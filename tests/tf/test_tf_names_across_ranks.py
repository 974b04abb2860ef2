"""Names that must agree across ranks, under mpirun (np=2 and 3): unnamed
eager collectives from another thread do not meet the main thread's on
another rank (both run at once, the thread first on even ranks, the main
thread first on odd ones; the thread unnamed, its default name numbered
differently on rank 0); gradient
names do not depend on Keras's per-process layer counter (rank 0 builds
one extra layer first); an object that cannot be pickled fails
broadcast_object and allgather_object on every rank instead of leaving
the others waiting; barrier takes a name."""

import threading

import keras

from harness import finish, hvd, np, test, tf

hvd.init()
R, N = hvd.rank(), hvd.size()


@test
def another_threads_unnamed_collectives_keep_to_that_thread():
    import time

    got = {}
    first = "thread" if R % 2 == 0 else "main"  # neighbouring ranks, opposite orders

    def worker():
        if first != "thread":
            time.sleep(0.3)
        got["thread"] = hvd.broadcast_object(("thread", R), root_rank=0)
        got["thread_sum"] = hvd.allreduce(tf.constant([1.0]), op=hvd.Sum).numpy().tolist()

    if R == 0:  # Python numbers default thread names per process: rank 0's run ahead
        spare = threading.Thread(target=lambda: None)
        spare.start()
        spare.join()
    thread = threading.Thread(target=worker)  # "Thread-N (worker)": "@worker" on every rank
    thread.start()
    if first != "main":
        time.sleep(0.3)
    got["main"] = hvd.broadcast_object(("main", R), root_rank=0)
    got["main_sum"] = hvd.allreduce(tf.constant([10.0]), op=hvd.Sum).numpy().tolist()
    thread.join()
    assert got["thread"] == ("thread", 0) and got["main"] == ("main", 0), got
    assert got["thread_sum"] == [N] and got["main_sum"] == [10.0 * N], got


@test
def gradient_names_do_not_depend_on_keras_layer_counters():
    from ringscope.tensorflow.gradient_tape import _variable_label

    if R == 0:  # rank 0 alone numbers every later unnamed layer one higher
        keras.layers.Dense(1)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    labels = [_variable_label(v, i) for i, v in enumerate(model.trainable_variables)]
    assert labels == ["0/dense/kernel:3x2", "1/dense/bias:2"], labels
    x = tf.ones([4, 3]) * (R + 1)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(x))
    grads = hvd.DistributedGradientTape(tape).gradient(loss, model.trainable_variables)
    assert all(g is not None for g in grads)
    # SyncBatchNormalization's allreduce too, in a tf.function (graph node
    # names carry the layer's counter-numbered scope).
    if R == 0:
        hvd.SyncBatchNormalization()
    bn = keras.Sequential([keras.Input((3,)), hvd.SyncBatchNormalization()])

    @tf.function
    def step(v):  # forward and backward: the gradient's allreduce is named too
        with tf.GradientTape() as tape:
            tape.watch(v)
            out = bn(v, training=True)
            loss = tf.reduce_sum(out * tf.range(1.0, 4.0) * tf.range(1.0, 3.0)[:, None])
        return out, tape.gradient(loss, v)

    out, grad = step(tf.reshape(tf.range(6.0), [2, 3]) * (R + 1))
    assert out.shape == (2, 3) and grad.shape == (2, 3)


@test
def reducescatter_refuses_an_op_where_horovod_has_device_dense():
    try:
        hvd.reducescatter(tf.ones([N]), hvd.Sum)
        raise AssertionError("an op in device_dense's place was accepted")
    except TypeError as e:
        assert "device_dense" in str(e), e


@test
def an_object_that_cannot_be_pickled_fails_on_every_rank():
    unpicklable = threading.Lock()
    for what, call in (
            ("broadcast_object", lambda: hvd.broadcast_object(
                unpicklable if R == 0 else None, root_rank=0, name="pickle/b")),
            ("allgather_object", lambda: hvd.allgather_object(
                unpicklable if R == N - 1 else R, name="pickle/g"))):
        try:
            call()
            raise AssertionError(f"{what} of an unpicklable object returned")
        except ValueError as e:
            bad = 0 if what == "broadcast_object" else N - 1
            assert what in str(e) and f"[{bad}]" in str(e), e
    # The ranks are still in step: the next collective meets.
    assert hvd.broadcast_object(R, root_rank=N - 1, name="pickle/after") == N - 1


@test
def barrier_takes_a_name():
    hvd.barrier(name="named.barrier")
    hvd.barrier()


finish()
