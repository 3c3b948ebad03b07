"""A tensor's own attributes: the names users put in its instance __dict__ (`x.offloading = True`,
`t.add_one = fn`, `hasattr(x, "test")`), which torch.Tensor does not define.

A tensor the frame received is a real object: reading `x.name` looks in its __dict__ with a guard on
the answer (`'name' in x.__dict__`), present or absent, and wraps what it holds from its Source, so a
later call with a tensor that has (or lacks) the attribute is a cache miss, not a stale answer. A
store is a side effect replayed after the graph (`setattr(x, name, v)`), which later reads in the frame
see. A tensor the graph makes has an empty __dict__ until the frame stores into it: its stores are
replayed on the graph's output after the graph (side_effects.py's `value_attr`), in program order with
the other effects. Only stores that cannot raise take this path -- a name torch.Tensor does not define
at all, or `.grad` set to None or to a tensor of the same shape, dtype, device and layout -- because a
replayed store happens after the graph's ops, and one that raised would do so too late. Tensor
subclasses with their own attribute lookup keep breaking (their __getattr__ is code to run).
"""
import torch

from ....errors import GraphBreak
from ...source import AttrSource
from ..base import Const, TensorValue, Value
from ..objects.lookup_steps import DELETED
from ..objects.attribute_sources import InstanceHasSource

PLAIN_TENSOR_TYPES = (torch.Tensor, torch.nn.Parameter)


def _input_tensor(tx, t):
    """The real tensor a TensorValue stands for when the frame received it (with a Source), else None."""
    if t.source is None:
        return None
    return next((tensor for _source, tensor, node in tx.ctx.graph.inputs if node is t.node), None)


def _owner(tx, t):
    """The key side_effects.py files t's attribute stores under: the real input tensor, or its graph node."""
    real = _input_tensor(tx, t)
    return real if real is not None else t.node


def is_instance_name(name):
    """A name torch.Tensor does not define: only an instance __dict__ can hold it."""
    return not hasattr(torch.Tensor, name)


def _no_attribute(name):
    return GraphBreak("attribute error", f"AttributeError: 'Tensor' object has no attribute '{name}'")


def read_tensor_attr(tx, t, name):
    """`t.name` for a name torch.Tensor does not define, or None when framejit cannot tell (a break)."""
    pending = tx.ctx.side_effects.pending_attr(_owner(tx, t), name)
    if pending is DELETED:
        raise _no_attribute(name)
    if pending is not None:
        return pending
    real = _input_tensor(tx, t)
    if real is None or type(real) not in PLAIN_TENSOR_TYPES:
        return None
    present = name in real.__dict__
    tx.ctx.guards.add("CONST_MATCH", InstanceHasSource(t.source, name), present)
    if not present:
        raise _no_attribute(name)
    return tx.ctx.wrap(real.__dict__[name], AttrSource(t.source, name))


def has_tensor_attr(tx, t, name):
    """hasattr(t, name) for a name torch.Tensor does not define (guarded), or None when only a read can tell.
    A tensor the graph made holds only what the frame stored into it: False otherwise."""
    pending = tx.ctx.side_effects.pending_attr(_owner(tx, t), name)
    if pending is not None:
        return pending is not DELETED
    real = _input_tensor(tx, t)
    if real is None:
        return False
    if type(real) not in PLAIN_TENSOR_TYPES:
        return None
    present = name in real.__dict__
    tx.ctx.guards.add("CONST_MATCH", InstanceHasSource(t.source, name), present)
    return present


def _store_cannot_raise(t, name, value):
    if is_instance_name(name):
        return True
    if name != "grad":
        return False
    if isinstance(value, Const) and value.value is None:
        return True
    if not isinstance(value, TensorValue):
        return False
    fake, f = value.fake, t.fake
    return all(type(n) is int for n in (*fake.shape, *f.shape)) and fake.shape == f.shape and \
        fake.dtype == f.dtype and fake.device == f.device and fake.layout == f.layout


def store_tensor_attr(tx, t, name, value):
    """`t.name = value` as a side effect after the graph; False when it must stay a break."""
    if not isinstance(value, Value) or not _store_cannot_raise(t, name, value):
        return False
    real = _input_tensor(tx, t)
    if real is not None:
        if type(real) not in PLAIN_TENSOR_TYPES:
            return False
        tx.ctx.side_effects.store_attr(real, t.source, name, value, in_dict=is_instance_name(name))
        return True
    if t.source is not None or t.node.op == "placeholder":
        return False                      # a tensor framejit did not see made: its __dict__ is unknown
    tx.ctx.side_effects.store_value_attr(t.node, t, name, value)
    return True
