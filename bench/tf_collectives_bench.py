"""TensorFlow-side cost of ringscope's collectives, under mpirun: what a
training script pays per call on top of the runtime. Prints a table and
writes JSON (--json).

- eager allreduce, named vs unnamed: microseconds a call and how much the
  process grew (an unnamed op once got a fresh name per call, and TensorFlow
  built and kept a kernel for each);
- a group of --tensors small tensors: one eager grouped_allreduce (submitted
  together, fused) against the same tensors allreduced one by one, and the
  same group inside a tf.function.

    scripts/mpirun.sh -np 2 env PYTHONPATH=build/python .venv/bin/python \\
        bench/tf_collectives_bench.py --json bench/results/tf_collectives_np2.json
"""

import argparse
import json
import os
import resource
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import ringscope.tensorflow as hvd  # noqa: E402


def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def per_call_us(fn, calls, rounds):
    """Median over rounds of the mean time of `calls` calls, in microseconds."""
    times = []
    for _ in range(rounds):
        hvd.barrier()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="eager calls per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tensors", type=int, default=32, help="tensors in a group")
    parser.add_argument("--elements", type=int, default=1024, help="float32 elements a tensor")
    parser.add_argument("--json", help="write the results here (rank 0)")
    args = parser.parse_args()
    hvd.init()
    x = tf.ones([4])
    results = {"benchmark": "tf_collectives", "ranks": hvd.size(), "calls": args.calls,
               "rounds": args.rounds, "tensors": args.tensors, "elements": args.elements}
    for label, name in (("named", "bench.named"), ("unnamed", None)):
        for _ in range(200):  # warm-up: kernels built, names cached
            hvd.allreduce(x, op=hvd.Sum, name=name)
        before = rss_mb()
        us = per_call_us(lambda: hvd.allreduce(x, op=hvd.Sum, name=name), args.calls, args.rounds)
        results[f"eager_{label}_us"] = us
        results[f"eager_{label}_growth_mb"] = rss_mb() - before

    tensors = [tf.fill([args.elements], float(i)) for i in range(args.tensors)]
    group_calls = max(1, args.calls // args.tensors)

    def one_by_one():
        for i, t in enumerate(tensors):
            hvd.allreduce(t, op=hvd.Sum, name=f"bench.single.{i}")

    in_function = tf.function(lambda ts: hvd.grouped_allreduce(ts, op=hvd.Sum,
                                                               name="bench.function"))
    cases = (("group_one_by_one_us", one_by_one),
             ("group_eager_grouped_us",
              lambda: hvd.grouped_allreduce(tensors, op=hvd.Sum, name="bench.grouped")),
             ("group_tf_function_us", lambda: in_function(tensors)))
    for key, fn in cases:
        fn()  # warm-up (traces the functions)
    # Interleaved, so a slow period of the machine hits every case alike.
    samples = {key: [] for key, _ in cases}
    for _ in range(args.rounds):
        for key, fn in cases:
            samples[key].append(per_call_us(fn, group_calls, 1))
    for key, _ in cases:
        results[key] = statistics.median(samples[key])

    if hvd.rank() == 0:
        rows = [("eager allreduce, named", f"{results['eager_named_us']:.1f} us",
                 f"{results['eager_named_growth_mb']:.1f} MB"),
                ("eager allreduce, unnamed", f"{results['eager_unnamed_us']:.1f} us",
                 f"{results['eager_unnamed_growth_mb']:.1f} MB"),
                (f"{args.tensors} tensors one by one (eager)",
                 f"{results['group_one_by_one_us']:.1f} us", ""),
                (f"{args.tensors} tensors, eager grouped_allreduce",
                 f"{results['group_eager_grouped_us']:.1f} us", ""),
                (f"{args.tensors} tensors, grouped in a tf.function",
                 f"{results['group_tf_function_us']:.1f} us", "")]
        print(f"TensorFlow collectives, np={hvd.size()} ({args.rounds} rounds, medians)")
        print(f"{'case':<44} {'per call':>12} {'growth':>10}")
        for case, t, growth in rows:
            print(f"{case:<44} {t:>12} {growth:>10}")
        print(json.dumps(results))
        if args.json:
            with open(args.json, "w") as out:
                json.dump(results, out, indent=2)
    hvd.shutdown()


if __name__ == "__main__":
    main()
