"""`with torch._C.DisableTorchFunctionSubclass():` in the frame (a subclass's __torch_function__ often
runs its func that way instead of calling super()): tensor subclass dispatch is off for the block while
translating (values/tensors/tensor_subclasses.py), which changes nothing in the graph: its ops are plain already.
"""
import torch

from ...errors import GraphBreak
from ..values.base import Const
from ..values.managers.state_managers import MANAGER_FACTORIES, ManagerValue


class TorchFunctionOff(ManagerValue):
    __slots__ = ("kind",)

    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def python_type(self):
        return self.kind

    def enter(self, tx):
        self._check_fresh()
        tx.ctx.torch_function_disabled += 1
        return Const(None)

    def exit(self, tx, exc_type=None):
        tx.ctx.torch_function_disabled -= 1
        return Const(None)


def _factory(kind):
    def make(tx, args, kwargs):
        if args or kwargs:
            raise GraphBreak("bad call", f"{kind.__name__}() takes no arguments")
        return TorchFunctionOff(kind)
    return make


for _kind in (torch._C.DisableTorchFunctionSubclass, torch._C.DisableTorchFunction):
    MANAGER_FACTORIES[_kind] = _factory(_kind)
