"""`Tensor.type()` and `x.__class__` on graph tensors.

Why this exists: `x.type()` (the legacy type name, "torch.FloatTensor") is read in conditions and
messages, and `x.type(torch.float64)` / `x.type("torch.DoubleTensor")` is an old spelling of a dtype
conversion; both are metadata, known at translation. The name comes from a real empty CPU tensor of
the same dtype (so it is exactly what torch answers); the conversion is `x.to(dtype)`, which, like
`Tensor.type`, hands back the tensor itself when the dtype already matches. Other devices break.
"""
import torch

from ....errors import GraphBreak
from ..base import Const, ObjectValue
from ..protocol import as_python


def _name_of(dtype):
    return torch.empty(0, dtype=dtype).type()


def _dtype_of(spec):
    if isinstance(spec, torch.dtype):
        return spec
    if isinstance(spec, str) or isinstance(spec, type):
        try:
            out = torch.empty(0).type(spec)
        except Exception as e:
            raise GraphBreak("constant op raised", f"Tensor.type({spec!r}) raised {type(e).__name__}: {e}")
        if out.device.type != "cpu":
            raise GraphBreak("device", f"Tensor.type({spec!r}) moves the tensor to another device")
        return out.dtype
    raise GraphBreak("bad call", f"TypeError: Tensor.type() got {type(spec).__name__}")


def tensor_type_method(tx, t, args, kwargs):
    if t.fake.device.type != "cpu":
        raise GraphBreak("device", "Tensor.type() of a tensor that is not on the CPU")
    dtype_arg = args[0] if args else kwargs.get("dtype")
    if dtype_arg is None or isinstance(dtype_arg, Const) and dtype_arg.value is None:
        return Const(_name_of(t.fake.dtype))
    dtype = _dtype_of(as_python(dtype_arg))
    if dtype == t.fake.dtype:
        return t
    return tx.ctx.graph.call_method("to", (t, Const(dtype)), {})


def tensor_class(t):
    """x.__class__ of a graph tensor: torch.Tensor (torch.nn.Parameter for a parameter)."""
    return ObjectValue(t.python_type())
