"""Training when the ranks' shares of the data differ: each rank gets an
uneven shard of scikit-learn's bundled digits (no download), runs as many
batches as its shard holds, and calls ``hvd.join()`` when its data runs
out. Until every rank has joined, the joined ranks stand in for the
others' gradient allreduces, so the ranks with more data finish their
epoch instead of stalling; ``join`` returns the rank that joined last, and
its weights (the only ones that saw every update) are broadcast to all.
A SyncBatchNormalization layer normalises over every rank's batch.

    ringscope run -np 3 -- python examples/tf_uneven_data_join.py
    ringscope run -np 3 --trace /tmp/uneven -- python examples/tf_uneven_data_join.py   # JOIN spans in: ringscope view /tmp/uneven

It exits non-zero if the loss did not fall, a join returned the wrong
rank, or the ranks' weights differ at the end.
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

import ringscope.tensorflow as hvd  # noqa: E402


def uneven_shard(x, y, rank, size):
    """Rank r gets a share proportional to r + 1: the last rank the most."""
    weights = np.arange(1, size + 1, dtype=np.float64)
    bounds = np.concatenate([[0], np.cumsum(weights / weights.sum())]) * len(x)
    lo, hi = int(bounds[rank]), int(bounds[rank + 1])
    return x[lo:hi], y[lo:hi]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(x))
    x, y = uneven_shard(x[order], y[order], rank, size)

    tf.keras.utils.set_random_seed(1)
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(64,)),
        tf.keras.layers.Dense(64),
        hvd.SyncBatchNormalization(),
        tf.keras.layers.ReLU(),
        tf.keras.layers.Dense(10),
    ])
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = tf.keras.optimizers.SGD(0.05 * size)
    hvd.broadcast_variables(model.variables, root_rank=0)

    @tf.function
    def train_step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    first_loss = last_loss = None
    for epoch in range(args.epochs):
        losses = [float(train_step(x[i:i + args.batch_size], y[i:i + args.batch_size]))
                  for i in range(0, len(x) - args.batch_size + 1, args.batch_size)]
        last = int(hvd.join())  # this rank's data ran out; wait for the others
        if last != size - 1:
            raise SystemExit(f"rank {rank}: join returned {last}, want {size - 1} (most data)")
        hvd.broadcast_variables(model.variables, root_rank=last)
        mean_loss = float(hvd.allreduce(tf.constant(np.mean(losses)), name=f"loss.{epoch}"))
        first_loss = mean_loss if first_loss is None else first_loss
        last_loss = mean_loss
        if rank == 0:
            print(f"epoch {epoch}: {len(losses)} batches on rank 0, rank {last} joined last, "
                  f"mean loss {mean_loss:.3f}", flush=True)

    for i, v in enumerate(model.variables):
        every = hvd.allgather(tf.expand_dims(v, 0), name=f"check/{i}").numpy()
        if not np.allclose(every, every[0]):
            raise SystemExit(f"rank {rank}: variable {i} differs across ranks")
    if not last_loss < first_loss:
        raise SystemExit(f"rank {rank}: loss did not fall ({first_loss:.3f} -> {last_loss:.3f})")
    if rank == 0:
        print(f"ok: loss {first_loss:.3f} -> {last_loss:.3f}, weights identical on {size} ranks")
    hvd.shutdown()


if __name__ == "__main__":
    main()
