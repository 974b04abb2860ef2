"""Expert parallelism with alltoall: a mixture-of-experts classifier whose
experts live one per rank. Each token (a digit image of scikit-learn's
bundled digits, no download) is sent to the rank of the expert its gate
chose with ``hvd.alltoall``, transformed there, and sent back with the
received splits; the gradient travels the same routes back (ringscope's
alltoall gradient). Shared weights (input layer, gate, classifier) are
averaged over ranks; each expert's weights stay on its rank.

    ringscope run -np 2 -- python examples/tf_moe_alltoall.py
    ringscope run -np 2 --trace /tmp/moe -- python examples/tf_moe_alltoall.py   # then: ringscope view /tmp/moe

It exits non-zero if training did not lower the loss, the ranks' shared
weights differ at the end, or the gate sends every token to one expert.
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

import ringscope.tensorflow as hvd  # noqa: E402


class MixtureOfExperts:
    """Shared: input layer, gate, classifier. Local: this rank's expert."""

    def __init__(self, hidden, classes, experts, rank):
        keras.utils.set_random_seed(1234)  # shared weights start alike (and are broadcast)
        self.inputs = keras.layers.Dense(hidden, activation="relu")
        self.gate = keras.layers.Dense(experts)
        self.classifier = keras.layers.Dense(classes)
        for layer, width in ((self.inputs, 64), (self.gate, hidden), (self.classifier, hidden)):
            layer.build((None, width))
        keras.utils.set_random_seed(1000 + rank)  # every expert its own start
        self.expert = keras.layers.Dense(hidden, activation="relu")
        self.expert.build((None, hidden))
        self.experts = experts

    @property
    def shared_variables(self):
        return (self.inputs.trainable_variables + self.gate.trainable_variables
                + self.classifier.trainable_variables)

    def __call__(self, x):
        h = self.inputs(x)
        probs = tf.nn.softmax(self.gate(h))
        chosen = tf.argmax(probs, axis=1, output_type=tf.int32)  # top-1 routing
        weight = tf.reduce_max(probs, axis=1, keepdims=True)  # how the gate learns
        order = tf.argsort(chosen, stable=True)  # tokens grouped by expert rank
        splits = tf.math.bincount(chosen, minlength=self.experts, maxlength=self.experts,
                                  dtype=tf.int32)
        self.last_splits = splits
        # Switch Transformer's load-balancing loss: experts * sum over experts
        # of (share of tokens routed there) x (mean gate probability there);
        # without it the gate soon sends every token to one expert.
        share = tf.cast(splits, tf.float32) / tf.cast(tf.shape(h)[0], tf.float32)
        self.balance_loss = self.experts * tf.reduce_sum(share * tf.reduce_mean(probs, axis=0))
        arrived, arrived_splits = hvd.alltoall(tf.gather(h, order), splits=splits)
        returned, _ = hvd.alltoall(self.expert(arrived), splits=arrived_splits)
        routed = tf.scatter_nd(order[:, None], returned, tf.shape(h))  # original order
        return self.classifier(routed * weight)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=48)
    parser.add_argument("--balance", type=float, default=0.5,
                        help="weight of the load-balancing loss")
    args = parser.parse_args()

    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    perm = np.random.default_rng(0).permutation(len(x))  # the same on every rank
    x, y = x[perm], y[perm]
    test_n = len(x) // 5
    per_rank = (len(x) - test_n) // size  # every rank the same number of batches
    train_x = x[test_n + rank * per_rank:test_n + (rank + 1) * per_rank]
    train_y = y[test_n + rank * per_rank:test_n + (rank + 1) * per_rank]
    test_per_rank = test_n // size
    test_x, test_y = x[rank * test_per_rank:(rank + 1) * test_per_rank], \
        y[rank * test_per_rank:(rank + 1) * test_per_rank]

    model = MixtureOfExperts(args.hidden, 10, size, rank)
    hvd.broadcast_variables(model.shared_variables, root_rank=0)
    optimizer = keras.optimizers.Adam(0.01)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    shared = model.shared_variables
    local = model.expert.trainable_variables

    def accuracy():
        correct = tf.reduce_sum(tf.cast(
            tf.argmax(model(test_x), axis=1) == test_y, tf.float32))
        return float(hvd.allreduce(correct, op=hvd.Sum)) / (test_per_rank * size)

    def tokens_per_expert():  # of the last forward pass (the test set), over all ranks
        return hvd.allreduce(model.last_splits, op=hvd.Sum).numpy().tolist()

    losses = []
    steps = per_rank // args.batch_size
    for epoch in range(args.epochs):
        epoch_loss = 0.0
        for step in range(steps):
            batch = slice(step * args.batch_size, (step + 1) * args.batch_size)
            with tf.GradientTape() as tape:
                loss = loss_fn(train_y[batch], model(train_x[batch]))
                objective = loss + args.balance * model.balance_loss
            grads = tape.gradient(objective, shared + local)
            # The objective is the mean of the ranks' losses: shared
            # gradients are averaged; an expert's gradient already holds
            # every rank's tokens (the alltoall gradient), so it is divided
            # by the number of ranks.
            shared_grads = hvd.grouped_allreduce(grads[:len(shared)], op=hvd.Average)
            local_grads = [g / size for g in grads[len(shared):]]
            optimizer.apply_gradients(zip(shared_grads + local_grads, shared + local))
            hvd.mark_step(epoch * steps + step)
            epoch_loss += float(loss)
        mean_loss = float(hvd.allreduce(tf.constant(epoch_loss / steps), op=hvd.Average))
        losses.append(mean_loss)
        acc = accuracy()
        routed = tokens_per_expert()
        if rank == 0:
            print(f"epoch {epoch + 1}: loss {mean_loss:.3f}, test accuracy {acc:.3f}, "
                  f"test tokens per expert {routed}", flush=True)

    checksum = tf.constant(sum(float(tf.reduce_sum(v)) for v in shared), tf.float64)
    spread = float(hvd.allreduce(checksum, op=hvd.Max) - hvd.allreduce(checksum, op=hvd.Min))
    experts_used = sum(1 for tokens in routed if tokens > 0)
    ok = (losses[-1] < 0.7 * losses[0] and spread < 1e-6 * max(1.0, abs(float(checksum)))
          and experts_used >= min(2, size))
    if rank == 0:
        print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}; shared weights differ across ranks by "
              f"{spread:.2e}; {experts_used} of {size} experts in use: "
              f"{'OK' if ok else 'FAILED'}", flush=True)
    hvd.shutdown()
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
