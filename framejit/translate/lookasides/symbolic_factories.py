"""`torch.tensor(t)` / `torch.tensor([t, ...])` / `torch.as_tensor(t)` of symbolic Python numbers, kept
symbolic: one `scalar_tensor` per number (stacked for a list) instead of torch.tensor's own fake
kernel, which reads each number as a plain int and so pins it (`t == 50`).

Why this exists: a sampler passes its timestep as a Python int that changes every call (diffusers'
UNet turns it into `torch.tensor([timestep])`). After the first change the int is symbolic, but the
factory specialised it again: every step recompiled (`t >= 25 no longer holds`) and hit the recompile
limit, where torch.compile settles into one dynamic entry. The dtype is torch.tensor's: int64 for ints,
bool for bools, the default dtype (guarded) when a float is among them, or the one given.
"""
import torch

from ..values.base import Const, SeqValue
from ..values.numbers.sym_values import SymValue

FACTORIES = (torch.tensor, torch.as_tensor)


def _is_number(v):
    return isinstance(v, SymValue) or (isinstance(v, Const) and type(v.value) in (int, float, bool))


def symbolic_data(args, kwargs) -> bool:
    """Is this a torch.tensor call this module makes: symbolic numbers (or a flat list of numbers, one of
    them symbolic), with at most dtype and device given?"""
    if len(args) != 1 or set(kwargs) - {"dtype", "device"}:
        return False
    data = args[0]
    if isinstance(data, SymValue):
        return True
    return isinstance(data, SeqValue) and data.kind in (list, tuple) and bool(data.items) and \
        all(_is_number(i) for i in data.items) and any(isinstance(i, SymValue) for i in data.items)


def _kind(v):
    if isinstance(v, Const):
        return type(v.value)
    sym = v.sym
    return float if isinstance(sym, (float, torch.SymFloat)) else bool if isinstance(sym, (bool, torch.SymBool)) else int


def tensor_of_numbers(tx, args, kwargs):
    data = args[0]
    items = [data] if isinstance(data, SymValue) else list(data.items)
    dtype = kwargs.get("dtype")
    if dtype is None or (isinstance(dtype, Const) and dtype.value is None):
        kinds = {_kind(i) for i in items}
        if float in kinds:
            tx.ctx.guard_state(torch.get_default_dtype)
            dtype = Const(torch.get_default_dtype())
        else:
            dtype = Const(torch.bool if kinds == {bool} else torch.int64)
    extra = {"dtype": dtype}
    if "device" in kwargs:
        extra["device"] = kwargs["device"]
    scalars = [tx.ctx.graph.call_function(torch.scalar_tensor, (i,), dict(extra)) for i in items]
    if isinstance(data, SymValue):
        return scalars[0]
    return tx.ctx.graph.call_function(torch.stack, (SeqValue(list, scalars),), {})
