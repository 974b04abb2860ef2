"""Gradients of ringscope's collective ops, so a collective inside a model
(model parallelism, mixture-of-experts routing, a gathered embedding) can be
differentiated. Each gradient is itself a collective: every rank computes it
in the same order. Eagerly it is named after the forward op
(``<name>/grad``, ``<name>/grad_rows``, ...); in a tf.function the gradient
node's own name is used, which is unique in the graph even when the same
gradient is taken twice (two tapes, a persistent tape).

Two conventions, chosen by RINGSCOPE_COLLECTIVE_GRADIENTS (the same on every
rank: init() checks it; docs/tensorflow.md, "Gradients of collectives"):

``horovod`` (the default): Horovod's, so a model ported from Horovod trains
the same:

- allreduce: the gradient is allreduced with the forward op and scale
  factors (Min, Max and Product too).
- allgather: the gradient is averaged over ranks and each rank keeps its rows.
- broadcast: the gradient is averaged over ranks; the root gets it, the
  other ranks zeros (that still depend on the allreduce, so a graph run
  never prunes it on one rank while the others wait in it).
- reducescatter: the gradient times the scale factors, and times size() for
  Sum, is allgathered.
- alltoall: the gradient rows travel back along the routes the rows came.

``sum``: the derivative of the sum of every rank's loss:

- allreduce Sum and Average: as above. Min and Max: the summed gradient
  goes to the elements that hold the extreme value, each of them in full
  where several ranks tie. The holders are found by comparing the scaled
  input with the result: with 16-bit floats and scale factors they are
  exact only where the scaled values are. Product: the summed gradient
  times the product of the other ranks' (scaled) inputs, which are
  allgathered (exact where an input is 0, unlike a division).
- allgather: the gradients are summed over ranks and each rank keeps its rows.
- broadcast: the summed gradient goes to the root; other ranks get zeros.
- reducescatter: every rank's row gradients are gathered and scaled like
  the forward op; Min/Max as for allreduce.
- alltoall: as above.

Reducescatter with Min or Max has no Horovod counterpart: it takes the
``sum`` gradient under both.
"""

import os

import tensorflow as tf

import ringscope.tensorflow as _hvd
from ringscope.tensorflow._library import c as _c, ops as _ops

_SUM, _AVERAGE, _PRODUCT = 0, 1, 4

CONVENTION_VARIABLE = "RINGSCOPE_COLLECTIVE_GRADIENTS"
CONVENTIONS = ("horovod", "sum")


def convention():
    """The gradient convention of this process (RINGSCOPE_COLLECTIVE_GRADIENTS,
    default "horovod"); a ValueError naming the variable for any other value."""
    value = os.environ.get(CONVENTION_VARIABLE, "horovod").strip() or "horovod"
    if value not in CONVENTIONS:
        raise ValueError(f"ringscope: {CONVENTION_VARIABLE}='{value}' is invalid: expected "
                         f"'horovod' (the default: Horovod's gradients) or 'sum' (the gradient "
                         f"of the sum of every rank's loss)")
    return value


def _horovod():
    return convention() == "horovod"


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


def _set(op):
    """The forward op's process set, for its gradient's collectives (as
    the collectives pass it: no attr for the world's)."""
    process_set_id = op.get_attr("process_set_id")
    return {"process_set_id": process_set_id} if process_set_id else {}


def _rank(op):
    """This rank within the forward op's process set."""
    process_set_id = op.get_attr("process_set_id")
    return _hvd.rank() if not process_set_id else _c.ringscope_c_process_set_rank(process_set_id)


def _size(op):
    process_set_id = op.get_attr("process_set_id")
    return _hvd.size() if not process_set_id else _c.ringscope_c_process_set_size(process_set_id)


def _reduce_factors(op):
    return float(op.get_attr("prescale_factor")), float(op.get_attr("postscale_factor"))


def _scaled(x, factor):
    return x if factor == 1.0 else x * tf.cast(factor, x.dtype)


def _extreme_mask(op, full_result, x):
    """1 where x (scaled as the forward op scaled it) is the reduced value."""
    pre, post = _reduce_factors(op)
    scaled = _scaled(_scaled(x, pre), post)
    return tf.cast(tf.equal(scaled, full_result), x.dtype) * tf.cast(pre * post, x.dtype)


def _product_others(op, x, name):
    """d(result)/dx for a Product: the forward op's scale factors times the
    product of every other rank's prescaled input (allgathered as `name`)."""
    pre, post = _reduce_factors(op)
    every = _ops.ringscope_allgather(tf.expand_dims(x, 0), tensor_name=name, **_set(op))
    r = _rank(op)
    others = tf.concat([every[:r], every[r + 1:]], axis=0)
    return tf.reduce_prod(_scaled(others, pre), axis=0) * tf.cast(pre * post, x.dtype)


def _own_rows(grad, op):
    """This rank's rows of ``grad``, an allgather's output gradient: every
    rank's dim 0 is gathered (on the host) to split it."""
    rows = tf.shape(op.inputs[0], out_type=tf.int64)[:1]
    every_rows = _ops.ringscope_allgather(rows, tensor_name=_grad_name(op, "grad_rows"), **_set(op))
    return tf.split(grad, every_rows, num=_size(op), axis=0)[_rank(op)]


@tf.RegisterGradient("RingscopeAllreduce")
def _allreduce_grad(op, grad):
    reduce_op = op.get_attr("reduce_op")
    pre, post = _reduce_factors(op)
    if reduce_op in (_SUM, _AVERAGE) or _horovod():
        return _ops.ringscope_allreduce(grad, reduce_op=reduce_op, prescale_factor=pre,
                                        postscale_factor=post, tensor_name=_grad_name(op), **_set(op))
    summed = _ops.ringscope_allreduce(grad, reduce_op=_SUM, tensor_name=_grad_name(op), **_set(op))
    if reduce_op == _PRODUCT:
        name = _grad_name(op, "grad_inputs")
        return summed * _product_others(op, op.inputs[0], name)
    return summed * _extreme_mask(op, op.outputs[0], op.inputs[0])


@tf.RegisterGradient("RingscopeGroupedAllreduce")
def _grouped_allreduce_grad(op, *grads):
    """Each member's gradient as the allreduce's (above), the group's Sum
    and Average as one grouped op again."""
    reduce_op = op.get_attr("reduce_op")
    pre, post = _reduce_factors(op)
    names = [n.decode() if isinstance(n, bytes) else n for n in op.get_attr("tensor_names")]
    if not names:  # an eager group's names are registered under its key
        from ringscope.tensorflow.collectives import group_member_names

        key = op.get_attr("tensor_name")
        names = list(group_member_names(key.decode() if isinstance(key, bytes) else key) or [])
    grads = [tf.zeros_like(out) if g is None else g for g, out in zip(grads, op.outputs)]
    if reduce_op in (_SUM, _AVERAGE) or _horovod():
        return _ops.ringscope_grouped_allreduce(
            grads, reduce_op=reduce_op, prescale_factor=pre, postscale_factor=post,
            tensor_names=[f"{n}/grad" for n in names], **_set(op))
    summed = _ops.ringscope_grouped_allreduce(
        grads, reduce_op=_SUM, tensor_names=[f"{n}/grad" for n in names], **_set(op))
    if reduce_op == _PRODUCT:
        return [s * _product_others(op, x, f"{n}/grad_inputs")
                for s, x, n in zip(summed, op.inputs, names)]
    return [s * _extreme_mask(op, out, x)
            for s, out, x in zip(summed, op.outputs, op.inputs)]


@tf.RegisterGradient("RingscopeAllgather")
def _allgather_grad(op, grad):
    reduced = _ops.ringscope_allreduce(grad, reduce_op=_AVERAGE if _horovod() else _SUM,
                                       tensor_name=_grad_name(op), **_set(op))
    return _own_rows(reduced, op)


@tf.RegisterGradient("RingscopeBroadcast")
def _broadcast_grad(op, grad):
    reduced = _ops.ringscope_allreduce(grad, reduce_op=_AVERAGE if _horovod() else _SUM,
                                       tensor_name=_grad_name(op), **_set(op))
    if _hvd.rank() == op.get_attr("root_rank"):
        return reduced
    # Zeros computed from the allreduce: a constant would let a graph run
    # (Session.run) prune the allreduce on this rank while the root waits.
    with tf.control_dependencies([reduced]):
        return tf.zeros_like(grad)


@tf.RegisterGradient("RingscopeReducescatter")
def _reducescatter_grad(op, grad):
    reduce_op = op.get_attr("reduce_op")
    pre, post = _reduce_factors(op)
    if reduce_op in (_SUM, _AVERAGE):
        if _horovod():
            factor = pre * post * (_size(op) if reduce_op == _SUM else 1)
        else:
            factor = pre * post / (_size(op) if reduce_op == _AVERAGE else 1)
        return _ops.ringscope_allgather(_scaled(grad, factor), tensor_name=_grad_name(op), **_set(op))
    gathered = _ops.ringscope_allgather(grad, tensor_name=_grad_name(op), **_set(op))
    full = _ops.ringscope_allgather(op.outputs[0], tensor_name=_grad_name(op, "grad_result"), **_set(op))
    return gathered * _extreme_mask(op, full, op.inputs[0])


@tf.RegisterGradient("RingscopeAlltoall")
def _alltoall_grad(op, grad, _received_splits_grad):
    back, _ = _ops.ringscope_alltoall(grad, op.outputs[1], tensor_name=_grad_name(op), **_set(op))
    return back, None
