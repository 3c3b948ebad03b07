"""nn.Module instances as symbolic values: attribute reads, containers, iteration, introspection.

Why this exists: a model's forward reads its state through nn.Module's own rules (instance __dict__,
then `_parameters`, `_buffers`, `_modules` through Module.__getattr__), iterates ModuleList /
Sequential / ModuleDict, indexes them, and asks for `named_parameters()`, `children()`... A
ModuleValue answers all of these at translation time from the real module, and every member it hands
out carries a ModuleAttrSource: a Source that says *which* of the module's tables the member lives in.
That both renders a fast reload expression (`m._modules['0']` instead of a Python-level
Module.__getattr__ call) and tells the guard renderer that the member's identity can only change
through nn.Module's own entry points (see guards/module_watch.py).

Calling a module is in lookasides/modules.py. A parameterless torch.nn module the frame constructs itself
(`loss_fct = CrossEntropyLoss()` in a transformers forward) is a FreshModuleValue.
"""
import inspect
from dataclasses import dataclass

import torch

from ....errors import GraphBreak
from ...source import AttrSource, Source
from ..base import Const, ObjectValue, SeqValue
from .module_dunders import user_module_length, user_module_method
from ..protocol import as_python, wrap_unsourced

MODULE_TABLES = ("_parameters", "_buffers", "_modules")
CONTAINER_ITERS = {getattr(c, "__iter__", None) for c in (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ModuleDict,
                                                        torch.nn.ParameterList, torch.nn.ParameterDict)}
_MISSING = object()


@dataclass(frozen=True)
class ModuleAttrSource(AttrSource):
    """`base.attr` where base is an nn.Module and attr lives in `where`: "__dict__" (a plain instance
    attribute) or one of the tables "_parameters", "_buffers", "_modules"."""
    where: str = "__dict__"

    def expr(self):
        if self.where == "__dict__":
            return super().expr()
        return f"{self.base.expr()}.{self.where}[{self.attr!r}]"


@dataclass(frozen=True)
class HookStateSource(Source):
    """The forward/backward hook registrations of one module, as a constant: `not (hooks...)` when it
    had none at translation (the common case, one cheap truth test), else the hook ids in order."""
    module: Source
    empty: bool

    def expr(self):
        m = self.module.expr()
        if self.empty:
            return (f"not ({m}._forward_pre_hooks or {m}._forward_hooks or {m}._backward_hooks or "
                    f"{m}._backward_pre_hooks)")
        return (f"(tuple({m}._forward_pre_hooks), tuple({m}._forward_pre_hooks_with_kwargs), "
                f"tuple({m}._forward_hooks), tuple({m}._forward_hooks_with_kwargs), "
                f"tuple({m}._backward_hooks), tuple({m}._backward_pre_hooks))")

    def name(self):
        return f"hooks of {self.module.name()}"

    def root(self):
        return self.module.root()


def hook_state(m, empty):
    if empty:
        return not (m._forward_pre_hooks or m._forward_hooks or m._backward_hooks or m._backward_pre_hooks)
    return (tuple(m._forward_pre_hooks), tuple(m._forward_pre_hooks_with_kwargs), tuple(m._forward_hooks),
            tuple(m._forward_hooks_with_kwargs), tuple(m._backward_hooks), tuple(m._backward_pre_hooks))


def _is_data_descriptor(attr):
    t = type(attr)
    return hasattr(t, "__set__") or hasattr(t, "__delete__")


class ModuleValue(ObjectValue):
    """An nn.Module, used by identity. `members` is set only for a container made at translation time
    (a slice of a ModuleList/Sequential): its items with their own Sources."""
    __slots__ = ("members",)

    def __init__(self, obj, source=None, members=None):
        super().__init__(obj, source)
        self.members = members

    def __repr__(self):
        return f"ModuleValue({type(self.obj).__name__})"

    # ---- attributes ---------------------------------------------------------------------------
    def load_attr(self, tx, name):
        """`module.name` with nn.Module's lookup order: class data descriptors, instance __dict__,
        other class attributes, then _parameters, _buffers, _modules (Module.__getattr__)."""
        from ..attrs import object_attr
        m = self.obj
        pending = tx.ctx.side_effects.pending_attr(m, name)
        if pending is not None:
            return object_attr(tx, self, name)        # the frame's own store (or delete: a break)
        try:
            cls_attr = inspect.getattr_static(type(m), name)
        except AttributeError:
            cls_attr = _MISSING
        if cls_attr is not _MISSING and _is_data_descriptor(cls_attr):
            return object_attr(tx, self, name)
        d = m.__dict__
        if name in d:
            return self.member(tx, name, d[name], "__dict__")
        if cls_attr is not _MISSING:
            return object_attr(tx, self, name)
        for table in MODULE_TABLES:
            members = d.get(table)
            if members is not None and name in members:
                return self.member(tx, name, members[name], table)
        return object_attr(tx, self, name)

    def member(self, tx, name, real, where):
        """A member of this module as a Value; its Source says where it lives."""
        if self.source is None:
            if isinstance(real, torch.Tensor):
                raise GraphBreak("module", f"a tensor of a module framejit cannot reach ({type(self.obj).__name__}.{name})")
            out = wrap_unsourced(real)
            return ModuleValue(real) if isinstance(real, torch.nn.Module) else out
        return tx.ctx.wrap(real, ModuleAttrSource(self.source, name, where))

    # ---- containers ---------------------------------------------------------------------------
    def items_in_order(self, tx):
        """The submodules (ModuleList/Sequential/ModuleDict), or parameters (ParameterList/Dict), in
        iteration order as (key, Value) pairs."""
        if self.members is not None:
            return list(enumerate(self.members))
        m = self.obj
        table = "_parameters" if isinstance(m, (torch.nn.ParameterList, torch.nn.ParameterDict)) else "_modules"
        members = getattr(m, table)
        self.guard_keys(tx, table)
        return [(k, self.member(tx, k, v, table)) for k, v in members.items()]

    def guard_keys(self, tx, table):
        if self.source is not None:
            src = ModuleAttrSource(self.source, table, "__dict__")
            tx.ctx.guards.add("DICT_KEYS", src, tuple(getattr(self.obj, table).keys()))

    def unpack(self, tx):
        m = self.obj
        if self.members is None and type(m).__iter__ not in CONTAINER_ITERS:
            raise GraphBreak("iterate", f"iterating a {type(m).__name__} (not a ModuleList, Sequential, "
                             "ModuleDict, ParameterList or ParameterDict)")
        if isinstance(m, (torch.nn.ModuleDict, torch.nn.ParameterDict)):
            return [Const(k) for k, _ in self.items_in_order(tx)]
        return [v for _, v in self.items_in_order(tx)]

    def length(self, tx):
        if self.members is not None:
            return len(self.members)
        fn = user_module_method(tx, self, "__len__")     # the user's class defines it (values/modules/module_dunders.py)
        if fn is not None:
            return user_module_length(tx, self, fn)
        m = self.obj
        if not isinstance(m, (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ModuleDict,
                              torch.nn.ParameterList, torch.nn.ParameterDict)):
            raise GraphBreak("len", f"len() of a {type(m).__name__}")
        return len(self.items_in_order(tx))

    def truth(self, tx):
        m = self.obj
        if hasattr(type(m), "__bool__"):
            raise GraphBreak("truth", f"truth value of a {type(m).__name__} (it defines __bool__)")
        if hasattr(type(m), "__len__"):
            return self.length(tx) > 0
        return True

    def getitem(self, tx, index):
        m = self.obj
        if self.members is None:
            fn = user_module_method(tx, self, "__getitem__")
            if fn is not None:
                return tx.inline(fn, None, [self, index], {})
        key = as_python(index)
        if self.members is not None:
            if isinstance(key, slice):
                return ModuleValue(m[key], None, self.members[key])
            return self.members[key]
        if isinstance(m, (torch.nn.ModuleDict, torch.nn.ParameterDict)):
            if not isinstance(key, str):
                raise GraphBreak("index", f"{type(m).__name__} key of type {type(key).__name__}")
            table = "_parameters" if isinstance(m, torch.nn.ParameterDict) else "_modules"
            members = getattr(m, table)
            if key not in members:
                raise GraphBreak("key error", f"KeyError: {key!r}")
            return self.member(tx, key, members[key], table)
        if isinstance(m, (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ParameterList)):
            pairs = self.items_in_order(tx)
            if isinstance(key, slice):
                real = m[key]
                picked = [v for _, v in pairs][key]
                return ModuleValue(real, None, picked) if isinstance(real, torch.nn.Module) else SeqValue(list, picked)
            if not isinstance(key, int):
                raise GraphBreak("index", f"{type(m).__name__} index of type {type(key).__name__}")
            try:
                return pairs[key][1]
            except IndexError:
                raise GraphBreak("index error", f"IndexError: index {key} is out of range")
        raise GraphBreak("subscript", f"subscript of a {type(m).__name__}")

    def contains(self, tx, item):
        m = self.obj
        fn = user_module_method(tx, self, "__contains__") if self.members is None else None
        if fn is not None:
            from ..protocol import truth
            return truth(tx, tx.inline(fn, None, [self, item], {}))
        if isinstance(m, (torch.nn.ModuleDict, torch.nn.ParameterDict)):
            return any(k == as_python(item) for k, _ in self.items_in_order(tx))
        raise GraphBreak("operator", f"`in` on a {type(m).__name__}")


class FreshModuleValue(ModuleValue):
    """A parameterless torch.nn module made in the frame from constant arguments (a loss, an activation,
    a dropout). It is built once, at translation, from the same arguments; calling it inlines its
    forward with its attributes as constants (nn.Module.__call__'s hook questions included). Where it
    escapes the frame it is rebuilt by calling the class again, so each call still gets an object of its
    own, as in eager; a store into it is a graph break (fresh_module)."""
    __slots__ = ("ctor",)

    def __init__(self, obj, ctor):
        super().__init__(obj)
        self.ctor = ctor                   # (class, args, kwargs), constants

    def __repr__(self):
        return f"FreshModuleValue({type(self.obj).__name__})"

    def rebuild(self, rb):
        cls, args, kwargs = self.ctor
        parts = [rb.ns.bind(a) for a in args] + [f"{k}={rb.ns.bind(v)}" for k, v in kwargs.items()]
        return rb.declare(self, f"{rb.ns.bind(cls)}({', '.join(parts)})")      # one object per call

    def rebuild_parts(self):
        return []


_FRESH_ARG_TYPES = (type(None), bool, int, float, str)
# torch.nn files whose modules hold no parameters (but PReLU, MultiheadAttention: the check after
# construction turns those away); modules elsewhere (Linear, Conv, norms...) would allocate and
# initialise weights at translation, drawing from the RNG
_PARAMETERLESS_FILES = frozenset(f"torch.nn.modules.{name}" for name in (
    "loss", "activation", "dropout", "pooling", "flatten", "padding", "pixelshuffle", "distance",
    "channelshuffle", "upsampling", "fold"))
_FRESH_EXCLUDED = frozenset({torch.nn.MultiheadAttention})


def fresh_module(tx, cls, args, kwargs):
    """`cls(*args, **kwargs)` for a torch.nn module class as a FreshModuleValue, or None: only torch's
    own parameterless kinds (losses, activations, dropout, pooling...: their __init__ only stores its
    arguments), with constant arguments, that end up with no parameters, buffers or submodules. Registering a buffer (even None, as the weighted losses do) runs
    the global buffer-registration hooks: made only while there are none, which is guarded."""
    from ...source import fixed_source
    from .module_init_purity import construct_if_pure
    torch_own = (cls.__module__ in _PARAMETERLESS_FILES or cls is torch.nn.Identity) and cls not in _FRESH_EXCLUDED
    if not torch_own and cls.__module__.startswith("torch."):
        return None
    values = [*args, *kwargs.values()]
    if not all(isinstance(v, Const) and type(v.value) in _FRESH_ARG_TYPES for v in values):
        return None
    registration = torch.nn.modules.module._global_buffer_registration_hooks
    if registration:
        return None
    const_args = tuple(v.value for v in args)
    const_kwargs = {k: v.value for k, v in kwargs.items()}
    if torch_own:
        try:
            with torch.random.fork_rng(devices=[]):
                obj = cls(*const_args, **const_kwargs)
        except Exception:
            return None                                 # the frame raises there: let the break say so
    else:                                   # a library's or user's class: only a pure __init__ (checked)
        obj = construct_if_pure(cls, const_args, const_kwargs)
        if obj is None:
            return None
    if obj._parameters or obj._modules or any(b is not None for b in obj._buffers.values()):
        return None
    tx.ctx.guards.add("LEN_MATCH", fixed_source(registration, "torch.nn.modules.module._global_buffer_registration_hooks"), 0)
    return FreshModuleValue(obj, (cls, const_args, const_kwargs))


_GLOBAL_TABLES = ("_global_forward_pre_hooks", "_global_forward_hooks", "_global_forward_hooks_with_kwargs",
                  "_global_backward_hooks", "_global_backward_pre_hooks")
# what nn.Module.__call__ itself asks before taking its fast path (`_with_kwargs` only marks ids of
# `_global_forward_hooks`, and keeps them after their handle is removed)
_CALL_TABLES = ("_global_forward_pre_hooks", "_global_forward_hooks", "_global_backward_hooks",
                "_global_backward_pre_hooks")


@dataclass(frozen=True)
class GlobalHooksSource(Source):
    """torch's global module hook tables (torch.nn.modules.module._global_*): `not (tables...)` when
    there were none at translation, else the hook ids of each table in order. The module is named
    directly in generated code (FixedObjectSource)."""
    empty: bool = True

    @property
    def boolean(self):
        return self.empty                 # `not (tables...)` is the test itself

    def expr(self):
        from torch.nn.modules import module as torch_module
        from ...source import fixed_source
        g = fixed_source(torch_module, "torch.nn.modules.module").expr()
        if self.empty:
            return "not (" + " or ".join(f"{g}.{t}" for t in _CALL_TABLES) + ")"
        return "(" + "".join(f"tuple({g}.{t}), " for t in _GLOBAL_TABLES) + ")"

    def name(self):
        return "global module hooks"


def global_hook_state(empty):
    from torch.nn.modules import module as torch_module
    if empty:
        return not any(getattr(torch_module, t) for t in _CALL_TABLES)
    return tuple(tuple(getattr(torch_module, t)) for t in _GLOBAL_TABLES)
