"""Profiler regions inside the translated frame: `with torch.profiler.record_function("name"):` as graph nodes.

Why this exists: optimizers' `step()` and much model code wrap their work in a record_function block;
running it as Python would split the graph at both ends of the block. The block becomes a pair of nodes
around the block's ops -- torch.ops.profiler._record_function_enter_new(name, args) at its start and
_record_function_exit._RecordFunction(handle) at its end -- which is what record_function's own
__enter__/__exit__ call, so a profiler active while the graph runs records the region as it would
eagerly (fx keeps both nodes: torch lists them as side-effectful). Nothing runs at translation: the
nodes get no fake propagation. The object bound by `as` is not modelled (using it is a graph break), and
as for every with-block other than grad mode, a break or an exception inside it runs the frame as Python.
"""
import torch

from ...errors import GraphBreak
from ..values.base import Const, Value
from .ctx_managers import MANAGER_FACTORIES, ManagerValue

_ENTER = torch.ops.profiler._record_function_enter_new
_EXIT = torch.ops.profiler._record_function_exit._RecordFunction


class RecordFunctionHandle(Value):
    """The `as` target of a record_function block: the real object exists only inside the graph."""
    __slots__ = ()

    def python_type(self):
        return torch.autograd.profiler.record_function

    def __repr__(self):
        return "RecordFunctionHandle()"


class RecordFunctionManager(ManagerValue):
    __slots__ = ("name", "args", "handle")
    never_suppresses = True           # its __exit__ returns None: an exception inside passes through

    def __init__(self, name, args):
        super().__init__()
        self.name = name
        self.args = args
        self.handle = None

    def python_type(self):
        return torch.autograd.profiler.record_function

    def enter(self, tx):
        self._check_fresh()
        self.handle = _node(tx, _ENTER, (self.name, self.args))
        return RecordFunctionHandle(None)

    def exit(self, tx, exc_type=None):
        if exc_type is not None:
            raise GraphBreak("with", "an exception leaving a record_function block")
        _node(tx, _EXIT, (self.handle,))
        return Const(False)

    def __repr__(self):
        return f"RecordFunctionManager({self.name!r})"


def _node(tx, target, args):
    builder = tx.ctx.graph
    node = builder.graph.create_node("call_function", target, args, {})
    node.meta["example_value"] = None
    builder.created.append(node)
    return node


def record_function(tx, args, kwargs):
    """torch.profiler.record_function(name, args=None) (torch.autograd.profiler.record_function)."""
    values = list(args) + [kwargs[k] for k in ("name", "args") if k in kwargs]
    if len(values) not in (1, 2) or set(kwargs) - {"name", "args"} or \
            not all(isinstance(v, Const) for v in values):
        raise GraphBreak("with", "record_function() with arguments that are not constant strings")
    name = values[0].value
    extra = values[1].value if len(values) == 2 else None
    if type(name) is not str or not (extra is None or type(extra) is str):
        raise GraphBreak("with", "record_function() with arguments that are not strings")
    return RecordFunctionManager(name, extra)


MANAGER_FACTORIES[torch.autograd.profiler.record_function] = record_function
