"""torch's own queries that library and torch.nn code asks on its hot path, answered at translation.

Why this exists: torch.nn's fast-path checks (`torch.overrides.has_torch_function(tensor_args)` in
MultiheadAttention and TransformerEncoderLayer, `_is_make_fx_tracing()` reading the dispatch-mode
stack) and the `has_torch_function_unary/variadic` guards of library functions are builtins of
torch._C that framejit could neither inline nor put in a graph: each was a graph break, and inside a
nested call a frame that ran as plain Python. Each is a pure query whose answer is fixed by what the
guards already pin:

* `has_torch_function*(...)`: False for plain tensors and parameters (their type is guarded), for
  constants, and for containers of those; a tensor subclass or an object whose type defines
  `__torch_function__` keeps the old path (a graph break), and so does a TorchFunctionMode active
  while translating.
* `_log_api_usage_once(name)`: made at translation (torch logs each name once per process).
* `_get_current_dispatch_mode_stack()`: the empty list when no TorchDispatchMode is active while
  translating (the usual case; a graph run under a mode is torch's business), else a break.
"""
import torch
import torch.overrides
import torch.utils._python_dispatch as python_dispatch

from ...errors import GraphBreak
from ..dispatch import lookaside
from ..values.base import Const, SeqValue, TensorValue

_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def _no_torch_function(value) -> bool:
    """Is `value` known, from what the guards pin, to have no __torch_function__ of its own?"""
    if isinstance(value, TensorValue):
        return value.cls is None or value.cls in _PLAIN_TENSORS
    if isinstance(value, Const):
        return not hasattr(type(value.value), "__torch_function__") or type(value.value) in _PLAIN_TENSORS
    if isinstance(value, SeqValue):
        return all(_no_torch_function(item) for item in value.items)
    return False


def _modes_off(name):
    if torch._C._is_torch_function_mode_enabled():
        raise GraphBreak("call", f"{name} under an active TorchFunctionMode")


def _answer_false(name, unpack_first):
    def impl(tx, args, kwargs):
        if kwargs:
            raise GraphBreak("call", f"{name} with keyword arguments")
        _modes_off(name)
        values = list(args)
        if unpack_first:
            if len(values) != 1 or not isinstance(values[0], SeqValue):
                raise GraphBreak("call", f"{name} of something other than a tuple or list")
            values = list(values[0].items)
        if all(_no_torch_function(v) for v in values):
            return Const(False)
        raise GraphBreak("call", f"{name} on a value with its own __torch_function__")
    return impl


for _fn, _name, _unpack in ((torch._C._has_torch_function, "has_torch_function", True),
                            (torch._C._has_torch_function_unary, "has_torch_function_unary", False),
                            (torch._C._has_torch_function_variadic, "has_torch_function_variadic", False)):
    lookaside(_fn)(_answer_false(_name, _unpack))
    for _alias in {getattr(torch.overrides, _name, None), getattr(torch.overrides, "_" + _name, None)}:
        if _alias is not None and _alias is not _fn:
            lookaside(_alias)(_answer_false(_name, _unpack))


@lookaside(python_dispatch._get_current_dispatch_mode_stack)
def _dispatch_mode_stack(tx, args, kwargs):
    if args or kwargs:
        raise GraphBreak("bad call", "_get_current_dispatch_mode_stack() takes no arguments")
    if python_dispatch._get_current_dispatch_mode_stack():
        raise GraphBreak("call", "_get_current_dispatch_mode_stack() under an active TorchDispatchMode")
    return SeqValue(list, [])




@lookaside(torch._C._log_api_usage_once)
def _log_api_usage_once(tx, args, kwargs):
    """torchvision's models and ops log their use (`_log_api_usage_once(self)` in forward and in
    stochastic_depth): torch logs each key once per process, so making the call now, at translation,
    is the eager program's first call's effect and later calls have none."""
    if len(args) != 1 or kwargs or not isinstance(args[0], Const) or not isinstance(args[0].value, str):
        raise GraphBreak("call", "_log_api_usage_once with an argument not known at translation")
    torch._C._log_api_usage_once(args[0].value)
    return Const(None)
