"""SyncBatchNormalization under mpirun (np=2 and 3): ranks hold batches of
different sizes (rank r has r + 2 rows); in training the layer's output,
its moving statistics and the gradients (of every rank's loss together,
with respect to this rank's inputs and the layer's weights) are those of
one BatchNormalization over the global batch; at inference it uses the
moving statistics; a mask weights the statistics; under tf.function too;
a mean of 1e4 beside a spread of 1 keeps its variance (float32)."""

import numpy as np
import tensorflow as tf

from harness import assert_close, finish, hvd, test

hvd.init()
R, N = hvd.rank(), hvd.size()
C = 3


def batch(rank, rows=None):
    rng = np.random.default_rng(100 + rank)
    rows = rank + 2 if rows is None else rows
    return (rng.normal(size=(rows, 4, C)) * (rank + 1) + rank).astype(np.float32)


def global_batch():
    return np.concatenate([batch(r) for r in range(N)])


def my_rows():
    start = sum(r + 2 for r in range(R))
    return slice(start, start + R + 2)


def loss_weights(rows):
    return tf.constant(np.linspace(-1.0, 2.0, rows * 4 * C).reshape(rows, 4, C), tf.float32)


def layers():
    kwargs = dict(momentum=0.5, epsilon=1e-3, beta_initializer="ones",
                  gamma_initializer=tf.keras.initializers.Constant(2.0))
    return hvd.SyncBatchNormalization(**kwargs), tf.keras.layers.BatchNormalization(**kwargs)


@test
def training_output_and_moving_statistics_are_the_global_batch():
    sync, plain = layers()
    x = tf.constant(batch(R))
    everything = tf.constant(global_batch())
    got = sync(x, training=True)
    want = plain(everything, training=True).numpy()[my_rows()]
    assert_close(got.numpy(), want, tf.float32, "output")
    assert_close(sync.moving_mean.numpy(), plain.moving_mean.numpy(), tf.float32, "moving mean")
    assert_close(sync.moving_variance.numpy(), plain.moving_variance.numpy(), tf.float32,
                 "moving variance")
    # Inference: the moving statistics, no allreduce (rank-local input).
    assert_close(sync(x, training=False).numpy(), plain(x, training=False).numpy(), tf.float32,
                 "inference")


@test
def a_large_mean_next_to_a_small_spread_keeps_its_variance():
    # E[x^2] - E[x]^2 in float32 (Horovod's formula) gives 0 or 8 here, not ~1-9.
    sync, plain = layers()
    shift = np.float32(1e4)
    sync(tf.constant(batch(R) + shift), training=True)
    plain(tf.constant(global_batch() + shift), training=True)
    # Both are float32 sums over values near 1e4 (an ulp there is 1e-3), so
    # they agree to ~1e-4, not to float32's last bits; the old formula was
    # off by whole units.
    np.testing.assert_allclose(sync.moving_variance.numpy(), plain.moving_variance.numpy(),
                               rtol=1e-3, err_msg="variance beside a mean of 1e4")
    np.testing.assert_allclose(sync.moving_mean.numpy(), plain.moving_mean.numpy(), rtol=1e-6,
                               err_msg="mean of 1e4")


@test
def gradients_are_those_of_the_global_batch():
    sync, plain = layers()
    x = tf.constant(batch(R))
    everything = tf.constant(global_batch())
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        local_loss = tf.reduce_sum(sync(x, training=True) * loss_weights(R + 2))
    dx = tape.gradient(local_loss, x)
    dgamma = hvd.allreduce(tape.gradient(local_loss, sync.gamma), op=hvd.Sum, name="bn.dgamma")
    with tf.GradientTape() as tape2:
        tape2.watch(everything)
        out = plain(everything, training=True)
        # Every rank's loss together: each rank's slice with its own weights.
        total = tf.add_n([tf.reduce_sum(out[sum(q + 2 for q in range(r)):][:r + 2] *
                                        loss_weights(r + 2)) for r in range(N)])
    dall, dgamma_want = tape2.gradient(total, [everything, plain.gamma])
    assert_close(dx.numpy(), dall.numpy()[my_rows()], tf.float32, "d loss / d input")
    assert_close(dgamma.numpy(), dgamma_want.numpy(), tf.float32, "d loss / d gamma")


@test
def a_mask_weights_the_statistics_and_tf_function_works():
    sync, plain = layers()
    x = tf.constant(batch(R))
    mask = np.ones((R + 2, 4), bool)
    mask[:, 3] = False  # the last position of every row is padding, NaN here
    x = tf.tensor_scatter_nd_update(x, [[i, 3, c] for i in range(R + 2) for c in range(C)],
                                    [np.nan] * ((R + 2) * C))
    step = tf.function(lambda v, m: sync(v, training=True, mask=m))
    got = step(x, tf.constant(mask)).numpy()
    kept = global_batch()[:, :3, :]
    plain(tf.constant(kept), training=True)  # the statistics of the unmasked values
    assert_close(sync.moving_mean.numpy(), plain.moving_mean.numpy(), tf.float32, "masked mean")
    assert_close(sync.moving_variance.numpy(), plain.moving_variance.numpy(), tf.float32,
                 "masked variance")
    assert got.shape == x.shape
    assert np.isfinite(got[:, :3]).all()


@test
def trains_with_fit_and_loads_from_a_saved_model():
    import os
    import tempfile

    tf.keras.utils.set_random_seed(1)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4, C)), hvd.SyncBatchNormalization(),
                                 tf.keras.layers.Flatten(), tf.keras.layers.Dense(1)])
    model.compile(optimizer=hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.01)), loss="mse")
    hvd.broadcast_variables(model.variables, root_rank=0)
    x = batch(R, rows=16)
    history = model.fit(x, np.zeros((16, 1), np.float32), batch_size=8, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    # Every rank saw the global statistics: the moving means agree.
    bn = model.layers[0]
    every = hvd.allgather(tf.expand_dims(bn.moving_mean, 0), name="bn.moving_means").numpy()
    assert np.allclose(every, every[0], atol=1e-5), every
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, f"m{R}.keras")
        model.save(path)
        loaded = tf.keras.models.load_model(path)
    assert type(loaded.layers[0]).__name__ == "SyncBatchNormalization"
    assert_close(loaded.layers[0].moving_mean.numpy(), bn.moving_mean.numpy(), tf.float32,
                 "loaded moving mean")


finish()
