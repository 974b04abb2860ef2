"""hvd.join() under mpirun: ranks with uneven shares of the data (rank r has
r + 2 batches) train with DistributedGradientTape until their data runs
out and join; the others' allreduces and allgathers go on with the joined
ranks standing in; join returns the last rank on every rank; broadcasting
from it makes the weights identical, as Horovod's examples do after join."""

import numpy as np
import tensorflow as tf

from harness import assert_close, finish, hvd, test

hvd.init()
R, N = hvd.rank(), hvd.size()


def batches(rank):
    return rank + 2


@test
def allreduce_and_allgather_with_joined_ranks():
    for step in range(batches(R)):
        total = hvd.allreduce(tf.fill([5], float(R + 1)), op=hvd.Sum, name="join.sum")
        active = [r for r in range(N) if batches(r) > step]
        assert_close(total.numpy(), [sum(r + 1.0 for r in active)] * 5, tf.float32,
                     f"sum at step {step}")
        rows = hvd.allgather(tf.fill([R + 1, 2], R), name="join.rows")
        assert rows.shape == (sum(r + 1 for r in active), 2), rows.shape
    last = hvd.join()
    assert int(last) == N - 1, f"join returned {int(last)}"


@test
def unnamed_eager_collectives_match_again_after_a_join():
    # Uneven numbers of unnamed allreduces advance each rank's name counter
    # differently; after the join they must match again.
    for _ in range(batches(R)):
        hvd.allreduce(tf.constant(1.0), op=hvd.Sum)
    assert int(hvd.join()) == N - 1
    total = hvd.allreduce(tf.constant(float(R)), op=hvd.Sum)  # unnamed, after the join
    assert float(total) == sum(range(N)), float(total)


@test
def uneven_training_joins_then_broadcasts_from_the_last_rank():
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(3)])
    opt = tf.keras.optimizers.SGD(0.1)
    hvd.broadcast_variables(model.variables, root_rank=0)
    rng = np.random.default_rng(R)
    for _ in range(batches(R)):
        x = tf.constant(rng.normal(size=(8, 4)), tf.float32)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x)))
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
    last = int(hvd.join())
    assert last == N - 1, f"join returned {last}"
    hvd.broadcast_variables(model.variables, root_rank=last)
    for i, v in enumerate(model.variables):
        every = hvd.allgather(tf.expand_dims(v, 0), name=f"join.check/{i}").numpy()
        assert np.all(every == every[0]), f"variable {i} differs across ranks"


def rank0_joins_after_its_allreduce(last_step, name, rounds):
    """Rank 0 runs last_step(x) (an allreduce of `name`, then a join, in
    one function), the others the same two eagerly; every rank's sum must
    include every rank's x."""
    x = tf.fill([1000], float(R + 1))
    want = np.full([1000], float(sum(r + 1 for r in range(N))))
    for _ in range(rounds):
        if R == 0:
            y, _ = last_step(x)
        else:
            y = hvd.allreduce(x, op=hvd.Sum, name=name)
            hvd.join()
        assert_close(y.numpy(), want, tf.float32)


@test
def join_in_a_function_runs_after_its_collectives():
    # The collectives run independently of program order in a tf.function;
    # a join built after one must still reach the runtime after it, or the
    # other ranks would complete it with this rank's stand-in zeros. Rank 0
    # joins in the same function, the others eagerly after the allreduce.
    @tf.function
    def last_step(x):
        y = hvd.allreduce(x, op=hvd.Sum, name="last_step/s")
        return y, hvd.join()

    rank0_joins_after_its_allreduce(last_step, "last_step/s", rounds=4)


@test
def join_in_a_cond_waits_for_the_outer_collectives():
    # The join is built in the cond's branch graph, the allreduce in the
    # function's: the cond op itself must wait for the allreduce.
    @tf.function
    def last_step(x, last):
        y = hvd.allreduce(x, op=hvd.Sum, name="cond_step/s")
        return y, tf.cond(last, hvd.join, lambda: tf.constant(-1))

    graph = last_step.get_concrete_function(
        tf.TensorSpec([1000], tf.float32), tf.TensorSpec([], tf.bool)).graph
    conds = [op for op in graph.get_operations() if op.type in ("If", "StatelessIf")]
    assert conds and all("RingscopeAllreduce" in [c.type for c in op.control_inputs]
                         for op in conds), [[c.type for c in op.control_inputs] for op in conds]
    rank0_joins_after_its_allreduce(lambda x: last_step(x, tf.constant(True)), "cond_step/s",
                                    rounds=3)


@test
def traced_functions_are_not_kept_alive_by_the_op_records():
    import gc
    import weakref

    from ringscope.tensorflow import _library

    graphs = []
    for k in range(3):
        f = tf.function(lambda x, k=k: hvd.allreduce(x, name=f"kept/{k}"))
        concrete = f.get_concrete_function(tf.TensorSpec([4], tf.float32))
        # The records exist while the graph does (keyed weakly by it).
        assert concrete.graph in _library._collectives_of
        graphs.append(weakref.ref(concrete.graph))
        del f, concrete
    gc.collect()
    alive = [g for g in graphs if g() is not None]
    assert not alive, f"{len(alive)} of 3 traced graphs still alive"


finish()
