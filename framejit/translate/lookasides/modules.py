"""Calling an nn.Module inside a frame: nn.Module.__call__, inlined faithfully.

Why this exists: `module(x)` is not just `forward(x)`. nn.Module.__call__ runs global and per-module
forward pre-hooks (which may replace the arguments), then forward (an instance-level `forward`
attribute wins over the class's), then forward hooks (which may replace the result), each hook with or
without kwargs as registered. A class may also define its own Python `__call__` (HF's
GradientCheckpointingLayer) that ends in `super().__call__`. This file reproduces that order at
translation time, reading the real hook tables and guarding them, so a captured graph runs exactly
the Python the eager call would have run.

Backward hooks need autograd's BackwardHook wrappers around the inputs and outputs: a module that has
any (or any global backward hook) is called as plain Python (a graph break at the call). Hook tables
are guarded (one cheap truth test when empty, the hook ids in order otherwise), and hook registration
and removal bump the module watch (guards/module_watch.py).

The nn.Module methods a forward commonly calls on itself (parameters(), named_modules(), children()...)
are lookasides here too: they are generators in torch, answered from the real module tree with every
member carrying its Source.
"""
import inspect
import sys
import types

import torch
from torch.nn.modules import module as _torch_module

from ...errors import GraphBreak
from .builtins_table import LOOKASIDES, as_python
from ..values.modules.module_values import (GlobalHooksSource, HookStateSource, ModuleAttrSource, ModuleValue,
    global_hook_state, hook_state)
from ..source import fixed_source
from .lazy_modules import check_lazy_module
from ..values.attrs import get_attribute
from ..values.objects.attribute_sources import InstanceHasSource
from ..values.base import Const, DictValue, IteratorValue, ObjectValue, SeqValue

Module = torch.nn.Module
_MODULE_CALL = Module.__call__


def as_module_value(v):
    if isinstance(v, ModuleValue):
        return v
    if isinstance(v, ObjectValue) and isinstance(v.obj, Module):
        return ModuleValue(v.obj, v.source)
    raise GraphBreak("call", f"expected an nn.Module, got {v!r}")


def call_module(tx, module_value, args, kwargs):
    """`module(*args, **kwargs)`."""
    mv = as_module_value(module_value)
    check_lazy_module(tx, mv, args, kwargs)     # a lazy module before its first call: initialized, restart
    call = type(mv.obj).__call__
    if call is _MODULE_CALL:
        return call_impl(tx, mv, args, kwargs)
    if isinstance(call, types.FunctionType):
        return tx.call(ObjectValue(call), [mv, *args], kwargs)
    raise GraphBreak("call", f"{type(mv.obj).__name__}.__call__ is not Python code")


def is_fsdp_managed(m):
    """Is `m` a module FSDP2's fully_shard manages (its class is FSDP's generated FSDPModule subclass)?"""
    fsdp = _FSDP_MODULE[0]
    if fsdp is None:
        package = sys.modules.get("torch.distributed.fsdp")   # not imported: no module can be FSDP-managed
        fsdp = _FSDP_MODULE[0] = getattr(package, "FSDPModule", None)
    return fsdp is not None and isinstance(m, fsdp)


_FSDP_MODULE = [None]


# ---- nn.Module.__call__ -----------------------------------------------------------------------------

def _guard_hooks(tx, mv):
    """Guard the global and per-module hook tables; True if the module call is a plain forward."""
    m = mv.obj
    globals_empty = global_hook_state(True)
    tx.ctx.guards.add("CONST_MATCH", GlobalHooksSource(globals_empty), global_hook_state(globals_empty))
    empty = hook_state(m, True)
    if mv.source is not None:
        tx.ctx.guards.add("CONST_MATCH", HookStateSource(mv.source, empty), hook_state(m, empty))
    elif not empty:
        raise GraphBreak("module hooks", f"{type(m).__name__} has hooks and framejit cannot reach the module "
                         "to guard them")
    return empty and globals_empty


def call_impl(tx, mv, args, kwargs):
    """nn.Module._call_impl: pre-hooks, forward, hooks (torch/nn/modules/module.py, same order:
    global hooks first, then the module's own)."""
    builder = tx.ctx.graph
    events = builder.order_events               # distributed.execution_order listens (graph/module_order.py)
    builder.module_call_count += 1
    call, first = (builder.module_call_count, type(mv.obj)), len(builder.created)
    try:
        if events is None:
            return _call_impl(tx, mv, args, kwargs)
        events.append(("enter", mv.obj, None))
        try:
            return _call_impl(tx, mv, args, kwargs)
        finally:
            events.append(("exit", mv.obj, None))
    finally:
        _mark_call(builder.created[first:], call)


def _mark_call(nodes, call):
    """Each node made inside module call `call` ((call number, module class)) keeps the calls it is in,
    outermost first, as "framejit_module_calls": backends/passes/repeated_blocks.py finds repeated
    blocks (N identical layers) by it."""
    for node in nodes:
        node.meta["framejit_module_calls"] = (call, *node.meta.get("framejit_module_calls", ()))


def _call_impl(tx, mv, args, kwargs):
    m = mv.obj
    if is_fsdp_managed(m):
        gb = GraphBreak("fsdp module", f"{type(m).__name__} is managed by FSDP (fully_shard): it is called as plain "
                        "Python, so FSDP's hooks (all-gather, reshard, backward registration) run as FSDP runs them; "
                        "its forward runs compiled")
        gb.inlined = True             # like a callee that breaks: the call goes through the callee wrappers
        raise gb
    if _guard_hooks(tx, mv):
        return call_forward(tx, mv, args, kwargs)
    g = _torch_module
    if m._backward_hooks or m._backward_pre_hooks or g._global_backward_hooks or g._global_backward_pre_hooks:
        raise GraphBreak("module hooks", f"{type(m).__name__} has backward hooks (BackwardHook wraps its inputs and "
                         "outputs); it is called as plain Python")
    if mv.source is None:
        raise GraphBreak("module hooks", f"{type(m).__name__} is called with hooks but framejit cannot reach it")
    own = lambda table: ModuleAttrSource(mv.source, table, "__dict__")  # noqa: E731
    glob = lambda table: fixed_source(getattr(g, table), f"torch.nn.modules.module.{table}")  # noqa: E731
    pre_hooks = [(i, h, glob("_global_forward_pre_hooks")) for i, h in g._global_forward_pre_hooks.items()] + \
        [(i, h, own("_forward_pre_hooks")) for i, h in m._forward_pre_hooks.items()]
    hooks = [(i, h, glob("_global_forward_hooks")) for i, h in g._global_forward_hooks.items()] + \
        [(i, h, own("_forward_hooks")) for i, h in m._forward_hooks.items()]
    args_v = SeqValue(tuple, list(args))
    kwargs_v = DictValue(dict(kwargs))
    for hook_id, hook, table in pre_hooks:
        hook_v = tx.ctx.wrap(hook, _item(table, hook_id))
        if hook_id in m._forward_pre_hooks_with_kwargs:
            out = tx.call(hook_v, [mv, args_v, kwargs_v], {})
            if not _is_none(out):
                pair = _as_items(tx, out)
                if pair is None or len(pair) != 2:
                    raise GraphBreak("raise", "RuntimeError: forward pre-hook must return None or a tuple of "
                                     "(new_args, new_kwargs)")
                args_v, kwargs_v = pair
        else:
            out = tx.call(hook_v, [mv, args_v], {})
            if not _is_none(out):
                args_v = out if _is_tuple(out) else SeqValue(tuple, [out])
    from .builtins_table import unpack_iterable
    call_args = unpack_iterable(tx, args_v)
    if not isinstance(kwargs_v, DictValue):
        raise GraphBreak("module hooks", "a forward pre-hook returned kwargs that are not a dict")
    result = call_forward(tx, mv, call_args, dict(kwargs_v.items))
    for hook_id, hook, table in hooks:
        hook_v = tx.ctx.wrap(hook, _item(table, hook_id))
        if hook_id in m._forward_hooks_with_kwargs or hook_id in g._global_forward_hooks_with_kwargs:
            out = tx.call(hook_v, [mv, args_v, kwargs_v, result], {})
        else:
            out = tx.call(hook_v, [mv, args_v, result], {})
        if not _is_none(out):
            result = out
    return result


def _item(source, key):
    from ..source import ItemSource
    return ItemSource(source, key)


def _is_none(v):
    return isinstance(v, Const) and v.value is None


def _is_tuple(v):
    if isinstance(v, SeqValue):
        return v.kind is tuple
    return isinstance(v, Const) and type(v.value) is tuple


def _as_items(tx, v):
    if isinstance(v, SeqValue) and v.kind is tuple:
        return list(v.items)
    if isinstance(v, Const) and type(v.value) is tuple:
        return [Const(x) for x in v.value]
    return None


def call_forward(tx, mv, args, kwargs):
    """`self.forward(*args, **kwargs)` (an instance attribute `forward` wins over the class's)."""
    m = mv.obj
    if "forward" in m.__dict__:
        return tx.call(mv.member(tx, "forward", m.__dict__["forward"], "__dict__"), args, kwargs)
    if mv.source is not None:        # another instance with a forward of its own runs that one
        tx.ctx.guards.add("CONST_MATCH", InstanceHasSource(mv.source, "forward"), False)
    try:
        forward = inspect.getattr_static(type(m), "forward")
    except AttributeError:
        raise GraphBreak("call", f"{type(m).__name__} has no forward")
    if isinstance(forward, types.FunctionType):
        # through call_value, so decorated forwards (torch.no_grad(), compiled, disabled) are honoured
        return tx.call(ObjectValue(forward), [mv, *args], kwargs)
    return tx.call(get_attribute(tx, mv, "forward"), args, kwargs)


def _lookaside_call(tx, args, kwargs):
    """nn.Module.__call__ / _call_impl called as functions (`super().__call__(...)`, `Module.__call__(m, x)`)."""
    if not args:
        raise GraphBreak("bad call", "TypeError: Module.__call__ needs the module")
    return call_impl(tx, as_module_value(args[0]), list(args[1:]), kwargs)


for _fn in (_MODULE_CALL, Module._call_impl, getattr(Module, "_wrapped_call_impl", _MODULE_CALL)):
    LOOKASIDES[_fn] = _lookaside_call


# ---- introspection: parameters(), named_modules(), children() ... ----------------------------------

def _named_modules(tx, mv, prefix="", memo=None, remove_duplicate=True):
    """(name, ModuleValue) pairs in nn.Module.named_modules order (pre-order, shared modules once)."""
    if memo is None:
        memo = set()
    out = []
    if remove_duplicate:
        if id(mv.obj) in memo:
            return out
        memo.add(id(mv.obj))
    out.append((prefix, mv))
    for name, child in _children(tx, mv):
        if child is None:
            continue
        sub = prefix + ("." if prefix else "") + name
        out.extend(_named_modules(tx, child, sub, memo, remove_duplicate))
    return out


def _children(tx, mv):
    """(name, ModuleValue or None) for each entry of mv's _modules, guarding the keys."""
    m = mv.obj
    if mv.source is not None:
        tx.ctx.guards.add("DICT_KEYS", ModuleAttrSource(mv.source, "_modules", "__dict__"), tuple(m._modules))
    out = []
    for name, child in m._modules.items():
        out.append((name, None if child is None else as_module_value(mv.member(tx, name, child, "_modules"))))
    return out


def _named_members(tx, mv, table, prefix, recurse, remove_duplicate):
    modules = _named_modules(tx, mv, prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, mv)]
    seen = set()
    out = []
    for mod_prefix, sub in modules:
        m = sub.obj
        members = getattr(m, table)
        if sub.source is not None:
            tx.ctx.guards.add("DICT_KEYS", ModuleAttrSource(sub.source, table, "__dict__"), tuple(members))
        for name, real in members.items():
            if real is None or (remove_duplicate and id(real) in seen):
                continue
            if remove_duplicate:
                seen.add(id(real))
            full = mod_prefix + ("." if mod_prefix else "") + name
            out.append((full, sub.member(tx, name, real, table)))
    return out


def _parse(args, kwargs, names, defaults):
    values = dict(zip(names, defaults))
    for n, a in zip(names, args):
        values[n] = as_python(a)
    for k, v in kwargs.items():
        if k not in values:
            raise GraphBreak("bad call", f"TypeError: unexpected keyword argument {k!r}")
        values[k] = as_python(v)
    return values


def _pairs(items):
    return IteratorValue([SeqValue(tuple, [Const(n), v]) for n, v in items])


def _lk_named_parameters(tx, args, kwargs, table="_parameters", named=True):
    mv = as_module_value(args[0])
    p = _parse(args[1:], kwargs, ("prefix", "recurse", "remove_duplicate"), ("", True, True)) if named else \
        dict(_parse(args[1:], kwargs, ("recurse",), (True,)), prefix="", remove_duplicate=True)
    items = _named_members(tx, mv, table, p["prefix"], p["recurse"], p["remove_duplicate"])
    return _pairs(items) if named else IteratorValue([v for _, v in items])


def _lk_named_modules(tx, args, kwargs):
    mv = as_module_value(args[0])
    p = _parse(args[1:], kwargs, ("memo", "prefix", "remove_duplicate"), (None, "", True))
    if p["memo"] is not None:
        raise GraphBreak("call", "named_modules(memo=...)")
    return _pairs(_named_modules(tx, mv, p["prefix"], None, p["remove_duplicate"]))


def _lk_modules(tx, args, kwargs):
    return IteratorValue([v for _, v in _named_modules(tx, as_module_value(args[0]))])


def _lk_named_children(tx, args, kwargs):
    mv = as_module_value(args[0])
    seen, out = set(), []
    for name, child in _children(tx, mv):
        if child is not None and id(child.obj) not in seen:
            seen.add(id(child.obj))
            out.append((name, child))
    return _pairs(out)


def _lk_children(tx, args, kwargs):
    return IteratorValue([v.items[1] for v in _lk_named_children(tx, args, kwargs).items])


LOOKASIDES[Module.named_parameters] = _lk_named_parameters
LOOKASIDES[Module.parameters] = lambda tx, a, k: _lk_named_parameters(tx, a, k, named=False)
LOOKASIDES[Module.named_buffers] = lambda tx, a, k: _lk_named_parameters(tx, a, k, table="_buffers")
LOOKASIDES[Module.buffers] = lambda tx, a, k: _lk_named_parameters(tx, a, k, table="_buffers", named=False)
LOOKASIDES[Module.named_modules] = _lk_named_modules
LOOKASIDES[Module.modules] = _lk_modules
LOOKASIDES[Module.named_children] = _lk_named_children
LOOKASIDES[Module.children] = _lk_children
