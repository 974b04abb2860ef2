"""TensorFlow ops against a numpy reference, under mpirun (np=1, 2 and 3):
every dtype (int8, int16 and uint16 too) and reduce op (Product too), scale factors, allgather with per-rank dim 0,
reducescatter (rows split as Horovod does), broadcast, grouped and sparse
allreduce, fp16 compression, eager and
tf.function, shape functions, errors raised on every rank with the message,
DistributedGradientTape and broadcast_variables, collectives in a tf.data
map, and the message of a name run twice at once."""

from harness import Skip, assert_close, finish, hvd, np, test, tf

hvd.init()
R, N = hvd.rank(), hvd.size()
DTYPES = [tf.uint8, tf.int8, tf.int16, tf.uint16, tf.int32, tf.int64, tf.float16, tf.bfloat16,
          tf.float32, tf.float64]


def rank_values(rank, shape, salt=0):
    n = int(np.prod(shape))
    v = (np.arange(n) * 13 + rank * 7 + salt * 5) % 11
    return v.reshape(shape).astype(np.float64)


def reference(op, shape, salt, pre=1.0, post=1.0, integer=False):
    vals = [rank_values(r, shape, salt) * pre for r in range(N)]
    if integer:
        vals = [np.trunc(v) for v in vals]
    if op == hvd.Min:
        out = np.minimum.reduce(vals)
    elif op == hvd.Max:
        out = np.maximum.reduce(vals)
    elif op == hvd.Product:
        out = np.prod(vals, axis=0)
    else:
        out = np.sum(vals, axis=0)
    out = out * post * (1.0 / N if op == hvd.Average else 1.0)
    return np.trunc(out) if integer else out


@test
def allreduce_every_dtype_and_op():
    salt = 0
    for dtype in DTYPES:
        for op in (hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product):
            for shape in [(0,), (1,), (3, 5), (1000,)]:
                salt += 1
                x = tf.cast(tf.constant(rank_values(R, shape, salt)), dtype)
                y = hvd.allreduce(x, op=op, name=f"ops/{dtype.name}/{op}/{salt}")
                assert y.dtype == dtype and y.shape == x.shape
                want = reference(op, shape, salt, integer=dtype.is_integer)
                if dtype.is_integer:  # an integer product wraps, as in numpy
                    want = np.asarray(want).astype(np.int64).astype(dtype.as_numpy_dtype)
                assert_close(tf.cast(y, tf.float64).numpy(), want, dtype, f"{dtype.name} op {op}")


@test
def average_is_the_quotient_horovods_division_gives():
    # Horovod's Average is its sum divided by the size in the tensor's type
    # (TensorFlow's division): fl(S / n), which multiplying by float32(1/n)
    # misses by an ulp in about one element in ten at n=3 (float32(3 *
    # 89.564865) / 3 is 89.56486). float32 and float64, every rank the same
    # values, so S is fl(n * x) whatever the order of the adds.
    rng = np.random.default_rng(1234)
    for np_type, tf_type in ((np.float32, tf.float32), (np.float64, tf.float64)):
        x = rng.uniform(-100, 100, 4913).astype(np_type)
        y = hvd.allreduce(tf.constant(x), op=hvd.Average, name=f"quotient/{tf_type.name}")
        want = (x * np_type(N)) / np_type(N)  # numpy rounds each step in np_type
        differ = int(np.count_nonzero(y.numpy() != want))
        assert differ == 0, f"{tf_type.name}: {differ} of {x.size} differ from fl(fl(n x) / n)"


@test
def scale_factors():
    x = tf.constant(rank_values(R, (50,), 1), tf.float32)
    y = hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0, name="scaled")
    assert_close(y.numpy(), reference(hvd.Sum, (50,), 1, 0.5, 3.0), tf.float32, "scaled")


@test
def inputs_are_never_written():
    # At one rank an unscaled allreduce's output is its input tensor itself:
    # a scaled one, at any size, must still leave the input as it was.
    x = tf.constant(rank_values(R, (64,), 2), tf.float32)
    before = x.numpy().copy()
    for op in (hvd.Sum, hvd.Average, hvd.Max):
        for pre, post in ((1.0, 1.0), (2.0, 1.0), (1.0, 0.5)):
            tag = f"inputs/{op}/{pre}/{post}"
            y = hvd.allreduce(x, op=op, prescale_factor=pre, postscale_factor=post, name=tag)
            ys = hvd.grouped_allreduce([x, x * 1], op=op, prescale_factor=pre,
                                       postscale_factor=post, name=tag + "/group")
            fn = tf.function(lambda t: hvd.allreduce(t, op=op, prescale_factor=pre,
                                                     postscale_factor=post, name=tag + "/fn"))
            want = reference(op, (64,), 2, pre, post)
            for got in [y, fn(x)] + ys:
                assert_close(got.numpy(), want, tf.float32, tag)
            assert np.array_equal(x.numpy(), before), f"{tag} wrote into its input"


@test
def product_grouped_scaled_and_in_tf_function():
    xs = [tf.constant(rank_values(R, (7,), s) + 1, tf.float32) for s in range(3)]
    want = [np.prod([(rank_values(r, (7,), s) + 1) * 0.5 for r in range(N)], axis=0) * 2.0
            for s in range(3)]
    got = hvd.grouped_allreduce(xs, op=hvd.Product, prescale_factor=0.5, postscale_factor=2.0,
                                name="prod/group")
    for g, w in zip(got, want):
        assert_close(g.numpy(), w, tf.float32, "grouped product")
    f = tf.function(lambda v: hvd.allreduce(v, op=hvd.Product, name="prod/fn"))
    assert_close(f(xs[0]).numpy(), np.prod([rank_values(r, (7,), 0) + 1 for r in range(N)], 0),
                 tf.float32, "product in a tf.function")
    try:
        hvd.reducescatter(xs[0], op=hvd.Product, name="prod/rs")
        raise AssertionError("reducescatter took Product")
    except ValueError as e:
        assert "not Product" in str(e), str(e)


@test
def scale_factors_reach_the_runtime_as_exact_doubles():
    # A TensorFlow float attr is 32 bits: float32(0.04) * 25 is 0.99999998,
    # truncated to 0 for an int32; float32(1/3) is off by 3e-8 in float64.
    y = hvd.allreduce(tf.constant([25], tf.int32), op=hvd.Max, postscale_factor=0.04,
                      name="exact/int")
    assert y.numpy().tolist() == [1], y.numpy()
    x = tf.constant([3.0], tf.float64)
    y = hvd.allreduce(x, op=hvd.Sum, prescale_factor=1 / 3, name="exact/f64")
    assert y.numpy()[0] == N * (3.0 * (1 / 3)), y.numpy()
    try:  # the attr is text now: anything but a finite number is refused
        hvd._ops.ringscope_allreduce(x, prescale_factor=float("nan"), tensor_name="exact/nan")
        raise AssertionError("a NaN scale factor was accepted")
    except (tf.errors.InvalidArgumentError, ValueError) as e:
        assert "finite" in str(e), e


@test
def allgather_with_different_first_dims():
    for dtype in DTYPES:
        x = tf.cast(tf.fill([R + 1, 3], R), dtype)
        y = hvd.allgather(x, name=f"gather/{dtype.name}")
        want = np.concatenate([np.full((r + 1, 3), r) for r in range(N)])
        assert_close(tf.cast(y, tf.float64).numpy(), want, dtype, "allgather")


@test
def reducescatter_gives_each_rank_its_rows_of_every_dtype_and_op():
    salt = 50
    for dtype in DTYPES:
        integer = dtype.is_integer
        for op in (hvd.Sum, hvd.Average, hvd.Min, hvd.Max):
            for rows in (N - 1 if N > 1 else 1, 2 * N + 1):  # fewer rows than ranks, and more
                salt += 1
                shape = (rows, 4)
                x = tf.cast(rank_values(R, shape, salt), dtype)
                post = 2.0 if op == hvd.Max else 1.0
                y = hvd.reducescatter(x, op=op, postscale_factor=post, name=f"rs/{salt}")
                first = sum(rows // N + (r < rows % N) for r in range(R))
                mine = rows // N + (R < rows % N)
                want = reference(op, shape, salt, post=post, integer=integer)[first:first + mine]
                assert y.shape == (mine, 4), (y.shape, mine)
                assert_close(tf.cast(y, tf.float64).numpy(), want, dtype,
                             f"reducescatter {dtype.name} op {op} rows {rows}")
    # grouped, and inside a tf.function (dim 0 of the result is unknown there)
    outs = hvd.grouped_reducescatter([tf.ones([N, 2]), tf.ones([3 * N])], op=hvd.Sum,
                                     name="rs/grouped")
    assert [o.shape for o in outs] == [(1, 2), (3,)], [o.shape for o in outs]
    assert np.all(outs[0].numpy() == N) and np.all(outs[1].numpy() == N)
    f = tf.function(lambda t: hvd.reducescatter(t, name="rs/fn"))
    assert f(tf.fill([N, 3], float(R))).numpy().tolist() == [[(N - 1) / 2] * 3]
    gathered = hvd.grouped_allgather([tf.fill([R + 1], R), tf.fill([1, 2], R)], name="ag/grouped")
    assert gathered[0].shape == (N * (N + 1) // 2,) and gathered[1].shape == (N, 2)


@test
def reducescatter_errors_reach_every_rank_with_the_message():
    if N == 1:
        raise Skip("needs ranks that disagree")
    try:
        hvd.reducescatter(tf.ones([4 + R]), name="rs/mismatch")
    except tf.errors.FailedPreconditionError as e:
        assert "rs/mismatch" in str(e) and "shape" in str(e), str(e)
    else:
        raise AssertionError("a reducescatter of different shapes succeeded")
    try:
        hvd.reducescatter(tf.constant(1.0), name="rs/scalar")
    except (tf.errors.InvalidArgumentError, ValueError) as e:
        assert "dimension" in str(e) or "rank" in str(e), str(e)
    else:
        raise AssertionError("a scalar reducescatter succeeded")


@test
def broadcast_from_every_root():
    for root in range(N):
        y = hvd.broadcast(tf.constant([R, R * 2], tf.int64), root, name=f"bcast/{root}")
        assert y.numpy().tolist() == [root, root * 2]


@test
def broadcast_and_allgather_move_bools_and_small_integers():
    # Horovod's broadcast and allgather take these types (a stop flag is a
    # bool, carried as bytes; the small integers are the ops' own types).
    flag = hvd.broadcast(tf.constant(R == 0), 0, name="bcast/bool")
    assert flag.dtype == tf.bool and bool(flag.numpy()) is True
    for dtype in (tf.int8, tf.int16, tf.uint16):
        value = tf.constant([[R + 3, R + 100]], dtype)
        root = hvd.broadcast(value, N - 1, name=f"bcast/{dtype.name}")
        assert root.dtype == dtype and root.numpy().tolist() == [[N + 2, N + 99]], root
        every = hvd.allgather(value, name=f"gather/{dtype.name}")
        assert every.dtype == dtype
        assert every.numpy().tolist() == [[r + 3, r + 100] for r in range(N)], every
        # alltoall too: row d of every rank goes to rank d.
        rows = tf.constant([[R * 10 + d, -d if dtype != tf.uint16 else d] for d in range(N)],
                           dtype)
        got, received = hvd.alltoall(rows, splits=[1] * N, name=f"a2a/{dtype.name}")
        assert got.dtype == dtype and received.numpy().tolist() == [1] * N
        assert got.numpy().tolist() == [[r * 10 + R, -R if dtype != tf.uint16 else R]
                                        for r in range(N)], got
    flags = hvd.alltoall(tf.constant([d % 2 == 0 for d in range(N)]), name="a2a/bool")
    assert flags.dtype == tf.bool and flags.numpy().tolist() == [R % 2 == 0] * N
    assert hvd.is_homogeneous()  # every rank on this one host
    assert hvd.allreduce(tf.ones([2]), name="ignore.scope", ignore_name_scope=True).shape == [2]


@test
def inside_tf_function_with_shapes():
    @tf.function
    def step(x):
        return hvd.allreduce(x, op=hvd.Sum), hvd.allgather(x)

    a, g = step(tf.ones([2, 3]))
    assert_close(a.numpy(), np.full((2, 3), N), tf.float32, "tf.function allreduce")
    assert g.shape == (2 * N, 3)
    spec = tf.TensorSpec([2, 3], tf.float32)
    out_a, out_g = step.get_concrete_function(spec).structured_outputs
    assert out_a.shape.as_list() == [2, 3]  # allreduce keeps the shape
    assert out_g.shape.as_list() == [None, 3]  # allgather: dim 0 unknown


@test
def collectives_in_a_tf_function_are_not_chained():
    # TensorFlow chains stateful ops without resource inputs in program
    # order, so each allreduce would wait for the previous one to complete
    # and nothing would fuse; the collectives are marked to run independently.
    f = tf.function(lambda xs: [hvd.allreduce(x, op=hvd.Sum) for x in xs])
    graph = f.get_concrete_function([tf.TensorSpec([4])] * 8).graph
    ops = [o for o in graph.get_operations() if o.type == "RingscopeAllreduce"]
    assert len(ops) == 8, [o.type for o in graph.get_operations()]
    chained = [(o.name, c.name) for o in ops for c in o.control_inputs]
    assert not chained, chained
    outs = f([tf.ones([4]) * (R + i) for i in range(8)])
    for i, out in enumerate(outs):
        assert_close(out.numpy(), np.full(4, sum(r + i for r in range(N))), tf.float32,
                     f"allreduce {i} in a tf.function")


@test
def a_group_is_one_op_per_dtype_eagerly_and_in_tf_function():
    xs = [tf.ones([4]) * (R + i) for i in range(6)] + [tf.ones([2], tf.int32) * R]
    f = tf.function(lambda xs: hvd.grouped_allreduce(xs, op=hvd.Sum))
    graph = f.get_concrete_function([tf.TensorSpec(x.shape, x.dtype) for x in xs]).graph
    grouped = [o for o in graph.get_operations() if o.type == "RingscopeGroupedAllreduce"]
    assert sorted(len(o.inputs) for o in grouped) == [1, 6], [o.type for o in graph.get_operations()]
    for outs in (f(xs), hvd.grouped_allreduce(xs, op=hvd.Sum, name="group/mixed")):
        for i in range(6):
            assert_close(outs[i].numpy(), np.full(4, sum(r + i for r in range(N))), tf.float32,
                         f"grouped member {i}")
        assert outs[6].dtype == tf.int32 and outs[6].numpy().tolist() == [sum(range(N))] * 2
    # one dtype eagerly: the grouped op is called directly (no tf.function)
    ys = hvd.grouped_allreduce(xs[:6], op=hvd.Average, name="group/eager")
    assert_close(ys[5].numpy(), np.full(4, (N - 1) / 2 + 5), tf.float32, "eager group average")
    # its gradient: a grouped Sum of the upstream gradients, named after the
    # members the eager op registered ("group/grad/<i>/grad" on every rank)
    ws = [tf.Variable(tf.ones([4]) * (R + 1)) for _ in range(3)]
    with tf.GradientTape() as tape:
        outs = hvd.grouped_allreduce([w * 1.0 for w in ws], op=hvd.Sum, name="group/grad")
        loss = tf.add_n([tf.reduce_sum(o * (i + 1)) for i, o in enumerate(outs)])
    for i, g in enumerate(tape.gradient(loss, ws)):
        assert_close(g.numpy(), np.full(4, float(N * (i + 1))), tf.float32,
                     f"gradient of eager group member {i}")


@test
def a_result_used_on_one_rank_only_still_runs_everywhere():
    # `if hvd.rank() == 0: tf.print(avg)`: on the other ranks the result is
    # unused; the op must run there too or rank 0 waits forever.
    @tf.function
    def step(x):
        avg = hvd.allreduce(x, op=hvd.Sum, name="used_on_rank_0")
        return avg if R == 0 else x

    for _ in range(2):
        out = step(tf.ones([3]))
        want = np.full(3, N) if R == 0 else np.ones(3)
        assert_close(out.numpy(), want, tf.float32, "result used on rank 0 only")


@test
def one_name_twice_in_a_tf_function_runs_in_order():
    @tf.function
    def twice():
        a = hvd.allreduce(tf.fill([4], float(R + 1)), op=hvd.Sum, name="same_name")
        b = hvd.allreduce(tf.fill([4], 10.0 * (R + 1)), op=hvd.Sum, name="same_name")
        return a, b

    for _ in range(10):
        a, b = twice()
        assert_close(a.numpy(), np.full(4, N * (N + 1) / 2), tf.float32, "first same_name")
        assert_close(b.numpy(), np.full(4, 10 * N * (N + 1) / 2), tf.float32, "second same_name")


@test
def a_constant_allreduced_in_a_tf_function():
    # Stateful: TensorFlow never folds it at graph optimisation.
    @tf.function
    def f():
        return hvd.allreduce(tf.constant([1.0, 2.0]), op=hvd.Sum, name="constant_in_function")

    for _ in range(2):
        assert_close(f().numpy(), [N, 2.0 * N], tf.float32, "constant allreduced")


@test
def eager_groups_and_tapes_with_unnamed_and_changing_shapes():
    # Eagerly a group runs as one cached tf.function; an unnamed group
    # reuses one name per kind, also when the shapes change.
    for step in range(3):
        xs = [tf.ones([step + 1 + i]) * (R + i) for i in range(4)]
        for i, out in enumerate(hvd.grouped_allreduce(xs, op=hvd.Sum)):
            assert_close(out.numpy(), np.full(step + 1 + i, sum(r + i for r in range(N))),
                         tf.float32, f"eager group step {step} tensor {i}")
        gathered = hvd.grouped_allgather([tf.fill([R + 1, 2], float(R)), tf.ones([1])])
        assert gathered[0].shape == (N * (N + 1) // 2, 2) and gathered[1].shape == (N,)
    w = [tf.Variable([1.0, 2.0]), tf.Variable([[3.0]]), tf.Variable([0.0])]
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w[0] * float(R + 1)) + tf.reduce_sum(w[1]) * float(R)
    grads = hvd.DistributedGradientTape(tape).gradient(loss, w)
    mean = np.mean([r + 1.0 for r in range(N)])
    assert_close(grads[0].numpy(), [mean, mean], tf.float32, "tape gradient 0")
    assert_close(grads[1].numpy(), [[np.mean(range(N))]], tf.float32, "tape gradient 1")
    assert grads[2] is None  # not in the loss: stays None


@test
def unnamed_eager_collectives_do_not_grow_the_process():
    # A fresh name per call made TensorFlow build and keep a kernel per call
    # (about 35 KB each); one name per kind keeps one.
    import resource

    x = tf.ones([4])
    for _ in range(200):
        hvd.allreduce(x, op=hvd.Sum)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(3000):
        y = hvd.allreduce(x, op=hvd.Sum)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert_close(y.numpy(), np.full(4, N), tf.float32, "unnamed allreduce")
    assert grown_mb < 40, f"3000 unnamed allreduces grew the process by {grown_mb:.0f} MB"


@test
def grouped_sparse_and_compressed():
    outs = hvd.grouped_allreduce([tf.ones([4]) * R, tf.ones([2, 2])], op=hvd.Sum, name="group")
    assert_close(outs[0].numpy(), np.full(4, sum(range(N))), tf.float32, "grouped")
    sparse = tf.IndexedSlices(tf.ones([1, 2]) * (R + 1), tf.constant([R]), tf.constant([N, 2]))
    red = hvd.allreduce(sparse, op=hvd.Sum, name="sparse")
    assert isinstance(red, tf.IndexedSlices)
    assert red.indices.numpy().tolist() == list(range(N))
    assert red.values.numpy().tolist() == [[r + 1.0] * 2 for r in range(N)], red.values
    x = tf.constant(rank_values(R, (64,), 3), tf.float32)
    y = hvd.allreduce(x, compression=hvd.Compression.fp16, name="fp16wire")
    assert y.dtype == tf.float32
    assert_close(y.numpy(), reference(hvd.Average, (64,), 3), tf.float16, "fp16 compression")


@test
def mismatch_raises_on_every_rank_with_the_message():
    if N == 1:
        raise Skip("needs ranks that disagree")
    try:
        hvd.allreduce(tf.zeros([R + 1]), name="mismatched")
    except tf.errors.FailedPreconditionError as e:
        assert "Mismatched shape for tensor 'mismatched'" in str(e), str(e)
    else:
        raise AssertionError("no error for mismatched shapes")


@test
def gradient_tape_averages_gradients():
    w = tf.Variable([1.0, 2.0], name="w")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * float(R + 1))
    tape = hvd.DistributedGradientTape(tape)
    (g,) = tape.gradient(loss, [w])
    mean = np.mean([r + 1.0 for r in range(N)])
    assert_close(g.numpy(), [mean, mean], tf.float32, "tape gradient")


@test
def broadcast_variables_makes_ranks_identical():
    v = [tf.Variable(tf.fill([3], float(R))), tf.Variable(R, dtype=tf.int64)]
    hvd.broadcast_variables(v, root_rank=N - 1)
    assert v[0].numpy().tolist() == [N - 1.0] * 3 and int(v[1].numpy()) == N - 1


@test
def topology_ops_in_and_out_of_tf_function():
    assert int(hvd.size_op()) == N and int(hvd.rank_op()) == R
    assert int(hvd.local_size_op()) == hvd.local_size()
    assert int(hvd.local_rank_op()) == hvd.local_rank()

    @tf.function
    def scaled():
        return tf.cast(hvd.rank_op(), tf.float32) / tf.cast(hvd.size_op(), tf.float32)

    assert abs(float(scaled()) - R / N) < 1e-6



@test
def a_name_that_changes_every_step_is_warned_about_once():
    import warnings

    from ringscope.tensorflow import _library

    x = tf.ones([1])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(_library._EAGER_NAMES_WARNED_AT + 5):  # the same count on every rank
            hvd.allreduce(x, op=hvd.Sum, name=f"loss_{step}")
    found = [w for w in caught if "distinct tensor names" in str(w.message)]
    assert len(found) == 1 and "loss_" in str(found[0].message), [str(w.message) for w in caught]
    assert len(_library._eager_names) == _library._EAGER_NAMES_WARNED_AT + 1  # bounded

@test
def collectives_in_tf_data_map_serially():
    # One element at a time (the default): every rank's elements pair in order.
    ds = tf.data.Dataset.range(12).map(lambda i: tf.fill([3], tf.cast(i, tf.float32) + R))
    got = [float(v[0]) for v in ds.map(lambda x: hvd.allreduce(x, op=hvd.Sum, name="ds_map"))]
    assert got == [N * i + sum(range(N)) for i in range(12)], got


@test
def one_op_run_twice_at_once_says_what_does_that_in_tensorflow():
    if N == 1:
        raise Skip("needs a peer that holds the first op in flight")
    # Rank 0 has "dup" in flight (its peers submit theirs only after the
    # barrier) and submits it again: refused at once, with the TensorFlow
    # causes (a parallel Dataset.map, a tf.function on two threads).
    import threading
    import time

    x = tf.ones([2])
    first = {}
    if R == 0:
        worker = threading.Thread(
            target=lambda: first.update(y=hvd.allreduce(x, op=hvd.Sum, name="dup")))
        worker.start()
        time.sleep(0.3)  # its submission is in; the peers' are not
        try:
            hvd.allreduce(x, op=hvd.Sum, name="dup")
            raise AssertionError("a second 'dup' in flight was accepted")
        except tf.errors.InvalidArgumentError as e:
            assert "DuplicateName" in str(e) and "num_parallel_calls=None" in str(e), str(e)
        hvd.barrier(name="dup_refused")
        worker.join()
        assert float(first["y"][0]) == N
    else:
        hvd.barrier(name="dup_refused")
        assert float(hvd.allreduce(x, op=hvd.Sum, name="dup")[0]) == N


finish()
