"""torch._check(cond, message) and its siblings (_check_index, _check_value, _check_type,
_check_not_implemented): a condition known at translation (a constant, or a size the guards pin) is
answered there -- true: nothing happens and the message is never built; false: the call raises, which
runs as plain Python so the user sees torch's own exception and message.

Why this exists: these are plain functions of torch that framejit treated as constant calls, converting
every argument to its real value -- the message, usually a lambda (`lambda: "shape is not > 3"`), is
not a constant, so a check that passes broke the graph. A condition on a tensor's data stays a break.
"""
import torch

from ...errors import GraphBreak
from ..dispatch import lookaside
from ..values.base import Const, TensorValue
from ..values.protocol import as_python

_CHECKS = (torch._check, torch._check_index, torch._check_value, torch._check_type, torch._check_not_implemented)


def _check(tx, args, kwargs):
    if not args and "cond" not in kwargs:
        raise GraphBreak("bad call", "TypeError: _check() missing its condition")
    cond = args[0] if args else kwargs["cond"]
    if isinstance(cond, TensorValue):
        raise GraphBreak("data-dependent", "torch._check on a tensor needs its value")
    value = as_python(cond)              # a symbolic size: its value, guarded
    if type(value) is not bool and not isinstance(value, torch.SymBool):
        raise GraphBreak("constant call raised", f"torch._check: cond must be a bool, got {type(value).__name__}")
    if value:
        return Const(None)
    raise GraphBreak("constant call raised", "torch._check failed: the call raises, as Python")


for _fn in _CHECKS:
    lookaside(_fn)(_check)
