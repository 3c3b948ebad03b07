"""The real value of a tensor the frame made from constants alone (`torch.tensor(1)`, `torch.tensor(2) - 1`), for
the few places Python reads a tensor's value: `seq[t]` calls `t.__index__()`.

Why this exists: a graph tensor has only fake metadata at translation, so `[a, b][torch.tensor(1)]` was a
break, yet its value follows from the frame's constants exactly as eager computes it. The node that made
the tensor is run for real here, on CPU, when it and every node it reads is a factory of constants or
integer arithmetic (deterministic ops that read nothing but constants), and no in-place write has touched
any of them (the fake's version counter is still 0: a write through a view counts too). Anything else
(an input tensor, a random factory, a tensor written in place) has no known value: None.
"""
import operator

import torch
import torch.fx as fx

_FACTORIES = {torch.tensor, torch.as_tensor, torch.scalar_tensor}
_ARITHMETIC = {operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod, operator.neg,
               operator.pos, operator.abs, torch.add, torch.sub, torch.mul, torch.neg}
_METHODS = {"add", "sub", "mul", "neg", "long", "int", "clone"}
_PLAIN_ARGUMENTS = (int, bool, float, torch.dtype, torch.device, type(None))


def known_value(value, depth=0):
    """The real tensor `value` (a TensorValue) holds, when the frame made it from constants; else None."""
    return _evaluate(value.node, depth)


def _evaluate(node, depth):
    if depth > 16 or not isinstance(node, fx.Node):
        return None
    fake = node.meta.get("example_value")
    if not isinstance(fake, torch.Tensor) or fake.device.type != "cpu" or fake._version != 0 or fake.requires_grad:
        return None
    if node.op == "call_function" and (node.target in _FACTORIES or node.target in _ARITHMETIC):
        pass
    elif node.op == "call_method" and node.target in _METHODS:
        pass
    else:
        return None
    args = [_argument(a, depth) for a in node.args]
    kwargs = {k: _argument(v, depth) for k, v in node.kwargs.items()}
    if any(a is _UNKNOWN for a in [*args, *kwargs.values()]):
        return None
    try:
        if node.op == "call_method":
            out = getattr(args[0], node.target)(*args[1:], **kwargs)
        else:
            out = node.target(*args, **kwargs)
    except Exception:
        return None
    if not isinstance(out, torch.Tensor) or out.dtype != fake.dtype or out.shape != fake.shape:
        return None
    return out


_UNKNOWN = object()


def _argument(arg, depth):
    if isinstance(arg, fx.Node):
        out = _evaluate(arg, depth + 1)
        return _UNKNOWN if out is None else out
    if isinstance(arg, _PLAIN_ARGUMENTS):
        return arg
    if isinstance(arg, (list, tuple)) and all(isinstance(a, _PLAIN_ARGUMENTS) for a in arg):
        return arg
    return _UNKNOWN
