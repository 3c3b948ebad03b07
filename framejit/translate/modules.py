"""Calling an nn.Module inside a frame: inline its forward.

A module with no hooks (its own or global) is inlined as `type(m).forward(m, *args, **kwargs)`;
parameters and buffers it reads become graph inputs through their attribute Sources.
"""
import torch
from torch.nn.modules import module as _module_impl

from ..errors import GraphBreak
from .calls import inline_function


def _has_hooks(m):
    return bool(m._forward_hooks or m._forward_pre_hooks or m._backward_hooks or
                getattr(m, "_backward_pre_hooks", None) or _module_impl._global_forward_hooks or
                _module_impl._global_forward_pre_hooks or _module_impl._global_backward_hooks or
                getattr(_module_impl, "_global_backward_pre_hooks", None))


def call_module(tx, module_value, args, kwargs):
    m = module_value.obj
    if _has_hooks(m):
        raise GraphBreak("module hooks", f"{type(m).__name__} has hooks; calling it is not inlined yet")
    forward = type(m).forward
    if not hasattr(forward, "__code__"):
        raise GraphBreak("call", f"{type(m).__name__}.forward is not Python code")
    return inline_function(tx, forward, None, [module_value, *args], kwargs)
