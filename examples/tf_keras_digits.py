"""Data-parallel Keras training with ringscope on real data: a small CNN on
scikit-learn's bundled handwritten digits (1,797 8x8 images, no download).
Each rank trains on its shard; gradients are averaged by
DistributedOptimizer; rank 0 prints the test accuracy and the training
throughput (samples/s over all ranks, first epoch excluded as warm-up).

    ringscope run -np 2 --trace runs/digits.sqlite python examples/tf_keras_digits.py
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import ringscope.tensorflow as hvd  # noqa: E402


class EpochTimer(keras.callbacks.Callback):
    """Wall time of every epoch, for the throughput line."""

    def __init__(self):
        super().__init__()
        self.seconds = []
        self._start = 0.0

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self._start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.002, help="per rank; scaled by size()")
    args = parser.parse_args()

    hvd.init()
    keras.utils.set_random_seed(42)
    digits = load_digits()
    x = (digits.images / 16.0).astype("float32")[..., None]
    y = digits.target.astype("int64")
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0)
    x_shard, y_shard = x_train[hvd.rank()::hvd.size()], y_train[hvd.rank()::hvd.size()]

    model = keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(),
        keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
        keras.layers.Flatten(),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10),
    ])
    scaled_lr = args.lr * hvd.size()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(scaled_lr)),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    steps_per_epoch = int(np.ceil(len(x_shard) / args.batch_size))
    callbacks = [
        hvd.BroadcastGlobalVariablesCallback(0),
        hvd.MetricAverageCallback(),
        hvd.LearningRateWarmupCallback(scaled_lr, warmup_epochs=2, steps_per_epoch=steps_per_epoch),
        hvd.StepMarkCallback(),
    ]
    timer = EpochTimer()
    callbacks.append(timer)
    model.fit(x_shard, y_shard, batch_size=args.batch_size, epochs=args.epochs,
              callbacks=callbacks, verbose=2 if hvd.rank() == 0 else 0)
    if hvd.rank() == 0:
        loss, acc = model.evaluate(x_test, y_test, verbose=0)
        print(f"test accuracy: {acc:.3f} (loss {loss:.3f}) on {len(x_test)} held-out digits, "
              f"{hvd.size()} ranks")
        timed = timer.seconds[1:] or timer.seconds
        samples = len(x_train) * len(timed)
        print(f"throughput: {samples / sum(timed):.0f} samples/s "
              f"({len(timed)} epochs after the first, all ranks)")
        trace = os.environ.get("RINGSCOPE_TRACE")
        if trace:
            base = trace[: -len(".sqlite")] if trace.endswith(".sqlite") else trace
            print(f"trace: {base}.rank<r>.sqlite -- look at it with: ringscope trace stats {trace}")
    hvd.shutdown()


if __name__ == "__main__":
    main()
