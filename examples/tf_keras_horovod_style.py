"""A Keras training script written the way Horovod's Keras examples are,
that runs on ringscope with only its import line changed: hvd.callbacks.*,
a learning-rate warm-up, a checkpoint written by rank 0 only, and
hvd.load_model to resume from it (scikit-learn's bundled digits, no
download).

    ringscope run -np 2 -- python examples/tf_keras_horovod_style.py --checkpoint-dir /tmp/ckpt
"""

import argparse
import math
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

import ringscope.tensorflow.keras as hvd  # was: import horovod.tensorflow.keras as hvd  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--checkpoint-dir", required=True,
                        help="rank 0 writes checkpoint-<epoch>.keras here; every rank reads it")
    args = parser.parse_args()

    hvd.init()
    digits = load_digits()
    x = (digits.images / 16.0).astype("float32").reshape(-1, 64)
    y = digits.target.astype("int64")
    dataset = (tf.data.Dataset.from_tensor_slices((x, y)).shard(hvd.size(), hvd.rank())
               .shuffle(512, seed=hvd.rank()).repeat().batch(args.batch_size))
    steps_per_epoch = math.ceil(len(x) / hvd.size() / args.batch_size)

    model = keras.Sequential([keras.Input((64,)), keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(10)])
    # Horovod: scale the learning rate by the number of workers.
    scaled_lr = 0.001 * hvd.size()
    opt = hvd.DistributedOptimizer(keras.optimizers.Adam(scaled_lr))
    model.compile(optimizer=opt, metrics=["accuracy"],
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    callbacks = [
        # Horovod: start every worker from rank 0's weights.
        hvd.callbacks.BroadcastGlobalVariablesCallback(0),
        # Horovod: average the metrics over the workers at the end of every epoch.
        hvd.callbacks.MetricAverageCallback(),
        # Horovod: ramp the learning rate up to scaled_lr over the first epoch.
        hvd.callbacks.LearningRateWarmupCallback(initial_lr=scaled_lr, warmup_epochs=1, verbose=1),
    ]
    # Horovod: save checkpoints only on worker 0, so the others cannot corrupt them.
    checkpoint = os.path.join(args.checkpoint_dir, "checkpoint-{epoch}.keras")
    if hvd.rank() == 0:
        os.makedirs(args.checkpoint_dir, exist_ok=True)
        for epoch in range(1, args.epochs + 1):  # resume from this run's, not an older one
            if os.path.exists(checkpoint.format(epoch=epoch)):
                os.remove(checkpoint.format(epoch=epoch))
        callbacks.append(keras.callbacks.ModelCheckpoint(checkpoint))
    history = model.fit(dataset, steps_per_epoch=steps_per_epoch, epochs=args.epochs,
                        callbacks=callbacks, verbose=1 if hvd.rank() == 0 else 0)

    # Resume from the last checkpoint on every worker: the optimizer comes back
    # wrapped in a DistributedOptimizer with its state, and training goes on.
    hvd.barrier()
    resumed = hvd.load_model(checkpoint.format(epoch=args.epochs))
    more = resumed.fit(dataset, steps_per_epoch=steps_per_epoch, epochs=1,
                       callbacks=[hvd.callbacks.MetricAverageCallback()], verbose=0)
    if hvd.rank() == 0:
        print(f"trained {args.epochs} epochs on {hvd.size()} ranks: loss "
              f"{history.history['loss'][0]:.3f} -> {history.history['loss'][-1]:.3f}, "
              f"accuracy {history.history['accuracy'][-1]:.3f}; resumed from the checkpoint "
              f"for one more: loss {more.history['loss'][-1]:.3f}, optimizer step "
              f"{int(resumed.optimizer.iterations.numpy())}")
    # The resumed optimizer carries on from the checkpoint's step count, and
    # the workers trained together (the loss went down).
    steps = int(resumed.optimizer.iterations.numpy())
    if steps != (args.epochs + 1) * steps_per_epoch:
        sys.exit(f"rank {hvd.rank()}: the resumed optimizer is at step {steps}, expected "
                 f"{(args.epochs + 1) * steps_per_epoch}")
    losses = history.history["loss"]
    if len(losses) > 1 and not losses[-1] < losses[0]:
        sys.exit(f"rank {hvd.rank()}: the loss did not go down: {history.history['loss']}")
    hvd.shutdown()


if __name__ == "__main__":
    main()
