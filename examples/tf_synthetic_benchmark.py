"""Synthetic training benchmark, like Horovod's: images/s of a ResNet-style
model on random data with DistributedGradientTape, per rank and in total.

    ringscope run -np 2 python examples/tf_synthetic_benchmark.py --model resnet20
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import ringscope.tensorflow as hvd  # noqa: E402


def resnet_cifar(depth, image_size, classes=1000):
    """A CIFAR-style ResNet (depth = 6n+2): small enough for CPUs."""
    n = (depth - 2) // 6
    inputs = keras.Input((image_size, image_size, 3))
    x = keras.layers.Conv2D(16, 3, padding="same", use_bias=False)(inputs)
    x = keras.layers.ReLU()(keras.layers.BatchNormalization()(x))
    for stage, width in enumerate((16, 32, 64)):
        for block in range(n):
            stride = 2 if stage > 0 and block == 0 else 1
            shortcut = x
            y = keras.layers.Conv2D(width, 3, stride, padding="same", use_bias=False)(x)
            y = keras.layers.ReLU()(keras.layers.BatchNormalization()(y))
            y = keras.layers.Conv2D(width, 3, padding="same", use_bias=False)(y)
            y = keras.layers.BatchNormalization()(y)
            if stride != 1 or shortcut.shape[-1] != width:
                shortcut = keras.layers.Conv2D(width, 1, stride, use_bias=False)(shortcut)
            x = keras.layers.ReLU()(keras.layers.Add()([y, shortcut]))
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(classes)(x))


def build_model(name, image_size):
    if name == "resnet50":
        return keras.applications.ResNet50(weights=None, input_shape=(image_size, image_size, 3))
    depth = {"resnet20": 20, "resnet32": 32, "resnet56": 56}.get(name)
    if depth is None:
        raise SystemExit(f"unknown --model {name}: use resnet20, resnet32, resnet56 or resnet50")
    return resnet_cifar(depth, image_size)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet20")
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=20, help="timed steps")
    parser.add_argument("--warmup-steps", type=int, default=3)
    args = parser.parse_args()

    hvd.init()
    model = build_model(args.model, args.image_size)
    opt = keras.optimizers.SGD(0.01)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    data = tf.random.uniform([args.batch_size, args.image_size, args.image_size, 3])
    target = tf.random.uniform([args.batch_size], maxval=1000, dtype=tf.int64)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn(target, model(data, training=True))
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    step()  # build
    hvd.broadcast_variables(model.variables, root_rank=0)
    for _ in range(args.warmup_steps):
        step()
    times = []
    for i in range(args.steps):
        t0 = time.perf_counter()
        step().numpy()
        times.append(time.perf_counter() - t0)
        hvd.mark_step(i)
    per_rank = args.batch_size / np.median(times)
    if hvd.rank() == 0:
        params = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
        print(f"model {args.model} ({params / 1e6:.2f} M parameters), batch {args.batch_size} per "
              f"rank, image {args.image_size}, {hvd.size()} ranks")
        print(f"images/s per rank: {per_rank:.1f}   total: {per_rank * hvd.size():.1f}   "
              f"median step {np.median(times) * 1e3:.1f} ms")
    hvd.shutdown()


if __name__ == "__main__":
    main()
