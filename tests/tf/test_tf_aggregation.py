"""Local gradient aggregation under mpirun (np=2 and 3): with
backward_passes_per_step=4, DistributedOptimizer (model.fit) and
DistributedGradientTape (eager and in a tf.function) train to the weights
of the same model trained on batches 4 times larger, dense and sparse
(Embedding) gradients alike; Horovod's counting: every step counts in
iterations, only every 4th applies, the pass counter is steps mod 4; a sum
is cleared after its allreduce (an infinite gradient in one round does not
reach the next); aggregation allreduces once per 4 passes."""

import keras

from harness import assert_close, finish, hvd, np, test, tf

hvd.init()
R, N = hvd.rank(), hvd.size()
PASSES, B, UPDATES = 4, 6, 3  # micro-batch B per pass; UPDATES applied steps
rng = np.random.default_rng(3)
SAMPLES = N * PASSES * B * UPDATES
IDS = rng.integers(0, 12, size=(SAMPLES, 3)).astype(np.int32)
Y = rng.normal(size=(SAMPLES, 1)).astype(np.float32)


def make_model():
    """Sparse (the Embedding's) and dense gradients, with fixed weights."""
    model = keras.Sequential([keras.Input((3,), dtype="int32"), keras.layers.Embedding(12, 4),
                              keras.layers.Flatten(), keras.layers.Dense(4, activation="tanh"),
                              keras.layers.Dense(1)])
    init = np.random.default_rng(1)
    model.set_weights([init.normal(size=w.shape).astype(np.float32) for w in model.get_weights()])
    return model


def rank_samples(r):
    """Rank r's samples: for every update, its PASSES micro-batches in
    order. A larger batch of PASSES*B on this rank is the same samples."""
    big = PASSES * B
    idx = np.concatenate([np.arange(u * N * big + r * big, u * N * big + (r + 1) * big)
                          for u in range(UPDATES)])
    return IDS[idx], Y[idx]


def larger_batch_weights():
    """Plain DistributedOptimizer, one step per PASSES micro-batches."""
    model = make_model()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.1)), loss="mse")
    x, y = rank_samples(R)
    model.fit(x, y, batch_size=PASSES * B, epochs=1, shuffle=False, verbose=0)
    return model.get_weights()


REFERENCE = larger_batch_weights()


def assert_reference_weights(model, what):
    for i, (got, want) in enumerate(zip(model.get_weights(), REFERENCE)):
        assert_close(got, want, tf.float32, f"{what}: weight {i}")


@test
def fit_with_aggregation_matches_the_larger_batch():
    for average, rate in ((True, 0.1), (False, 0.1 / PASSES)):
        model = make_model()
        opt = hvd.DistributedOptimizer(keras.optimizers.SGD(rate),
                                       backward_passes_per_step=PASSES,
                                       average_aggregated_gradients=average)
        model.compile(optimizer=opt, loss="mse")
        x, y = rank_samples(R)
        model.fit(x, y, batch_size=B, epochs=1, shuffle=False, verbose=0)
        assert_reference_weights(model, f"fit, average_aggregated_gradients={average}")
        assert int(opt.iterations.numpy()) == PASSES * UPDATES, opt.iterations.numpy()
        assert int(opt._agg_helper.counter.numpy()) == 0


def tape_training(in_function):
    """A custom loop: a new tape each pass, applied every PASSES-th."""
    model = make_model()
    opt = keras.optimizers.SGD(0.1)
    x, y = rank_samples(R)

    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(xb) - yb))
        tape = hvd.DistributedGradientTape(tape, backward_passes_per_step=PASSES,
                                           average_aggregated_gradients=True)
        return tape.gradient(loss, model.trainable_variables)

    step_fn = tf.function(step) if in_function else step
    for p in range(PASSES * UPDATES):
        grads = step_fn(x[p * B:(p + 1) * B], y[p * B:(p + 1) * B])
        if (p + 1) % PASSES == 0:
            opt.apply_gradients(zip(grads, model.trainable_variables))
    return model


@test
def tape_with_aggregation_matches_the_larger_batch_eagerly():
    assert_reference_weights(tape_training(in_function=False), "eager tape")


@test
def tape_with_aggregation_matches_the_larger_batch_in_a_function():
    assert_reference_weights(tape_training(in_function=True), "tf.function tape")


@test
def every_step_counts_and_only_every_nth_applies():
    x = tf.Variable([1.0])
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0), backward_passes_per_step=2)
    values = []
    for step in range(5):
        grads_and_vars = opt._compute_gradients(lambda: x * float(R + 1), var_list=[x])
        opt.apply_gradients(grads_and_vars)
        values.append(float(x.numpy()[0]))
        assert int(opt.iterations.numpy()) == step + 1
        assert int(opt._agg_helper.counter.numpy()) == (step + 1) % 2
    # Each applied update is the sum of 2 passes of the ranks' mean gradient.
    mean = sum(r + 1 for r in range(N)) / N
    want = [1.0, 1.0 - 2 * mean, 1.0 - 2 * mean, 1.0 - 4 * mean, 1.0 - 4 * mean]
    assert np.allclose(values, want), (values, want)


@test
def a_sum_is_cleared_after_its_allreduce():
    # Horovod's test: an infinite gradient in the first round must not
    # reach the second.
    x = tf.Variable(0.0)
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(), backward_passes_per_step=2)
    seen = {"passes": 0}

    def loss():
        seen["passes"] += 1
        return x * float("inf") if seen["passes"] == 1 else x

    for _ in range(4):
        grads_and_vars = opt._compute_gradients(loss, var_list=[x])
        opt.apply_gradients(grads_and_vars)
    assert bool(tf.math.is_finite(grads_and_vars[0][0])), grads_and_vars[0][0]


@test
def aggregation_allreduces_once_per_n_passes():
    # Eight passes of a one-variable model, N=4: two reductions.
    x = tf.Variable([2.0])
    calls = []
    real = hvd.gradient_tape.GradientReduction.reduce

    def counting(self, grads, variables, prefix):
        calls.append(len(grads))
        return real(self, grads, variables, prefix)

    hvd.gradient_tape.GradientReduction.reduce = counting
    try:
        for _ in range(8):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(x * x)
            hvd.DistributedGradientTape(tape, backward_passes_per_step=4).gradient(loss, [x])
    finally:
        hvd.gradient_tape.GradientReduction.reduce = real
    assert calls == [1, 1], calls


@test
def a_bad_count_is_refused():
    for bad in (0, -1, 1.5):
        try:
            hvd.DistributedOptimizer(keras.optimizers.SGD(), backward_passes_per_step=bad)
        except ValueError as e:
            assert "backward_passes_per_step" in str(e), e
        else:
            raise AssertionError(f"backward_passes_per_step={bad} accepted")


finish()
