"""Keras under mpirun (np=2): model.fit with DistributedOptimizer ends with the
same weights as one process training on the combined batches; the callbacks
broadcast initial weights, average metrics and warm up the learning rate;
tracing from Python gives a trace whose tensors carry the variable names and
that passes `ringscope-trace check`."""

import os
import sqlite3
import subprocess
import sys
import tempfile

import keras

from harness import assert_close, finish, hvd, np, test, tf

hvd.init()
R, N = hvd.rank(), hvd.size()
B, STEPS = 8, 6
rng = np.random.default_rng(7)
X = rng.normal(size=(N * B * STEPS, 5)).astype(np.float32)
Y = (X @ rng.normal(size=(5, 1)) + 0.1).astype(np.float32)


def make_model():
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(4, activation="tanh"),
                              keras.layers.Dense(1)])
    init = np.random.default_rng(1)
    model.set_weights([init.normal(size=w.shape).astype(np.float32) for w in model.get_weights()])
    return model


def fit_with_broadcast_and_compare_weights(model, tag):
    """One epoch of fit with BroadcastGlobalVariablesCallback(0); then every
    rank's weights must be the same."""
    xr, yr = rank_batches(R)
    model.fit(xr, yr, batch_size=B, epochs=1, shuffle=False, verbose=0,
              callbacks=[hvd.BroadcastGlobalVariablesCallback(0)])
    for i, w in enumerate(model.get_weights()):
        every = hvd.allgather(tf.constant(w[None]), name=f"probe.{tag}.{i}").numpy()
        for r in range(1, N):
            assert_close(every[r], every[0], tf.float32, f"weight {i} on rank {r}")


def rank_batches(r):
    """Rank r's samples: its B-sized slice of every combined batch of N*B."""
    idx = np.concatenate([np.arange(s * N * B + r * B, s * N * B + (r + 1) * B)
                          for s in range(STEPS)])
    return X[idx], Y[idx]


@test
def fit_matches_single_process_training_on_combined_batches():
    model = make_model()
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=0.05))
    model.compile(optimizer=opt, loss="mse")
    xr, yr = rank_batches(R)
    model.fit(xr, yr, batch_size=B, epochs=1, shuffle=False, verbose=0)

    reference = make_model()
    reference.compile(optimizer=keras.optimizers.SGD(learning_rate=0.05), loss="mse")
    reference.fit(X, Y, batch_size=N * B, epochs=1, shuffle=False, verbose=0)
    for got, want in zip(model.get_weights(), reference.get_weights()):
        assert_close(got, want, tf.float32, "weights after fit")


@test
def callbacks_broadcast_average_and_warm_up():
    model = make_model()
    if R != 0:  # diverge, then the callback must restore rank 0's weights
        model.set_weights([w + R for w in model.get_weights()])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(learning_rate=0.1)),
                  loss="mse")
    seen = {}

    class Probe(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            if batch == 0 and "w0" not in seen:
                seen["w0"] = self.model.get_weights()[0].copy()
                seen["lr0"] = float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))

    xr, yr = rank_batches(R)
    hist = model.fit(xr, yr, batch_size=B, epochs=2, shuffle=False, verbose=0, callbacks=[
        hvd.BroadcastGlobalVariablesCallback(0), hvd.MetricAverageCallback(),
        hvd.LearningRateWarmupCallback(initial_lr=0.1, warmup_epochs=2, steps_per_epoch=STEPS),
        Probe()])
    w0_all = hvd.allgather(tf.constant(seen["w0"][None]), name="probe.w0").numpy()
    for r in range(N):
        assert_close(w0_all[r], w0_all[0], tf.float32, "initial weights broadcast")
    # warm-up starts near lr/size: batch 0 gets the rate of epoch 1/STEPS (as in Horovod)
    assert abs(seen["lr0"] - 0.1 / N * ((N - 1) / (2 * STEPS) + 1)) < 1e-6, seen["lr0"]
    losses = hvd.allgather(tf.constant([hist.history["loss"][-1]]), name="probe.loss").numpy()
    assert np.allclose(losses, losses[0]), losses  # averaged metric, same on every rank


@test
def broadcast_callback_when_only_rank_0_built_the_model():
    # Horovod's resume pattern: rank 0 loads (a built model), the others
    # build a fresh one that is not built until its first batch. Deciding
    # alone, rank 0 would broadcast at the start of training and wait forever.
    keras.utils.set_random_seed(11 + R)
    model = keras.Sequential([keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(1)])
    if R == 0:
        model(tf.zeros([1, 5]))
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse")
    fit_with_broadcast_and_compare_weights(model, "built")


def shared_temp_dir(name):
    """A directory made by rank 0, its path broadcast to every rank."""
    raw = np.zeros(256, np.uint8)
    if R == 0:
        path = tempfile.mkdtemp(prefix="rs-tf-trace-").encode()
        raw[: len(path)] = np.frombuffer(path, np.uint8)
    raw = hvd.broadcast(tf.constant(raw), 0, name=name).numpy()
    return bytes(raw[raw != 0]).decode()


@test
def resume_from_a_model_loaded_on_rank_0_only():
    # Horovod's resume pattern with a Sequential model: rank 0 loads the
    # checkpoint, the others build and compile afresh. The loaded model's
    # variable paths lack the "sequential/" the built one has; gradients and
    # broadcasts must match across ranks anyway (they waited forever).
    directory = shared_temp_dir("resume.dir")
    path = os.path.join(directory, "resume.keras")

    def build():
        keras.utils.set_random_seed(5 + R)
        model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3, activation="tanh"),
                                  keras.layers.Dense(1)])
        model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)), loss="mse")
        return model

    if R == 0:
        build().save(path)
    hvd.barrier()
    model = hvd.keras.load_model(path) if R == 0 else build()
    fit_with_broadcast_and_compare_weights(model, "resume")


@test
def an_eager_group_is_submitted_together():
    # Eagerly each op waits for its result, so ops submitted one by one never
    # overlap: the last of a group would be submitted after the first one
    # completed, in every call. Submitted together, they overlap in (nearly)
    # every call.
    base = os.path.join(shared_temp_dir("probe.dir.eager"), "eager.sqlite")
    hvd.start_trace(base)
    for call in range(20):
        hvd.grouped_allreduce([tf.ones([256]) * i for i in range(5)], op=hvd.Sum,
                              name=f"together.{call}")
    hvd.stop_trace()
    trace = sqlite3.connect(base.replace(".sqlite", f".rank{R}.sqlite"))
    overlapped = 0
    for call in range(20):
        (last_enqueue,) = trace.execute(
            "SELECT max(e.start_ns) FROM events e JOIN strings s ON s.id = e.name_id "
            "WHERE e.kind = 2 AND s.text LIKE ?", (f"together.{call}/%",)).fetchone()
        (first_done,) = trace.execute(
            "SELECT min(c.start_ns + c.dur_ns) FROM events c WHERE c.kind = 18 AND c.cycle IN "
            "(SELECT e.cycle FROM events e JOIN strings s ON s.id = e.name_id "
            "WHERE e.kind = 3 AND s.text LIKE ?)", (f"together.{call}/%",)).fetchone()
        overlapped += last_enqueue is not None and first_done is not None and \
            last_enqueue < first_done
    assert overlapped >= 10, f"{overlapped} of 20 eager groups were submitted together"


@test
def python_tracing_records_variable_names_and_passes_check():
    base = os.path.join(shared_temp_dir("probe.dir"), "keras.sqlite")
    hvd.start_trace(base)
    model = make_model()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse")
    xr, yr = rank_batches(R)
    model.fit(xr, yr, batch_size=B, epochs=1, shuffle=False, verbose=0,
              callbacks=[hvd.StepMarkCallback()])
    hvd.stop_trace()
    hvd.allreduce(tf.constant(0), name="probe.barrier")
    if R == 0:
        tool = os.environ.get("RINGSCOPE_TRACE_TOOL", "build/bin/ringscope-trace")
        check = subprocess.run([tool, "check", base], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        names = subprocess.run([tool, "sql", base,
                                "SELECT DISTINCT s.text FROM events e JOIN strings s "
                                "ON s.id = e.name_id WHERE e.kind = 2"],
                               capture_output=True, text=True).stdout
        assert "DistributedOptimizer/0/dense" in names and "/kernel" in names, names
        out = subprocess.run([tool, "sql", base, "SELECT count(*) FROM events WHERE kind = 17"],
                             capture_output=True, text=True)
        # one table per rank's file: a header line, then that rank's STEP count
        counts = [int(line.split()[0]) for line in out.stdout.splitlines()
                  if line.strip().isdigit()]
        assert out.returncode == 0 and counts == [STEPS] * N, out.stdout + out.stderr



@test
def eager_groups_trace_one_enqueue_per_tensor_under_its_name():
    # An eager group is one op, its member names registered once (not an
    # attr per call): each tensor is still its own op in the trace.
    base = os.path.join(shared_temp_dir("probe.dir"), "eager_group.sqlite")
    hvd.start_trace(base)
    vs = [tf.Variable(tf.ones([3]) * i, name=f"group_var{i}") for i in range(5)]
    for _ in range(3):
        with tf.GradientTape() as tape:
            loss = tf.add_n([tf.reduce_sum(v) for v in vs])
        grads = hvd.DistributedGradientTape(tape).gradient(loss, vs)
        assert all(float(g[0]) == 1.0 for g in grads), grads
    hvd.grouped_allreduce([tf.ones([2])] * 4, name="eager.group")
    hvd.stop_trace()
    hvd.allreduce(tf.constant(0), name="probe.barrier.group")
    if R == 0:
        tool = os.environ.get("RINGSCOPE_TRACE_TOOL", "build/bin/ringscope-trace")
        out = subprocess.run([tool, "sql", base,
                              "SELECT s.text, count(*) FROM events e JOIN strings s "
                              "ON s.id = e.name_id WHERE e.kind = 2 GROUP BY s.text"],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        counts = {}
        for line in out.stdout.splitlines():
            parts = line.split("|")
            if len(parts) == 2 and parts[1].strip().isdigit():
                counts.setdefault(parts[0].strip(), []).append(int(parts[1]))
        for i in range(5):
            found = [n for n in counts if n.startswith(f"DistributedGradientTape/{i}/group_var{i}")]
            assert found and counts[found[0]] == [3] * N, (i, counts)
        for i in range(4):
            assert counts.get(f"eager.group/{i}") == [1] * N, counts


@test
def partial_distributed_optimizer_keeps_local_layers_on_their_rank():
    keras.utils.set_random_seed(3)
    shared = keras.layers.Dense(4, activation="tanh", name="shared")
    head = keras.layers.Dense(1, name="local_head")
    model = keras.Sequential([keras.Input((5,)), shared, head])
    opt = hvd.keras.PartialDistributedOptimizer(keras.optimizers.SGD(0.05), local_layers=head)
    model.compile(optimizer=opt, loss="mse")
    hvd.broadcast_variables(model.variables, root_rank=0)
    x = X[R * B:(R + 1) * B]
    model.fit(x, Y[R * B:(R + 1) * B] * (R + 1), batch_size=B, epochs=3, verbose=0)
    for layer, same in ((shared, True), (head, False)):
        every = hvd.allgather(tf.expand_dims(layer.kernel, 0),
                              name=f"partial/{layer.name}").numpy()
        identical = all(np.allclose(every[0], e) for e in every[1:])
        assert identical == same, f"{layer.name}: identical on every rank is {identical}"


@test
def xla_compiled_collectives_are_refused_and_the_callbacks_turn_xla_off():
    # A collective in a jit_compile=True function: a clear error, not
    # TensorFlow's "unsupported op" from deep inside the compiler.
    @tf.function(jit_compile=True)
    def compiled(x):
        return hvd.allreduce(x, name="xla.refused")

    try:
        compiled(tf.ones([2]))
        raise AssertionError("an allreduce inside XLA was accepted")
    except ValueError as e:
        assert "jit_compile=False" in str(e) and "xla.refused" in str(e), e
    # Keras 3 compiles with XLA by default on GPU machines; the callbacks
    # turn it off, so fit trains with DistributedOptimizer.
    model = make_model()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse",
                  jit_compile=True)
    xr, yr = rank_batches(R)
    model.fit(xr, yr, batch_size=B, epochs=1, shuffle=False, verbose=0,
              callbacks=[hvd.BroadcastGlobalVariablesCallback(0)])
    assert model.jit_compile is False
    assert not hvd.SyncBatchNormalization().supports_jit


@test
def broadcast_callback_leaves_each_rank_its_own_dropout_masks():
    keras.utils.set_random_seed(11 + R)  # different seeds, as separate processes have
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(64),
                              keras.layers.Dropout(0.5), keras.layers.Dense(1)])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.0)), loss="mse")
    xr, yr = rank_batches(R)
    model.fit(xr, yr, batch_size=B, epochs=1, shuffle=False, verbose=0,
              callbacks=[hvd.BroadcastGlobalVariablesCallback(0)])
    seed = [v for v in model.variables if v.name == "seed_generator_state"]
    assert seed, [v.path for v in model.variables]
    every = hvd.allgather(tf.expand_dims(tf.cast(seed[0], tf.int64), 0),
                          name="dropout.seed").numpy()
    assert len({tuple(row.ravel()) for row in every}) == N, every  # each rank its own
    kernels = hvd.allgather(tf.expand_dims(model.layers[0].kernel, 0), name="dropout.w").numpy()
    assert all(np.allclose(kernels[0], k) for k in kernels[1:])  # the weights are root's


finish()
