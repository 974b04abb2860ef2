"""Gradients of ringscope's collective ops, so a collective inside a model
(model parallelism, mixture-of-experts routing, a gathered embedding) can be
differentiated. Each gradient is itself a collective: every rank computes it
in the same order. Eagerly it is named after the forward op
(``<name>/grad``, ``<name>/grad_rows``, ...); in a tf.function the gradient
node's own name is used, which is unique in the graph even when the same
gradient is taken twice (two tapes, a persistent tape).

With the loss being the sum of every rank's loss:

- allreduce (Sum, Average, scale factors): the gradient is allreduced the
  same way. Min and Max: the summed gradient goes to the elements that hold
  the extreme value, each of them in full where several ranks tie (Horovod
  allreduces the gradient with Min/Max instead, which is not a gradient).
  The holders are found by comparing the scaled input with the result: with
  16-bit floats and scale factors they are exact only where the scaled
  values are.
- allgather: the gradients are summed over ranks and each rank keeps its rows.
- broadcast: the summed gradient goes to the root; other ranks get zeros.
- reducescatter: every rank's row gradients are gathered (and scaled like the
  forward op); Min/Max as for allreduce.
- alltoall: the gradient rows travel back along the routes the rows came.
"""

import tensorflow as tf

import ringscope.tensorflow as _hvd
from ringscope.tensorflow._library import ops as _ops

_SUM, _AVERAGE = 0, 1


def _grad_name(op, suffix="grad"):
    """The forward op's name and ``suffix`` when it has one (eagerly and in a
    graph: a graph node's own name carries scopes such as Keras's
    counter-numbered layer names, which differ across ranks that built a
    different number of layers); else "" (the gradient node's name, unique
    in its graph; eagerly, the kind's fixed name)."""
    name = op.get_attr("tensor_name")
    if isinstance(name, bytes):
        name = name.decode()
    return f"{name}/{suffix}" if name else ""


def _reduce_factors(op):
    return float(op.get_attr("prescale_factor")), float(op.get_attr("postscale_factor"))


def _extreme_mask(op, full_result, x):
    """1 where x (scaled as the forward op scaled it) is the reduced value."""
    pre, post = _reduce_factors(op)
    scaled = x
    if pre != 1.0:
        scaled = scaled * tf.cast(pre, x.dtype)
    if post != 1.0:
        scaled = scaled * tf.cast(post, x.dtype)
    return tf.cast(tf.equal(scaled, full_result), x.dtype) * tf.cast(pre * post, x.dtype)


@tf.RegisterGradient("RingscopeAllreduce")
def _allreduce_grad(op, grad):
    reduce_op = op.get_attr("reduce_op")
    pre, post = _reduce_factors(op)
    if reduce_op in (_SUM, _AVERAGE):
        return _ops.ringscope_allreduce(grad, reduce_op=reduce_op, prescale_factor=pre,
                                        postscale_factor=post, tensor_name=_grad_name(op))
    summed = _ops.ringscope_allreduce(grad, reduce_op=_SUM, tensor_name=_grad_name(op))
    return summed * _extreme_mask(op, op.outputs[0], op.inputs[0])


@tf.RegisterGradient("RingscopeAllgather")
def _allgather_grad(op, grad):
    summed = _ops.ringscope_allreduce(grad, reduce_op=_SUM, tensor_name=_grad_name(op))
    rows = tf.shape(op.inputs[0], out_type=tf.int64)[:1]
    every_rows = _ops.ringscope_allgather(rows, tensor_name=_grad_name(op, "grad_rows"))
    return tf.split(summed, every_rows, num=_hvd.size(), axis=0)[_hvd.rank()]


@tf.RegisterGradient("RingscopeBroadcast")
def _broadcast_grad(op, grad):
    summed = _ops.ringscope_allreduce(grad, reduce_op=_SUM, tensor_name=_grad_name(op))
    if _hvd.rank() == op.get_attr("root_rank"):
        return summed
    return tf.zeros_like(summed)


@tf.RegisterGradient("RingscopeReducescatter")
def _reducescatter_grad(op, grad):
    reduce_op = op.get_attr("reduce_op")
    pre, post = _reduce_factors(op)
    gathered = _ops.ringscope_allgather(grad, tensor_name=_grad_name(op))
    if reduce_op in (_SUM, _AVERAGE):
        factor = pre * post / (_hvd.size() if reduce_op == _AVERAGE else 1)
        return gathered if factor == 1.0 else gathered * tf.cast(factor, grad.dtype)
    full = _ops.ringscope_allgather(op.outputs[0], tensor_name=_grad_name(op, "grad_result"))
    return gathered * _extreme_mask(op, full, op.inputs[0])


@tf.RegisterGradient("RingscopeAlltoall")
def _alltoall_grad(op, grad, _received_splits_grad):
    back, _ = _ops.ringscope_alltoall(grad, op.outputs[1], tensor_name=_grad_name(op))
    return back, None
