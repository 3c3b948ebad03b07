"""The static kinds the generator tracks for every name, so the programs it writes are mostly valid.

A program that dies of a NameError or a shape error in its second statement tests nothing: the
generator knows, for each variable, what it holds (a tensor of which symbolic shape and dtype, an int,
a list of tensors, a Box...) and only writes operations that are valid on it. Shapes are tuples of
dimension words: "4", "2" or "B" (the batch size, which make_inputs may change between calls).

Tensor kinds carry two "may" flags: `grad` (may require grad: no in-place op outside no_grad) and
`fixed` (may not be written in place at all: expanded views, views of grad leaves).
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class TensorK:
    shape: tuple
    dtype: str = "f"            # f float32, i int64, b bool
    grad: bool = False
    fixed: bool = False

    def like(self, **changes):
        fields = dict(shape=self.shape, dtype=self.dtype, grad=self.grad, fixed=self.fixed)
        fields.update(changes)
        return TensorK(**fields)


@dataclass(frozen=True)
class ScalarK:
    name: str                   # int, float, bool, str


@dataclass(frozen=True)
class ListK:
    item: object                # INT or a TensorK of shape ("4",)


@dataclass(frozen=True)
class DictK:
    value: object               # str keys; INT or TensorK(("4",)) values


@dataclass(frozen=True)
class SetK:
    pass                        # a set of ints


@dataclass(frozen=True)
class TupleK:
    items: tuple


@dataclass(frozen=True)
class ObjK:
    cls: str                    # "Box" (plain), "Point" (__slots__), "Cfg" (dataclass)


@dataclass(frozen=True)
class NetK:
    pass                        # an instance of the program's Net(nn.Module)


@dataclass(frozen=True)
class FuncK:
    """A callable taking one tensor of `shape` (None: any shape) and returning one of the same shape."""
    grad: bool = False
    shape: tuple = None


INT = ScalarK("int")
FLOAT = ScalarK("float")
BOOL = ScalarK("bool")
STR = ScalarK("str")
VEC = ("4",)
MAT = ("4", "4")
BATCH = ("B", "4")
COLS = ("B",)
SCALAR = ()

# Attributes a fresh Box/Point/Cfg surely has, with their kinds (the tensor's flags are per program).
BOX_ATTRS = {"w": TensorK(VEC), "n": INT, "tag": STR, "items": ListK(INT)}
POINT_ATTRS = {"a": INT, "b": TensorK(VEC)}
CFG_ATTRS = {"depth": INT, "scale": FLOAT, "name": STR}


def is_float_tensor(kind):
    return isinstance(kind, TensorK) and kind.dtype == "f"


def writable(kind, no_grad):
    """May an in-place op write this tensor? Never when fixed; when it may need grad, only under no_grad."""
    return isinstance(kind, TensorK) and kind.dtype == "f" and not kind.fixed and (no_grad or not kind.grad)
