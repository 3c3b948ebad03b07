"""Profiler regions inside the translated frame: `with torch.profiler.record_function("name"):` as graph nodes.

Why this exists: optimizers' `step()` and much model code wrap their work in a record_function block;
running it as Python would split the graph at both ends of the block. The block becomes a pair of nodes
around the block's ops -- torch.ops.profiler._record_function_enter_new(name, args) at its start and
_record_function_exit._RecordFunction(handle) at its end -- which is what record_function's own
__enter__/__exit__ call, so a profiler active while the graph runs records the region as it would
eagerly (fx keeps both nodes: torch lists them as side-effectful). Nothing runs at translation: the
nodes get no fake propagation. The object bound by `as` is not modelled (using it is a graph break), and
as for every with-block other than grad mode, a break or an exception inside it runs the frame as Python.

A whole-profiler block (`with torch.profiler.profile():`, `torch.autograd.profiler.profile()`) whose profile
object the frame never reads is a block whose profiling nobody can observe: its events are reachable only
through that object. Its body joins the graph and the profiler is not started (torch.compile does the
same). It stays a graph break -- the frame runs as Python and the profiler for real -- when the object is
bound to a name the code reads, when a callback would run user code on the profile (on_trace_ready,
schedule, custom_trace_id_callback), or when a profiler is already running: eager's nested block would stop
the outer session, so "no profiler running" is guarded.
"""
import torch

from ...errors import GraphBreak
from ..values.base import Const, Value
from ..values.managers.state_managers import MANAGER_FACTORIES, ManagerValue, NullManager

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


_CALLBACKS = ("on_trace_ready", "schedule", "custom_trace_id_callback", "execution_trace_observer")
_LOADS = ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_CLOSURE", "LOAD_DEREF", "LOAD_CLASSDEREF", "DELETE_FAST",
          "LOAD_NAME")


def _bound_name_is_read(tx):
    """Does the code read the object `with <call> as name` binds? (The call is the current instruction,
    BEFORE_WITH follows it, then the store of the `as` target or a POP_TOP.)"""
    i = tx.index.get(tx.inst)
    if i is None or i + 2 >= len(tx.instructions) or tx.instructions[i + 1].opname != "BEFORE_WITH":
        return True
    target = tx.instructions[i + 2]
    if target.opname == "POP_TOP":
        return False
    if target.opname != "STORE_FAST" or target.argval in tx.code.co_cellvars:
        return True
    names = {"locals", "vars", "dir", "eval", "exec"}
    return any(inst.opname in _LOADS and inst.argval == target.argval or
               inst.opname in ("LOAD_GLOBAL", "LOAD_NAME") and inst.argval in names for inst in tx.instructions)


def _profile_factory(kind):
    def factory(tx, args, kwargs):
        name = f"{kind.__module__}.{kind.__qualname__}"
        if any(k in kwargs and not (isinstance(kwargs[k], Const) and kwargs[k].value is None) for k in _CALLBACKS):
            raise GraphBreak("with", f"{name}() with a callback: the profiler runs for real")
        if not all(isinstance(v, Const) for v in list(args) + list(kwargs.values())):
            raise GraphBreak("with", f"{name}() with arguments that are not constants")
        if _bound_name_is_read(tx):
            raise GraphBreak("with", f"the {name} object is read after the block: the profiler runs for real")
        if _profiler_enabled():
            raise GraphBreak("with", f"{name}() inside a running profiler (eager's block stops the outer session)")
        tx.ctx.guards.add("STATE_MATCH", None, (_profiler_enabled, False))
        return NullManager(Const(None), kind)    # nothing the program can see happens
    return factory


_profiler_enabled = torch._C._autograd._profiler_enabled
for _kind in (torch.autograd.profiler.profile, torch.profiler.profile):
    MANAGER_FACTORIES[_kind] = _profile_factory(_kind)
