"""Attribute reads on symbolic values (LOAD_ATTR, LOAD_METHOD, STORE_ATTR).

Tensor metadata (.shape, .dtype, .device, .ndim, ...) folds to constants: every input tensor is guarded
on exactly these, and every graph tensor's metadata comes from its fake tensor. Attributes of real
objects -- plain Python objects, classes, modules, nn.Modules -- go through values/objects/attribute_model.py: one model of
the object's attributes with the frame's own writes and deletes, Python's lookup order, and a guard on
each outcome (absence included); data descriptors written in Python (properties) are inlined by the
caller (PropertyCall).
"""
import abc
import inspect
import types

import torch

from ...errors import GraphBreak
from ..source import AttrSource
from .objects.attribute_model import (PropertyCall, delete_class_attr, delete_instance_attr, has_python_lookup,
    is_generic, read_class_attr, read_instance_attr, read_real_attr, read_through_override)
from .base import GENERIC, Const, DictValue, MethodValue, ObjectValue, SeqValue, SetValue, TensorValue, Value
from .containers.namedtuples import namedtuple_attr
from .tensors.tensor_type import tensor_class
from .tensors.tensor_subclasses import NOT_DISPATCHED
from .tensors.tensor_subclass_members import subclass_attr
from .tensors.tensor_instance_attrs import is_instance_name, read_tensor_attr, store_tensor_attr
from .objects.new_objects import NewObject, is_plain_instance, store_input_attr
from .numbers.sym_values import SymValue, symbolic_metadata
from .protocol import as_python, is_namedtuple_class, is_structseq_class, wrap_unsourced

TENSOR_CONST_ATTRS = {
    "shape": lambda f: torch.Size(f.shape),
    "dtype": lambda f: f.dtype,
    "device": lambda f: f.device,
    "ndim": lambda f: f.ndim,
    "requires_grad": lambda f: f.requires_grad,
    "is_cuda": lambda f: f.is_cuda,
    "is_sparse": lambda f: f.is_sparse,
    "is_quantized": lambda f: f.is_quantized,
    "is_meta": lambda f: False,
    "layout": lambda f: f.layout,
    "is_leaf": None,                   # depends on autograd history: handled below
    "itemsize": lambda f: f.itemsize,
    "is_nested": lambda f: f.is_nested,
    "is_mkldnn": lambda f: False,
    "is_sparse_csr": lambda f: False,
    "is_xpu": lambda f: f.device.type == "xpu",
    "is_mps": lambda f: f.device.type == "mps",
}
TENSOR_VIEW_ATTRS = {"T", "mT", "H", "mH", "real", "imag"}
HEAPTYPE = 1 << 9


def load_attr(tx, obj, name):
    """Value of `obj.name` (no method binding)."""
    if isinstance(obj, TensorValue):
        return tensor_attr(tx, obj, name)
    if isinstance(obj, SymValue):          # a symbolic number's method or attribute: of its guarded value
        obj = Const(obj.as_python())
    if isinstance(obj, Const):
        try:
            real = getattr(obj.value, name)
        except AttributeError as e:
            raise GraphBreak("attribute error", f"AttributeError: {e}")
        if callable(real) and not isinstance(real, type):
            return MethodValue(obj, name)
        return wrap_unsourced(real)
    if isinstance(obj, SeqValue):
        if is_namedtuple_class(obj.kind) and name in obj.kind._fields:
            return obj.items[obj.kind._fields.index(name)]
        if is_namedtuple_class(obj.kind):
            attr = namedtuple_attr(tx, obj, name)
            if attr is not None:
                return attr
        if is_structseq_class(obj.kind) and name in obj.kind.__match_args__:
            return obj.items[obj.kind.__match_args__.index(name)]
        if not hasattr(obj.kind, name):    # its instance __dict__ is empty (guarded where it came in)
            raise GraphBreak("attribute error", f"AttributeError: '{obj.kind.__name__}' object has no attribute '{name}'")
        return MethodValue(obj, name)
    if isinstance(obj, DictValue) and obj.kind is not dict:     # (no DictValue kind has attribute rules of its own)
        from .dicts.dict_kind_attrs import instance_attr
        from .dicts.dict_kinds import load_attr as dict_kind_attr
        own = instance_attr(tx, obj, name)          # its own attributes (values/dicts/dict_kind_attrs.py)
        if own is not None:
            return own
        return dict_kind_attr(tx, obj, name)
    if isinstance(obj, (DictValue, SetValue)):
        return MethodValue(obj, name)
    if isinstance(obj, NewObject) and name != "__class__":
        override = new_object_lookup(tx, obj)
        if override is not None:           # the class's Python __getattribute__, inlined
            return read_new_object_through(tx, obj, override, name)
    own = obj.load_attr(tx, name)           # value kinds with their own attribute rules (ModuleValue...)
    if own is not GENERIC:
        return own
    if isinstance(obj, ObjectValue):
        return object_attr(tx, obj, name)
    raise GraphBreak("attribute", f"attribute {name!r} of {obj!r} is not supported")


def tensor_attr(tx, t, name):
    if t.cls is not None:                 # a tensor subclass instance (values/tensors/tensor_subclasses.py)
        out = subclass_attr(tx, t, name)
        if out is not NOT_DISPATCHED:
            return out
    if name == "shape":
        sizes = symbolic_metadata(tx, t, "shape")      # dynamic shapes: graph values, not constants
        if sizes is not None:
            return sizes
    fold = TENSOR_CONST_ATTRS.get(name)
    if fold is not None:
        return Const(fold(t.fake))
    if name == "is_leaf":
        # fakes carry the autograd history of the ops that made them: a tensor the frame detached and
        # then set requires_grad on is a leaf that requires grad
        if getattr(t.fake, "framejit_history_unreadable", False):     # graph/fake_inputs.py
            raise GraphBreak("tensor attribute", "is_leaf of a view whose base was written since: autograd "
                             "refuses to read its history")
        if t.source is not None:           # an input: the entry holds for inputs of its leaf-ness only
            tx.ctx.guards.require_leaf(t.source)
        return Const(t.fake.is_leaf)
    if name == "__class__":
        return tensor_class(t)
    if name in TENSOR_VIEW_ATTRS:
        return tx.ctx.graph.call_function(getattr, (t, Const(name)), {})
    if name == "data":
        return tx.ctx.graph.call_method("detach", (t,), {})
    if name == "grad":
        grad = input_grad(tx, t)
        if grad is not None:
            return grad
    if name == "grad_fn" and not t.fake.requires_grad:
        return Const(None)       # no history without requires_grad (an input's flag is guarded)
    if name in ("grad", "grad_fn", "_version", "_base"):
        raise GraphBreak("tensor attribute", f"reading tensor.{name} is not supported in a graph")
    if callable(getattr(torch.Tensor, name, None)):
        return MethodValue(t, name)
    if is_instance_name(name):                 # the tensor's own __dict__ (values/tensors/tensor_instance_attrs.py)
        found = read_tensor_attr(tx, t, name)
        if found is not None:
            return found
    raise GraphBreak("tensor attribute", f"tensor attribute {name!r} is not supported")


def input_grad(tx, t):
    """`.grad` of a tensor the frame received (optimizers read every parameter's): the real attribute,
    wrapped from its Source (a tensor input, or None, guarded either way), or the frame's own store to
    it; None for other tensors (a break)."""
    if t.source is None:
        return None
    real = next((tensor for _source, tensor, node in tx.ctx.graph.inputs if node is t.node), None)
    if real is None:
        return None
    pending = tx.ctx.side_effects.pending_attr(real, "grad")
    if pending is not None:
        if not isinstance(pending, Value):
            raise GraphBreak("tensor attribute", "reading tensor.grad after deleting it")
        return pending
    return tx.ctx.wrap(real.grad, AttrSource(t.source, "grad"))


def store_input_grad(tx, t, value):
    """`p.grad = None` (zero_grad, set_to_none) or `p.grad = g` on a tensor the frame received: a side
    effect made after the graph, which later reads of p.grad in the frame see (input_grad). Only where the
    store cannot raise (None, or a tensor of p's shape, dtype and device), so its later place changes
    nothing; anything else is a break. Returns whether it was recorded."""
    if t.source is None:
        return False
    real = next((tensor for _source, tensor, node in tx.ctx.graph.inputs if node is t.node), None)
    if real is None:
        return False
    if isinstance(value, Const) and value.value is None:
        pass
    elif isinstance(value, TensorValue):
        fake, f = value.fake, t.fake
        if any(type(n) is not int for n in (*fake.shape, *f.shape)) or fake.shape != f.shape or \
                fake.dtype != f.dtype or fake.device != f.device or fake.layout != f.layout:
            return False
    else:
        return False
    tx.ctx.side_effects.store_attr(real, t.source, "grad", value, in_dict=False)
    return True


def object_attr(tx, obj, name):
    """`obj.name` for a real object (values/objects/attribute_model.py: one model of the object's attributes, the frame's
    own writes and deletes included, with the absence of an attribute guarded like its presence)."""
    real_obj = obj.obj
    if has_plain_lookup(real_obj):
        return read_instance_attr(tx, obj, name)
    if is_plain_instance(real_obj) and has_python_lookup(tx, obj):
        return read_through_override(tx, obj, name)
    if is_plain_class(real_obj):
        return read_class_attr(tx, obj, name)
    pending = tx.ctx.side_effects.pending_attr(real_obj, name)
    if pending is not None:
        return read_real_attr(tx, obj, name)
    try:
        static = inspect.getattr_static(real_obj, name)
    except AttributeError:
        static = None
    if isinstance(static, property) and not isinstance(real_obj, type):
        return PropertyCall(obj, static)
    if isinstance(static, (types.FunctionType, staticmethod, classmethod)) and not isinstance(real_obj, (type, types.ModuleType)):
        return MethodValue(obj, name)
    return read_real_attr(tx, obj, name)


def has_plain_lookup(obj):
    """A plain Python object (identity.is_plain_instance) whose attribute lookup is object's own."""
    return is_plain_instance(obj) and is_generic(type(obj).__getattribute__, "__getattribute__")


def is_plain_class(obj):
    """A class written in Python whose metaclass looks attributes up as type does."""
    return isinstance(obj, type) and bool(obj.__flags__ & HEAPTYPE) and type(obj) in (type, abc.ABCMeta)


# ---- LOAD_ATTR / STORE_ATTR ------------------------------------------------------------------------

def get_attribute(tx, obj, name):
    """`obj.name` as LOAD_ATTR reads it: a Python property's getter runs (inlined)."""
    v = load_attr(tx, obj, name)
    if isinstance(v, PropertyCall):
        return call_property(tx, v)
    return v


def call_property(tx, pc):
    """Read a Python property: its getter runs on the owner (inlined)."""
    return tx.inline(pc.prop.fget, None, [pc.owner], {})


def store_attr(tx, obj, name, value):
    """`obj.name = value` as STORE_ATTR does it: recorded as a side effect, or through the value kind's
    own store_attr (objects made in the frame run their property setters and __setattr__)."""
    if isinstance(obj, ObjectValue) and is_plain_instance(obj.obj):
        store_input_attr(tx, obj, name, value)
        return
    if isinstance(obj, ObjectValue):
        if obj.source is None and not tx.ctx.is_local_object(obj):
            raise GraphBreak("store attr", f"setting .{name} on an object framejit cannot reach")
        tx.ctx.store_object_attr(tx, obj, name, value)
        return
    if obj.store_attr(tx, name, value) is not GENERIC:
        return
    if isinstance(obj, DictValue):
        from .dicts.dict_kind_attrs import store_instance_attr
        if store_instance_attr(tx, obj, name, value):
            return
    if isinstance(obj, TensorValue):
        if name == "grad" and store_input_grad(tx, obj, value):
            return
        if store_tensor_attr(tx, obj, name, value):
            return
        raise GraphBreak("store attr", f"setting tensor.{name} is not supported")
    raise GraphBreak("store attr", f"setting .{name} on {obj!r} is not supported")


def new_object_lookup(tx, obj):
    """The Python __getattribute__ of a NewObject's class (transformers' configs rename through their
    attribute_map there), or None when lookup is object's own."""
    from .objects.lookup_steps import class_lookup
    from .objects.attribute_sources import mro_lookup
    found = mro_lookup(obj.cls, "__getattribute__")
    if is_generic(found, "__getattribute__") or not isinstance(found, types.FunctionType):
        return None
    return class_lookup(tx, obj.cls, "__getattribute__")


def read_new_object_through(tx, obj, fn, name):
    """`obj.name` through `fn` (its object.__getattribute__ is the plain lookup), then the class's
    __getattr__ when that raises AttributeError, as the type slot does."""
    from .objects.lookup_steps import class_lookup
    from .objects.attribute_model import is_attribute_error
    from .objects.new_objects import inline
    try:
        return inline(tx, fn, [obj, Const(name)])
    except GraphBreak as gb:
        if not is_attribute_error(gb):
            raise
        getattr_fn = class_lookup(tx, obj.cls, "__getattr__")
        if not isinstance(getattr_fn, types.FunctionType):
            raise
    return inline(tx, getattr_fn, [obj, Const(name)])


def object_getattribute_lookaside(tx, args, kwargs):
    if len(args) != 2 or kwargs:
        raise GraphBreak("bad call", "TypeError: object.__getattribute__ takes exactly 2 arguments")
    obj, name = args[0], as_python(args[1])
    if isinstance(obj, NewObject):
        return obj.load_attr(tx, name, use_getattr=False)
    if isinstance(obj, ObjectValue) and is_plain_instance(obj.obj):
        v = read_instance_attr(tx, obj, name, use_getattr=False)
        return call_property(tx, v) if isinstance(v, PropertyCall) else v
    raise GraphBreak("attribute", f"object.__getattribute__ on {obj!r}")


def delete_attribute(tx, obj, name):
    """`del obj.name` (values/objects/attribute_model.py: the same model as reads and stores)."""
    if isinstance(obj, ObjectValue) and is_plain_instance(obj.obj):
        delete_instance_attr(tx, obj, name)
    elif isinstance(obj, ObjectValue) and is_plain_class(obj.obj):
        delete_class_attr(tx, obj, name)
    else:
        obj.delete_attr(tx, name)
