"""Process sets from TensorFlow under mpirun (np=3 and 4): even and odd ranks
registered at init run every collective among themselves (eagerly and in a
tf.function, with gradients), DistributedGradientTape and
DistributedOptimizer (a Keras and a TensorFlow 1 optimizer) average over
their set only, the object functions and
barrier take a set; a rank outside a set and an unregistered set are
refused; sets added and removed after init, with Horovod's ids and
errors."""

import keras

import ringscope.tensorflow.keras as khvd
from harness import assert_close, finish, hvd, np, test, tf

N_ENV = int(__import__("os").environ.get("OMPI_COMM_WORLD_SIZE", "1"))
EVEN = hvd.ProcessSet(range(0, N_ENV, 2))
ODD = hvd.ProcessSet(range(1, N_ENV, 2))
hvd.init(process_sets=[EVEN, ODD])
R, N = hvd.rank(), hvd.size()
MINE, THEIRS = (EVEN, ODD) if R % 2 == 0 else (ODD, EVEN)
K = len(MINE.ranks)
MEAN = sum(MINE.ranks) / K


@test
def sets_have_ids_sizes_and_ranks():
    assert (EVEN.process_set_id, ODD.process_set_id) == (1, 2), (EVEN, ODD)
    assert str(EVEN) == f"ProcessSet(process_set_id=1, ranks={list(range(0, N, 2))}, mpi_comm=None)"
    assert hvd.global_process_set.ranks == list(range(N))
    assert MINE.size() == K and MINE.rank() == MINE.ranks.index(R) and MINE.included()
    assert THEIRS.rank() == -1 and not THEIRS.included()
    assert int(hvd.size_op(process_set_id=MINE.process_set_id)) == K
    assert int(hvd.process_set_included_op(process_set_id=THEIRS.process_set_id)) == 0


@test
def every_collective_runs_among_the_sets_ranks():
    x = tf.constant([float(R), 1.0])
    assert_close(hvd.allreduce(x, process_set=MINE, name="ps.avg"), [MEAN, 1.0], tf.float32,
                 "average")
    got = hvd.grouped_allreduce([x, x * 2], op=hvd.Sum, process_set=MINE, name="ps.grouped")
    assert_close(got[1], [2 * MEAN * K, 2.0 * K], tf.float32, "grouped sum")
    gathered = hvd.allgather(tf.fill([R + 1], R), process_set=MINE, name="ps.gather")
    want = [q for q in MINE.ranks for _ in range(q + 1)]
    assert gathered.numpy().tolist() == want, gathered
    root = MINE.ranks[-1]
    assert int(hvd.broadcast(tf.constant(R), root, process_set=MINE, name="ps.bcast")) == root
    rows = hvd.reducescatter(tf.ones([2 * K, 3]), op=hvd.Sum, process_set=MINE, name="ps.rs")
    assert rows.shape == (2, 3) and (rows.numpy() == K).all(), rows
    out, received = hvd.alltoall(tf.fill([K], R), splits=[1] * K, process_set=MINE,
                                 name="ps.a2a")
    assert out.numpy().tolist() == MINE.ranks and received.numpy().tolist() == [1] * K
    sparse = tf.IndexedSlices(tf.ones([1, 2]), tf.constant([R]), tf.constant([N, 2]))
    dense = tf.convert_to_tensor(hvd.allreduce(sparse, op=hvd.Sum, process_set=MINE,
                                               name="ps.sparse"))
    assert dense.numpy()[:, 0].tolist() == [1.0 if q in MINE.ranks else 0.0 for q in range(N)]


@test
def in_a_function_with_gradients():
    @tf.function
    def step(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = hvd.allreduce(v * v, op=hvd.Sum, process_set=MINE, name="ps.fn")
        return y, tape.gradient(y, v)

    y, grad = step(tf.constant([float(R)]))
    assert_close(y, [sum(q * q for q in MINE.ranks)], tf.float32, "sum of squares")
    # Horovod's convention: the gradient is the sum over the set of 2v.
    assert_close(grad, [2 * R * K], tf.float32, "gradient")


@test
def tape_and_optimizer_average_over_the_set():
    x = tf.Variable([float(R)])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(x * x)
    grad, = hvd.DistributedGradientTape(tape, process_set=EVEN).gradient(loss, [x])
    want = 2 * sum(EVEN.ranks) / len(EVEN.ranks) if EVEN.included() else 2.0 * R
    assert_close(grad, [want], tf.float32, "tape")

    v = tf.Variable([0.0])
    opt = khvd.DistributedOptimizer(keras.optimizers.SGD(1.0), process_set=ODD)
    opt.apply_gradients([(tf.constant([-float(R)]), v)])
    want = sum(ODD.ranks) / len(ODD.ranks) if ODD.included() else float(R)
    assert_close(v, [want], tf.float32, "optimizer")


@test
def a_tensorflow1_optimizer_in_a_graph_averages_over_the_set():
    # Horovod's legacy wrapper: compute_gradients() allreduces among the
    # set; a rank outside the set applies its own gradient. Every rank's
    # gradient is its rank, the update assign_add(grad) from 0.
    with tf.Graph().as_default():
        var = tf.compat.v1.get_variable("legacy_w", initializer=[0.0, 0.0], use_resource=False)
        loss = tf.reduce_sum(var * tf.constant([float(R), 2.0 * R]))
        opt = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(-1.0),
                                       process_set=EVEN)
        assert opt._optimizer is not None
        train = opt.apply_gradients(opt.compute_gradients(loss, var_list=[var]))
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(train)
            got = sess.run(var)
    even_mean = sum(EVEN.ranks) / len(EVEN.ranks)
    want = [even_mean, 2 * even_mean] if EVEN.included() else [float(R), 2.0 * R]
    assert_close(got, want, tf.float32, "legacy optimizer step")
    try:
        hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1),
                                 backward_passes_per_step=2)
    except ValueError as e:
        assert "needs a Keras optimizer" in str(e), e
    else:
        raise AssertionError("backward_passes_per_step=2 with a TF1 optimizer was accepted")


@test
def variables_objects_and_barrier_in_a_set():
    v = tf.Variable([float(R)])
    hvd.broadcast_variables([v], MINE.ranks[0], process_set=MINE)
    assert float(v.numpy()[0]) == MINE.ranks[0]
    w = tf.Variable([float(R)])
    hvd.broadcast_([w], MINE.ranks[-1], process_set=MINE, name="ps.inplace")
    assert float(w.numpy()[0]) == MINE.ranks[-1]
    assert hvd.broadcast_object({"r": R}, MINE.ranks[0], process_set=MINE) == {"r": MINE.ranks[0]}
    assert hvd.allgather_object(R, process_set=MINE) == MINE.ranks
    hvd.barrier(process_set=MINE)
    assert float(khvd.allreduce(float(R), process_set=MINE)) == MEAN


@test
def outside_a_set_and_unregistered_sets_are_refused():
    try:
        hvd.allreduce(tf.ones([1]), process_set=THEIRS, name="ps.theirs")
    except tf.errors.InvalidArgumentError as e:
        assert "is not in process set" in str(e), e
    else:
        raise AssertionError("an allreduce in a set this rank is not in")
    fake = hvd.ProcessSet([0])
    for bad_id in (None, 10):
        fake.process_set_id = bad_id
        try:
            hvd.allreduce(tf.ones([1]), process_set=fake)
        except ValueError as e:
            assert "registered" in str(e) or "no process set" in str(e), e
        else:
            raise AssertionError(f"an allreduce in a set with id {bad_id}")


@test
def sets_added_and_removed_after_init():
    first = hvd.add_process_set([1, 0])
    assert first.process_set_id == 3 and first.ranks == [0, 1], first
    if first.included():
        got = hvd.allreduce(tf.constant([1.0]), op=hvd.Sum, process_set=first, name="ps.dyn")
        assert float(got.numpy()[0]) == 2.0
    assert hvd.remove_process_set(first) and first.process_set_id is None
    assert not hvd.remove_process_set(hvd.global_process_set)
    for duplicate in (list(range(N)), list(reversed(MINE.ranks)) if R % 2 == 0 else EVEN.ranks):
        try:
            hvd.add_process_set(duplicate)
        except ValueError as e:
            assert "exists" in str(e), e
        else:
            raise AssertionError(f"a duplicate set {duplicate} was added")
    again = hvd.add_process_set([0, 1])
    assert again.process_set_id == 3, again  # the freed id
    hvd.remove_process_set(again)


finish()
