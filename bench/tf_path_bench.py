"""What the TensorFlow path costs on top of the C++ runtime, in one process
launch (run it at np=1 and np=2): the C++ runtime's own step (200 x 16 KiB
float32 allreduces, submitted together, as a C++ program does), the same
tensors through ringscope.tensorflow (one eager grouped_allreduce; 200
allreduce ops in one tf.function; DistributedGradientTape.gradient on a
model of 200 variables of 16 KiB, less the same tape without ringscope),
one 4 KiB allreduce eagerly against the C++ one, and TensorFlow's own floor
for the same shapes (an eager op; a tf.function of 200 ops on 200 inputs).
Each number is the median over steps of the slowest rank; every path's
overhead per tensor over the C++ step is printed with it. Prints a table
and, with --json, writes JSON (rank 0).

    scripts/mpirun.sh -np 2 env PYTHONPATH=build/python .venv/bin/python \\
        bench/tf_path_bench.py --json bench/results/tf_path_np2.json
"""

import argparse
import ctypes
import json
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import ringscope.tensorflow as hvd  # noqa: E402
from ringscope.tensorflow._library import (_raw_ops, c as _c,  # noqa: E402
                                           call as _call)


def slowest(seconds):
    """The slowest rank's time (every rank calls it)."""
    return float(hvd.allreduce(tf.constant([seconds], tf.float64), op=hvd.Max,
                               name="bench.slowest").numpy()[0])


def median_us(fn, steps, per_call=1):
    """Median over `steps` of the slowest rank's time of fn(), in µs per call."""
    fn()  # warm-up: traced, kernels built, names cached
    times = []
    for _ in range(steps):
        hvd.barrier(name="bench.barrier")
        start = time.perf_counter()
        fn()
        times.append(slowest(time.perf_counter() - start))
    return statistics.median(times) * 1e6 / per_call


def cpp_step_us(tensors, elements, steps):
    """The C++ runtime's step, or None from an op library without it (an
    older build, to compare the TensorFlow paths against)."""
    try:
        step = _c.ringscope_c_bench_step
    except AttributeError:
        return None
    step.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_int,
                     ctypes.POINTER(ctypes.c_double), ctypes.c_char_p, ctypes.c_int]
    out = ctypes.c_double()
    _call(step, tensors, elements, steps, ctypes.byref(out))
    return slowest(out.value * 1e-6) * 1e6


def raw_grouped_us(tensors, steps):
    """The grouped op alone, its names registered beforehand (None from an
    op library without it)."""
    if not hasattr(_raw_ops, "ringscope_grouped_allreduce"):
        return None
    names = [f"bench.rawgroup/{i}".encode() for i in range(len(tensors))]
    _c.ringscope_c_register_group(b"bench.rawgroup", (ctypes.c_char_p * len(names))(*names),
                                  len(names))
    return median_us(lambda: _raw_ops.ringscope_grouped_allreduce(
        tensors, reduce_op=1, tensor_name="bench.rawgroup"), steps)


def paired_difference_us(base, with_ringscope, steps):
    """Median over steps of (with_ringscope() - base()), each step running
    both back to back, the slowest rank's: the part ringscope adds, without
    the noise of two separate medians of a much longer time."""
    base()
    with_ringscope()
    diffs = []
    for _ in range(steps):
        hvd.barrier(name="bench.barrier")
        start = time.perf_counter()
        base()
        middle = time.perf_counter()
        with_ringscope()
        end = time.perf_counter()
        diffs.append(slowest((end - middle) - (middle - start)))
    return statistics.median(diffs) * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tensors", type=int, default=200)
    parser.add_argument("--elements", type=int, default=4096, help="float32 elements a tensor")
    parser.add_argument("--steps", type=int, default=100, help="steps per path (median)")
    parser.add_argument("--json", help="write the results here (rank 0)")
    args = parser.parse_args()
    hvd.init()
    n, elements, steps = args.tensors, args.elements, args.steps
    width = int(round(elements ** 0.5))
    r = {"benchmark": "tf_path", "ranks": hvd.size(), "tensors": n,
         "tensor_bytes": elements * 4, "steps": steps}

    r["cpp_step_us"] = cpp_step_us(n, elements, steps)
    r["cpp_one_4k_us"] = cpp_step_us(1, 1024, steps)

    x4k = tf.ones([1024])
    r["tf_floor_eager_op_us"] = median_us(lambda: tf.math.negative(x4k), steps)
    r["eager_one_4k_us"] = median_us(lambda: hvd.allreduce(x4k, op=hvd.Sum, name="bench.one"),
                                     steps)

    # The op alone, called as TensorFlow's generated wrapper (no ringscope
    # Python): what the kernel, the runtime and TensorFlow's dispatch cost.
    r["raw_op_one_4k_us"] = median_us(
        lambda: _raw_ops.ringscope_allreduce(x4k, reduce_op=0, tensor_name="bench.raw"), steps)

    tensors = [tf.fill([elements], float(i)) for i in range(n)]
    r["grouped_eager_us"] = median_us(
        lambda: hvd.grouped_allreduce(tensors, op=hvd.Average, name="bench.grouped"), steps)
    r["raw_grouped_us"] = raw_grouped_us(tensors, steps)
    # TensorFlow's own eager op of n inputs and n outputs that forwards them.
    r["tf_floor_grouped_eager_us"] = median_us(lambda: tf.raw_ops.IdentityN(input=tensors), steps)

    floor_fn = tf.function(lambda ts: [tf.math.negative(t) for t in ts])
    r["tf_floor_function_us"] = median_us(lambda: floor_fn(tensors), steps)
    many_fn = tf.function(lambda ts: [hvd.allreduce(t, op=hvd.Average, name=f"bench.fn/{i}")
                                      for i, t in enumerate(ts)])
    r["function_ops_us"] = median_us(lambda: many_fn(tensors), steps)

    # A model of n variables of `elements` float32 each: the loss sums
    # each variable times an input, so every variable has a gradient.
    variables = [tf.Variable(tf.ones([width, width]), name=f"w{i}") for i in range(n)]
    x = tf.ones([width, width])

    def plain_tape():
        with tf.GradientTape() as tape:
            loss = tf.add_n([tf.reduce_sum(v * x) for v in variables])
        return tape.gradient(loss, variables)

    def distributed_tape():
        with tf.GradientTape() as tape:
            loss = tf.add_n([tf.reduce_sum(v * x) for v in variables])
        return hvd.DistributedGradientTape(tape).gradient(loss, variables)

    r["tape_plain_eager_us"] = median_us(plain_tape, steps)
    r["tape_allreduce_eager_us"] = paired_difference_us(plain_tape, distributed_tape, steps)
    plain_fn, distributed_fn = tf.function(plain_tape), tf.function(distributed_tape)
    r["tape_plain_function_us"] = median_us(plain_fn, steps)
    r["tape_allreduce_function_us"] = paired_difference_us(plain_fn, distributed_fn, steps)

    # What making the ranks meet once costs after the same tape: one 4-byte
    # allreduce that waits for every gradient. Where the ranks' tapes take
    # different times (two processes sharing the cores), the allreduce part
    # above waits for the slower rank too; this is that wait plus one
    # smallest collective.
    def synced_tape():
        grads = plain_tape()
        with tf.control_dependencies(grads):
            met = hvd.allreduce(tf.zeros([1]), op=hvd.Sum, name="bench.meet")
        return grads + [met]

    r["tape_meet_function_us"] = paired_difference_us(plain_fn, tf.function(synced_tape), steps)

    cpp = r["cpp_step_us"]
    for key in ("grouped_eager_us", "function_ops_us", "tape_allreduce_eager_us",
                "tape_allreduce_function_us"):
        r[key.replace("_us", "_overhead_per_tensor_us")] = (
            None if cpp is None else (r[key] - cpp) / n)
    r["function_ops_over_floor_per_tensor_us"] = (r["function_ops_us"] -
                                                  r["tf_floor_function_us"]) / n
    if hvd.rank() == 0:
        kib = elements * 4 // 1024
        rows = [
            (f"C++ runtime: step of {n} x {kib} KiB", "cpp_step_us", None),
            (f"eager grouped_allreduce of {n} x {kib} KiB", "grouped_eager_us",
             "grouped_eager_overhead_per_tensor_us"),
            ("  the grouped op alone (no ringscope Python)", "raw_grouped_us", None),
            (f"  TF floor: IdentityN of the {n} tensors, eager", "tf_floor_grouped_eager_us",
             None),
            (f"{n} allreduce ops in one tf.function", "function_ops_us",
             "function_ops_overhead_per_tensor_us"),
            (f"  TF floor: {n} negatives in one tf.function", "tf_floor_function_us", None),
            ("  the same tape without ringscope, eager", "tape_plain_eager_us", None),
            (f"DistributedGradientTape, {n} vars, eager (allreduce part)",
             "tape_allreduce_eager_us", "tape_allreduce_eager_overhead_per_tensor_us"),
            ("  the same tape without ringscope, tf.function", "tape_plain_function_us", None),
            (f"DistributedGradientTape, {n} vars, tf.function (allreduce part)",
             "tape_allreduce_function_us", "tape_allreduce_function_overhead_per_tensor_us"),
            ("  the ranks meeting once after the same tape (one 4 B allreduce)",
             "tape_meet_function_us", None),
            ("one 4 KiB allreduce, eager", "eager_one_4k_us", None),
            ("  the op alone (no ringscope Python)", "raw_op_one_4k_us", None),
            ("  C++ runtime: one 4 KiB allreduce", "cpp_one_4k_us", None),
            ("  TF floor: one eager op on 4 KiB", "tf_floor_eager_op_us", None),
        ]
        print(f"TensorFlow path against the C++ runtime, np={hvd.size()}, median of {steps} "
              "steps of the slowest rank")
        print(f"{'path':62} {'time':>10} {'over C++ per tensor':>20}")
        for label, key, extra in rows:
            more = f"{r[extra]:17.2f} us" if extra and r[extra] is not None else ""
            time_text = "    n/a   " if r[key] is None else f"{r[key]:7.0f} us"
            print(f"{label:62} {time_text} {more:>20}")
        print(json.dumps(r))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(r, f, indent=1)
    hvd.shutdown()


if __name__ == "__main__":
    main()
