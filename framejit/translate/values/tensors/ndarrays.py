"""numpy arrays and scalars as symbolic values: an ndarray is a graph tensor read with numpy's rules.

`x.numpy()` shares memory with `x`, so an NdarrayValue holds the TensorValue of its data: the same
graph tensor the frame's torch code sees, and writes through either name land in one storage. What an
ndarray *means* (its dtype rules, promotion, which operations return numpy scalars) is numpy's, and
the operations themselves are asked of the numpy bridge (`lookasides/numpy_calls.py`), which installs
itself in BRIDGE: this module only holds the value and routes Python's protocols (attributes, methods,
operators, indexing, len, iteration, truth) to it. `scalar` marks a numpy scalar (np.float64 ...): a
0-d array that comes back as a scalar when it leaves the graph.

numpy scalars known at translation (`np.float32(2.0)`, a global `EPS = np.float32(1e-6)`) stay real
objects (ObjectValue): they are immutable; `is_numpy_constant` finds them.
"""
import numpy as np
import torch

from ....errors import GraphBreak
from ..base import Const, MethodValue, ObjectValue, Value

BRIDGE = None      # set by lookasides/numpy_calls.py: the object that runs numpy operations in the graph

NUMPY_OF_TORCH = {torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16,
                  torch.int32: np.int32, torch.int64: np.int64, torch.float16: np.float16,
                  torch.float32: np.float32, torch.float64: np.float64, torch.complex64: np.complex64,
                  torch.complex128: np.complex128}
TORCH_OF_NUMPY = {np.dtype(v): k for k, v in NUMPY_OF_TORCH.items()}


def numpy_dtype(fake):
    """The numpy dtype of a graph tensor's data, or None when numpy has none (bfloat16...)."""
    t = NUMPY_OF_TORCH.get(fake.dtype)
    return None if t is None else np.dtype(t)


def is_numpy_constant(v):
    """A numpy scalar known at translation (a real np.generic held by the value)."""
    return isinstance(v, ObjectValue) and isinstance(v.obj, np.generic) or \
        isinstance(v, Const) and isinstance(v.value, np.generic)


def numpy_involved(a, b=None):
    return isinstance(a, NdarrayValue) or isinstance(b, NdarrayValue) or is_numpy_constant(a) or is_numpy_constant(b)


def to_ndarray(t):
    """A graph output as the ndarray the frame made (memory shared with the tensor, as x.numpy() does)."""
    return t.numpy(force=True)


def to_numpy_scalar(t):
    return t.numpy(force=True)[()]


class NdarrayValue(Value):
    __slots__ = ("tensor", "scalar")

    def __init__(self, tensor, scalar=False, source=None):
        super().__init__(source)
        self.tensor = tensor
        self.scalar = scalar

    @property
    def dtype(self):
        return numpy_dtype(self.tensor.fake)

    def python_type(self):
        return self.dtype.type if self.scalar else np.ndarray

    def __repr__(self):
        return f"NdarrayValue({'scalar ' if self.scalar else ''}{self.tensor!r})"

    # ---- leaving the graph -----------------------------------------------------------------------
    def rebuild_parts(self):
        return [self.tensor]

    def rebuild(self, rb):
        if self.source is not None:           # an ndarray the frame received: the same object
            return rb.reload(self.source)
        return f"{rb.ns.bind(to_numpy_scalar if self.scalar else to_ndarray)}({rb.expr(self.tensor)})"

    # ---- Python protocols ------------------------------------------------------------------------
    def load_attr(self, tx, name):
        fake = self.tensor.fake
        if name == "shape":
            return Const(tuple(fake.shape))
        if name == "ndim":
            return Const(fake.ndim)
        if name == "size":
            return Const(fake.numel())
        if name == "dtype":
            return Const(self.dtype)
        if name == "itemsize":
            return Const(self.dtype.itemsize)
        if name == "nbytes":
            return Const(self.dtype.itemsize * fake.numel())
        if name == "strides" and (self.source is not None or self.tensor.source is not None):
            # a received array's own layout, or an input tensor's read through x.numpy() (same memory)
            return Const(tuple(s * self.dtype.itemsize for s in fake.stride()))
        return BRIDGE.attribute(tx, self, name)

    def call_method(self, tx, name, args, kwargs):
        return BRIDGE.method(tx, self, name, args, kwargs)

    def getitem(self, tx, index):
        return BRIDGE.getitem(tx, self, index)

    def setitem(self, tx, index, value):
        BRIDGE.setitem(tx, self, index, value)

    def length(self, tx):
        if self.tensor.fake.ndim == 0:
            raise GraphBreak("len", "len() of a numpy scalar or 0-d array raises TypeError")
        return self.tensor.fake.shape[0]

    def unpack(self, tx):
        return [self.getitem(tx, Const(i)) for i in range(self.length(tx))]

    def truth(self, tx):
        raise GraphBreak("data-dependent branch", "the branch depends on a numpy array's values")


def method_of(value, name):
    return MethodValue(value, name)
