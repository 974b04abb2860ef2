"""Horovod's API beyond the core ops, under mpirun (np=3): objects
(broadcast_object, allgather_object), the in-place broadcast_, barrier, the build queries, the
timeline names, Horovod's TF2 custom training loop in a tf.function,
Horovod's optimizer and tape arguments, mixed precision, and the Keras
module laid out as horovod.tensorflow.keras (value functions, callbacks
including the learning-rate schedule, load_model)."""

import os
import shutil
import subprocess
import tempfile

import keras

import ringscope.tensorflow.keras as khvd
from harness import assert_close, finish, hvd, np, test, tf

hvd.init()
R, N = hvd.rank(), hvd.size()
B, STEPS = 4, 5
rng = np.random.default_rng(11)
X = rng.normal(size=(N * B * STEPS, 3)).astype(np.float32)
Y = (X @ rng.normal(size=(3, 1))).astype(np.float32)
XR, YR = (a.reshape(STEPS, N, B, -1)[:, R].reshape(STEPS * B, -1) for a in (X, Y))
SHARED_DIR = hvd.broadcast_object(tempfile.mkdtemp(prefix="rs-hvd-api-") if R == 0 else None,
                                  root_rank=0, name="shared_dir")


def make_model(seed=1):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, activation="tanh"),
                              keras.layers.Dense(1)])
    init = np.random.default_rng(seed)
    model.set_weights([init.normal(size=w.shape).astype(np.float32) for w in model.get_weights()])
    return model


def fit(model, opt, epochs=1, callbacks=()):
    model.compile(optimizer=opt, loss="mse")
    return model.fit(XR, YR, batch_size=B, epochs=epochs, shuffle=False, verbose=0,
                     callbacks=list(callbacks))


def same_on_every_rank(value, name):
    everyone = hvd.allgather_object(value, name=name)
    assert all(v == everyone[0] for v in everyone), everyone
    return everyone[0]


@test
def broadcast_object_gives_every_rank_the_roots_object():
    root = N - 1
    obj = {"from": R, "array": np.arange(R + 3), "text": "é" * R} if R == root else object()
    got = hvd.broadcast_object(obj, root_rank=root, name="bcast_obj")
    assert got["from"] == root and got["text"] == "é" * root, got
    assert np.array_equal(got["array"], np.arange(root + 3)), got


@test
def objects_of_other_types_on_other_ranks_need_no_name():
    got = hvd.broadcast_object({"lr": 0.1, "epochs": 3} if R == 0 else None)
    assert got == {"lr": 0.1, "epochs": 3}, got
    everyone = hvd.allgather_object(None if R % 2 else np.int64(R))
    assert everyone == [None if r % 2 else r for r in range(N)], everyone


@test
def allgather_object_lists_every_ranks_object_in_rank_order():
    got = hvd.allgather_object({"rank": R, "blob": "x" * (1000 * R)})  # rank 0 sends the least
    assert [g["rank"] for g in got] == list(range(N)), got
    assert [len(g["blob"]) for g in got] == [1000 * r for r in range(N)]


@test
def objects_are_refused_inside_tf_function():
    try:
        tf.function(lambda: hvd.broadcast_object(1))()
    except RuntimeError as e:
        assert "eagerly" in str(e), e
    else:
        raise AssertionError("broadcast_object ran inside tf.function")


@test
def barrier_returns_only_after_every_rank_reached_it():
    marker = os.path.join(SHARED_DIR, "before-barrier")
    if R == 0:
        import time

        time.sleep(0.3)  # the others reach the barrier first and must wait
        open(marker, "w").close()
    hvd.barrier()
    assert os.path.exists(marker), "barrier returned before rank 0 reached it"


@test
def build_queries_answer_like_horovod():
    assert hvd.mpi_built() and hvd.mpi_enabled() and hvd.mpi_threads_supported()
    assert not (hvd.gloo_built() or hvd.gloo_enabled() or hvd.rocm_built() or hvd.ddl_built()
                or hvd.ccl_built())
    assert isinstance(hvd.nccl_built(), bool) and isinstance(hvd.cuda_built(), bool)
    assert khvd.mpi_built() and khvd.size() == N and khvd.rank() == R


@test
def start_timeline_writes_a_trace_per_rank():
    base = os.path.join(SHARED_DIR, "timeline.sqlite")
    # A Horovod script names a .json timeline: the SQLite trace goes beside it.
    hvd.start_timeline(os.path.join(SHARED_DIR, "timeline.json"), mark_cycles=True)
    hvd.allreduce(tf.ones([8]), name="timeline.probe")
    hvd.stop_timeline()
    hvd.barrier()
    if R == 0:
        tool = os.environ.get("RINGSCOPE_TRACE_TOOL", "build/bin/ringscope-trace")
        out = subprocess.run([tool, "sql", base, "SELECT count(*) FROM events e JOIN strings s "
                              "ON s.id = e.name_id WHERE s.text = 'timeline.probe'"],
                             capture_output=True, text=True)
        # one table per rank's file: a header line, then the count of the probe's events
        counts = [int(line.split()[0]) for line in out.stdout.splitlines()
                  if line.strip().isdigit()]
        assert out.returncode == 0 and out.stdout.count("== ") == N, out.stdout + out.stderr
        assert len(counts) == N and min(counts) > 0, out.stdout


@test
def keras_value_functions_take_values_and_return_tensors():
    avg = khvd.allreduce([float(R), 2.0 * R], name="k.avg")
    assert isinstance(avg, tf.Tensor) and np.allclose(avg, [(N - 1) / 2, N - 1]), avg
    total = khvd.allreduce(np.int32(R), op=khvd.Sum, name="k.sum")
    assert int(total) == N * (N - 1) // 2, total
    gathered = khvd.allgather(np.full((R + 1, 2), R, np.int64), name="k.gather")
    assert gathered.shape == (N * (N + 1) // 2, 2) and gathered[-1, 0] == N - 1, gathered
    assert float(khvd.broadcast(np.float64(R + 7), 1 % N, name="k.bcast")) == (1 % N) + 7
    try:
        khvd.broadcast_global_variables(0)
    except RuntimeError as e:
        assert "BroadcastGlobalVariablesCallback" in str(e), e
    else:
        raise AssertionError("broadcast_global_variables did not refuse")
    try:
        hvd.broadcast_global_variables(0)  # the same answer from ringscope.tensorflow
    except RuntimeError as e:
        assert "BroadcastGlobalVariablesCallback" in str(e), e
    else:
        raise AssertionError("hvd.broadcast_global_variables did not refuse")
    # Horovod's positional arguments: device_dense and device_sparse come second.
    out = hvd.grouped_allreduce([tf.ones([2])], None, "", "", hvd.Compression.none, hvd.Sum,
                                name="k.grouped")
    assert np.allclose(out[0].numpy(), [N, N]), out


@test
def broadcast_in_place_writes_the_roots_values_into_the_variables():
    dtypes = (tf.uint8, tf.int8, tf.int16, tf.uint16, tf.int32, tf.int64, tf.float16,
              tf.bfloat16, tf.float32, tf.float64, tf.bool)
    for root in range(N):
        variables = [tf.Variable(tf.cast(tf.fill([3, 2], R + 1) % (2 if d == tf.bool else 99), d))
                     for d in dtypes]
        keras_variable = keras.Variable(np.full([4], float(R)))
        held = variables[-2].read_value()  # read before: keeps what it read
        out = hvd.broadcast_(variables + [keras_variable], root, name=f"inplace.{root}")
        for d, var, value in zip(dtypes, variables, out):
            want = np.full([3, 2], (root + 1) % (2 if d == tf.bool else 99))
            assert var.dtype == d and value.dtype == d, (d, var.dtype, value.dtype)
            assert (var.numpy().astype(np.int64) == want).all(), (d, root, var.numpy())
            assert (value.numpy().astype(np.int64) == want).all(), (d, root, value.numpy())
        assert (keras_variable.numpy() == root).all(), keras_variable.numpy()
        assert (held.numpy() == R + 1).all(), held.numpy()

    @tf.function
    def in_function(v):
        return hvd.broadcast_([v], N - 1, name="inplace.fn")[0] + 0

    v = tf.Variable([float(R)] * 5)
    assert (in_function(v).numpy() == N - 1).all() and (v.numpy() == N - 1).all(), v.numpy()
    try:
        hvd.broadcast_([tf.Variable([1.0])], 0, process_set=None, name="inplace.bad")
        hvd.broadcast_([tf.Variable(tf.constant(["a"]))], 0, name="inplace.string")
    except tf.errors.InvalidArgumentError as e:
        assert "unsupported dtype string" in str(e) and "inplace.string/0" in str(e), e
    else:
        raise AssertionError("a string variable was broadcast")


@test
def predivided_gradients_match_the_plain_average():
    plain, predivided = make_model(), make_model()
    fit(plain, khvd.DistributedOptimizer(keras.optimizers.SGD(0.1), name="plain"))
    fit(predivided, khvd.DistributedOptimizer(keras.optimizers.SGD(0.1), name="predivided",
                                              gradient_predivide_factor=4.0, num_groups=2))
    for a, b in zip(plain.get_weights(), predivided.get_weights()):
        assert_close(b, a, tf.float32, "predivided weights")
    w = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * w) * (R + 1)
    tape = hvd.DistributedGradientTape(tape, gradient_predivide_factor=2.0)
    assert_close(tape.gradient(loss, [w])[0], [2.0 * (N + 1) / 2, 4.0 * (N + 1) / 2],
                 tf.float32, "tape, predivided")


@test
def horovods_tf2_custom_loop_in_tf_function_trains_identical_replicas():
    model = make_model()
    if R:
        model.set_weights([w + R for w in model.get_weights()])  # rank 0's must win
    opt = keras.optimizers.SGD(0.05 * N)
    loss_fn = keras.losses.MeanSquaredError()

    @tf.function
    def training_step(x, y, first_batch):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        if first_batch:  # as Horovod's example: after the first step
            hvd.broadcast_variables(model.variables, root_rank=0)
            hvd.broadcast_variables(opt.variables, root_rank=0)
        return loss

    for step in range(STEPS):
        training_step(XR[step * B:(step + 1) * B], YR[step * B:(step + 1) * B], step == 0)
    same_on_every_rank([w.tolist() for w in model.get_weights()], "custom_loop.weights")


@test
def optimizer_refuses_what_it_cannot_do():
    for kwargs, fragment in (({"backward_passes_per_step": 0}, "backward_passes_per_step"),
                             ({"gradient_predivide_factor": 2.0, "op": hvd.Sum}, "op=Average"),
                             ({"gradient_predivide_factor": 0.0}, "> 0")):
        try:
            khvd.DistributedOptimizer(keras.optimizers.SGD(0.1), **kwargs)
        except ValueError as e:
            assert fragment in str(e), (kwargs, e)
        else:
            raise AssertionError(f"accepted {kwargs}")
    try:
        khvd.DistributedOptimizer(keras.optimizers.SGD(0.1), not_a_horovod_argument=1)
    except TypeError:
        pass
    else:
        raise AssertionError("accepted an unknown argument")
    # Not a Keras 3 optimizer (a tf.compat.v1 one, as tf_keras' would be):
    # refused, instead of every rank training alone.
    try:
        khvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1))
    except TypeError as e:
        assert "Keras 3 optimizer" in str(e), e
    else:
        raise AssertionError("accepted a tf.compat.v1 optimizer")


@test
def embedding_gradients_sparse_dense_and_predivided_match_one_process():
    def embed_model():
        m = keras.Sequential([keras.Input((2,), dtype="int32"), keras.layers.Embedding(6, 3),
                              keras.layers.Flatten(), keras.layers.Dense(1)])
        m.set_weights([np.random.default_rng(3).normal(size=w.shape).astype(np.float32)
                       for w in m.get_weights()])
        return m

    ids = np.random.default_rng(5).integers(0, 6, size=(N * B, 2)).astype(np.int32)
    target = np.random.default_rng(6).normal(size=(N * B, 1)).astype(np.float32)
    ref = embed_model()
    ref.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
    ref.fit(ids, target, batch_size=N * B, verbose=0)
    from ringscope.tensorflow import collectives

    real_allgather, gathers = collectives._allgather, []
    collectives._allgather = (lambda tensor, name, psid: gathers.append(name)
                              or real_allgather(tensor, name, psid))
    try:
        for i, kwargs in enumerate(({}, {"sparse_as_dense": True},
                                    {"gradient_predivide_factor": 3.0})):
            gathers.clear()
            m = embed_model()
            m.compile(optimizer=khvd.DistributedOptimizer(keras.optimizers.SGD(0.5),
                                                          name=f"embed{i}", **kwargs), loss="mse")
            m.fit(ids[R * B:(R + 1) * B], target[R * B:(R + 1) * B], batch_size=B, verbose=0)
            for a, b in zip(m.get_weights(), ref.get_weights()):
                assert_close(a, b, tf.float32, f"embedding model after one step, {kwargs}")
            # the embedding's IndexedSlices are allgathered unless sparse_as_dense
            assert bool(gathers) != bool(kwargs.get("sparse_as_dense")), (kwargs, gathers)
    finally:
        collectives._allgather = real_allgather


@test
def mixed_precision_loss_scaler_inside_survives_an_overflow_on_one_rank():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = make_model()
        opt = khvd.DistributedOptimizer(
            keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.01)), name="mixed")
        model.compile(optimizer=opt, loss="mse")
        assert model.optimizer is opt  # compile() saw a LossScaleOptimizer: no second one
        x = XR.copy()
        if R == N - 1:
            x[0] = 7e4  # inf in float16: only this rank's first gradients overflow
        model.fit(x, YR, batch_size=B, epochs=1, shuffle=False, verbose=0)
        # the reduced gradients overflowed on every rank: every rank skipped step 1
        scale = float(keras.ops.convert_to_numpy(opt.dynamic_scale))
        assert scale == 2.0 ** 14, scale
        same_on_every_rank([w.tolist() for w in model.get_weights()], "mixed.weights")

        wrong = make_model()
        wrong.compile(optimizer=khvd.DistributedOptimizer(keras.optimizers.SGD(0.01),
                                                          name="wrong"), loss="mse")
        try:
            wrong.fit(XR, YR, batch_size=B, epochs=1, verbose=0)
        except ValueError as e:
            assert "LossScaleOptimizer(opt)" in str(e), e
        else:
            raise AssertionError("a DistributedOptimizer inside compile()'s loss scaler trained")
    finally:
        keras.mixed_precision.set_global_policy("float32")


@test
def schedule_callback_sets_the_rate_per_epoch_and_per_batch():
    seen = []

    class Probe(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            seen.append(float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)))

    staircase = khvd.callbacks.LearningRateScheduleCallback(
        initial_lr=0.2, multiplier=lambda epoch: 0.5 ** epoch, start_epoch=1, end_epoch=3)
    hist = fit(make_model(), khvd.DistributedOptimizer(keras.optimizers.SGD(0.2), name="stair"),
               epochs=4, callbacks=[staircase, Probe()])
    per_epoch = [seen[e * STEPS:(e + 1) * STEPS] for e in range(4)]
    want = [0.2, 0.1, 0.05, 0.05]  # epoch 0 before start_epoch, epoch 3 at/after end_epoch
    for e in range(4):
        assert np.allclose(per_epoch[e], want[e]), (e, per_epoch[e])
    assert np.allclose(hist.history["lr"], [0.2, 0.1, 0.05, 0.05]), hist.history["lr"]

    seen.clear()
    smooth = khvd.callbacks.LearningRateScheduleCallback(
        initial_lr=None, multiplier=lambda epoch: 1.0 + epoch, staircase=False)
    fit(make_model(), khvd.DistributedOptimizer(keras.optimizers.SGD(0.1), name="smooth"),
        epochs=1, callbacks=[smooth, Probe()])  # initial_lr from the optimizer, steps from fit
    assert np.allclose(seen, [0.1 * (1.0 + b / STEPS) for b in range(STEPS)]), seen

    seen.clear()
    decay = khvd.callbacks.LearningRateScheduleCallback(initial_lr=0.4, multiplier=0.5,
                                                        start_epoch=1)
    fit(make_model(), khvd.DistributedOptimizer(keras.optimizers.SGD(0.4), name="decay"),
        epochs=3, callbacks=[decay, Probe()])  # a number: 0.5 ** (epoch - start_epoch)
    assert np.allclose(seen, [0.4] * STEPS + [0.4] * STEPS + [0.2] * STEPS), seen


@test
def warmup_finds_steps_per_epoch_itself_and_ends_at_the_rate():
    seen = []

    class Probe(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            seen.append(float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)))

    hist = fit(make_model(), khvd.DistributedOptimizer(keras.optimizers.SGD(0.3), name="warm"),
               epochs=3, callbacks=[khvd.callbacks.LearningRateWarmupCallback(0.3, 2), Probe()])
    want = [0.3 / N * ((e + (b + 1) / STEPS) * (N - 1) / 2 + 1)
            for e in range(2) for b in range(STEPS)]  # Horovod's: one batch ahead
    assert np.allclose(seen[:2 * STEPS], want), (seen, want)
    assert abs(seen[2 * STEPS - 1] - 0.3) < 1e-7, seen  # the last warm-up batch has the rate
    assert np.allclose(seen[2 * STEPS:], 0.3) and abs(hist.history["lr"][-1] - 0.3) < 1e-7


@test
def local_variables_are_not_broadcast():
    model = make_model()
    model.set_weights([w + R for w in model.get_weights()])
    local_bias = model.layers[1].bias
    fit(model, khvd.DistributedOptimizer(keras.optimizers.SGD(0.0), name="local"),
        callbacks=[khvd.callbacks.BroadcastGlobalVariablesCallback(0, local_variables=local_bias)])
    init = make_model().get_weights()
    kernel0, bias1 = model.get_weights()[0], model.get_weights()[3]
    assert_close(kernel0, init[0], tf.float32, "broadcast kernel (rank 0's)")
    assert_close(bias1, init[3] + R, tf.float32, "local bias (this rank's)")


@test
def load_model_wraps_the_saved_optimizer_and_keeps_its_state():
    path = os.path.join(SHARED_DIR, "model.keras")
    saved = make_model()  # built on every rank: Keras' automatic names stay in step
    saved.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    if R == 0:
        saved.fit(X, Y, batch_size=N * B, epochs=1, shuffle=False, verbose=0)
        saved.save(path)
    hvd.barrier()
    model = khvd.load_model(path)
    opt = model.optimizer
    assert getattr(opt, "_ringscope_distributed", False) and type(opt).__name__ == "Adam"
    lr = float(keras.ops.convert_to_numpy(opt.learning_rate))
    assert int(opt.iterations.numpy()) == STEPS and abs(lr - 0.01) < 1e-7, (opt.iterations, lr)
    assert float(np.abs(keras.ops.convert_to_numpy(opt.variables[2])).sum()) > 0  # moments kept
    model.fit(XR, YR, batch_size=B, epochs=1, shuffle=False, verbose=0)
    assert int(opt.iterations.numpy()) == 2 * STEPS
    weights = [w.tolist() for w in model.get_weights()]
    same_on_every_rank(weights, "loaded.weights")  # the same averaged gradients everywhere

    # saved while distributed (a checkpoint of a run): loads in plain Keras and again here
    again = os.path.join(SHARED_DIR, f"distributed.rank{R}.keras")
    model.save(again)
    plain = keras.models.load_model(again)
    assert not getattr(plain.optimizer, "_ringscope_distributed", False)
    assert int(plain.optimizer.iterations.numpy()) == 2 * STEPS
    reloaded = khvd.load_model(again)
    assert getattr(reloaded.optimizer, "_ringscope_distributed", False)

    # saved without an optimizer, or compiled and never trained: loads as it is
    bare = os.path.join(SHARED_DIR, f"bare.rank{R}.keras")
    make_model().save(bare)
    assert getattr(khvd.load_model(bare), "optimizer", None) is None
    fresh = make_model()
    fresh.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    fresh.save(bare)
    assert getattr(khvd.load_model(bare).optimizer, "_ringscope_distributed", False)


@test
def broadcast_variables_leaves_each_rank_its_own_dropout_stream():
    # Keras 3's Layer.variables holds each SeedGenerator's state; copied from
    # root, every rank would draw the same dropout masks.
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3),
                              keras.layers.Dropout(0.5, seed=100 + R)])
    seeds = [v for v in model.variables if v.name == "seed_generator_state"]
    assert seeds, [v.name for v in model.variables]
    hvd.broadcast_variables(model.variables, root_rank=0)
    same_on_every_rank([w.tolist() for w in model.get_weights()[:2]], "kernel and bias")
    mine = seeds[0].numpy().tolist()
    gathered = hvd.allgather_object(mine, name="seeds.own")
    assert N == 1 or len({str(g) for g in gathered}) == N, gathered
    hvd.broadcast_variables(model.variables, root_rank=0, include_rng_state=True)
    assert len({str(g) for g in hvd.allgather_object(seeds[0].numpy().tolist(),
                                                       name="seeds.copied")}) == 1


@test
def metric_average_averages_per_class_arrays_too():
    logs = {"loss": float(R), "f1": np.array([R, 2.0 * R], np.float32), "name": "x"}
    khvd.callbacks.MetricAverageCallback().on_epoch_end(0, logs)
    mean = (N - 1) / 2
    assert abs(logs["loss"] - mean) < 1e-9, logs
    assert logs["f1"].dtype == np.float32 and np.allclose(logs["f1"], [mean, 2 * mean]), logs
    assert logs["name"] == "x"



@test
def distributed_optimizer_keeps_what_get_config_leaves_out():
    class Halving(keras.optimizers.schedules.LearningRateSchedule):  # no get_config
        def __call__(self, step):
            return 0.1 * 0.5 ** keras.ops.cast(step, "float32")

    schedule = Halving()
    opt = keras.optimizers.AdamW(schedule, weight_decay=0.01)
    opt.exclude_from_weight_decay(var_names=["bias"])
    wrapped = khvd.DistributedOptimizer(opt)
    assert wrapped._learning_rate is schedule and opt._learning_rate is schedule
    assert wrapped._exclude_from_weight_decay_pattern.pattern == "bias"
    dense = keras.layers.Dense(2)
    dense.build((None, 3))
    wrapped.build(dense.trainable_variables)
    assert not wrapped._use_weight_decay(dense.bias) and wrapped._use_weight_decay(dense.kernel)
    # The same inside a LossScaleOptimizer (mixed precision): its inner
    # optimizer keeps the live schedule and the exclusions.
    scaled = khvd.DistributedOptimizer(
        keras.optimizers.LossScaleOptimizer(opt, initial_scale=256.0, dynamic_growth_steps=7))
    assert isinstance(scaled, keras.optimizers.LossScaleOptimizer)
    assert scaled.initial_scale == 256.0 and scaled.dynamic_growth_steps == 7
    inner = scaled.inner_optimizer
    assert inner is not opt and inner._learning_rate is schedule
    assert inner._exclude_from_weight_decay_pattern.pattern == "bias"



@test
def horovod_arguments_and_names_a_porting_script_uses():
    # Horovod's argument order and TF1-era arguments that change nothing here
    rows = hvd.reducescatter(tf.ones([N, 2]), "", hvd.Compression.none, hvd.Sum, name="port/rs")
    assert rows.numpy().tolist() == [[N, N]], rows
    assert hvd.allgather_object(R, None, name="port/ago") == list(range(N))
    hvd.SyncBatchNormalization(fused=False)
    for module in (hvd, khvd):
        for name, what in (("Adasum", "Adasum"), ("elastic", "elastic"),
                           ("BroadcastGlobalVariablesHook", "TF1 session hooks")):
            assert not hasattr(module, name)
            try:
                getattr(module, name)
                raise AssertionError(f"{module.__name__}.{name} exists")
            except AttributeError as e:
                assert what in str(e) and "does not provide" in str(e), e
                assert module.__name__ in str(e), e


hvd.barrier()
if R == 0:
    shutil.rmtree(SHARED_DIR, ignore_errors=True)
@test
def partial_tape_keeps_the_gradients_of_local_layers_on_their_rank():
    shared = tf.keras.layers.Dense(2, kernel_initializer="ones", use_bias=False)
    local = tf.keras.layers.Dense(1, kernel_initializer="ones", use_bias=False)
    x = tf.constant([[float(R + 1)] * 3])
    for scale in (True, False):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(local(shared(x)))
        tape = hvd.PartialDistributedGradientTape(tape, local_layers=local,
                                                  scale_local_gradients=scale)
        g_shared, g_local = tape.gradient(loss, [shared.kernel, local.kernel])
        # d loss / d shared = R + 1 everywhere, averaged over ranks.
        assert_close(g_shared.numpy(), np.full((3, 2), (N + 1) / 2), tf.float32, "shared")
        # d loss / d local = the hidden activations 3 (R + 1), this rank's own.
        want = 3.0 * (R + 1) / (N if scale else 1)
        assert_close(g_local.numpy(), np.full((2, 1), want), tf.float32, f"local, scale={scale}")
    try:
        hvd.PartialDistributedGradientTape(tf.GradientTape(), local_layers=[shared.kernel])
        raise AssertionError("a variable as a local layer was accepted")
    except ValueError as e:
        assert "Keras layers" in str(e), e


finish()
