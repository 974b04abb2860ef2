"""Local gradient aggregation's throughput, under mpirun: model.fit with
DistributedOptimizer on the same micro-batches, backward_passes_per_step=1
(an allreduce every step) against 4 (one per 4 steps), in one process
launch. The models train alternately, an epoch each, for --rounds rounds
after a warm-up epoch. An epoch is timed from the end of its 4th step (an
allreduce in both models: the ranks are in step there, whatever fit() took
to set up on each) to the end of its last (--steps is a multiple of 4), so
whole rounds of 4 steps are timed; each round's samples/s is the slowest
rank's. Prints a table and, with --json, writes JSON (rank 0).

    scripts/mpirun.sh -np 2 env PYTHONPATH=build/python .venv/bin/python \\
        bench/tf_aggregation_bench.py --json bench/results/tf_aggregation_np2.json
"""

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import ringscope.tensorflow as hvd  # noqa: E402


def make_model(layers, width, passes):
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((width,))] +
                             [keras.layers.Dense(width, activation="relu") for _ in range(layers)] +
                             [keras.layers.Dense(1)])
    opt = hvd.DistributedOptimizer(keras.optimizers.SGD(0.001), backward_passes_per_step=passes,
                                   average_aggregated_gradients=True)
    model.compile(optimizer=opt, loss="mse")
    return model


class _StepClock(keras.callbacks.Callback):
    """The time from the end of step 4 to the end of the last step."""

    def on_train_batch_end(self, batch, logs=None):
        if batch == 3:
            self.start = time.perf_counter()
        self.end = time.perf_counter()


def timed_steps_seconds(model, x, y, batch):
    """Seconds of the timed steps of one epoch, the slowest rank's."""
    clock = _StepClock()
    model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0, callbacks=[clock])
    took = clock.end - clock.start
    return float(hvd.allreduce(tf.constant([took], tf.float64), op=hvd.Max,
                               name="bench.slowest").numpy()[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=8, help="Dense layers")
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=16, help="micro-batch per rank")
    parser.add_argument("--steps", type=int, default=96, help="micro-batches an epoch")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", help="write the results here (rank 0)")
    args = parser.parse_args()
    if args.steps % 4 or args.steps < 8:
        parser.error("--steps must be a multiple of 4, at least 8")
    hvd.init()
    rng = np.random.default_rng(hvd.rank())
    x = rng.normal(size=(args.batch * args.steps, args.width)).astype(np.float32)
    y = rng.normal(size=(args.batch * args.steps, 1)).astype(np.float32)
    models = {p: make_model(args.layers, args.width, p) for p in (1, 4)}
    timed = (args.steps - 4) * args.batch * hvd.size()  # samples in the timed steps
    for model in models.values():  # warm-up: traced, names cached
        timed_steps_seconds(model, x, y, args.batch)
    samples = {p: [] for p in models}
    for _ in range(args.rounds):
        for p, model in models.items():
            samples[p].append(timed / timed_steps_seconds(model, x, y, args.batch))
    params = sum(int(np.prod(w.shape)) for w in models[1].trainable_weights)
    r = {"benchmark": "tf_aggregation", "ranks": hvd.size(), "layers": args.layers,
         "width": args.width, "parameters": params, "gradient_bytes": params * 4,
         "micro_batch": args.batch, "steps": args.steps, "rounds": args.rounds,
         "samples_per_s_passes_1": samples[1], "samples_per_s_passes_4": samples[4]}
    r["median_passes_1"] = statistics.median(samples[1])
    r["median_passes_4"] = statistics.median(samples[4])
    r["ratios"] = [b / a for a, b in zip(samples[1], samples[4])]
    r["median_ratio"] = statistics.median(r["ratios"])
    if hvd.rank() == 0:
        print(f"np={hvd.size()}, {args.layers} x Dense({args.width}): {params} parameters, "
              f"micro-batch {args.batch}, {args.steps} steps an epoch, {args.rounds} rounds")
        print("| backward_passes_per_step | samples/s (median) | rounds |")
        print("|---|---|---|")
        for p in (1, 4):
            runs = ", ".join(f"{s:.0f}" for s in samples[p])
            print(f"| {p} | {r[f'median_passes_{p}']:.0f} | {runs} |")
        print(f"4 against 1: median ratio {r['median_ratio']:.2f} "
              f"(per round {', '.join(f'{q:.2f}' for q in r['ratios'])})")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(r, f, indent=2)
    hvd.shutdown()


if __name__ == "__main__":
    main()
