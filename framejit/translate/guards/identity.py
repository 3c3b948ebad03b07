"""Which guard an input object gets, and how aliasing between inputs stays exactly as eager.

Why this exists: an ID_MATCH guard on an object that is new on every call (a dataclass argument, a
bound method `obj.f`, a nested function or lambda, an object rebuilt before a graph break and handed
to the resume function) misses the cache on every call. Such objects are matched by type instead (and
functions by their code): everything the frame reads from them is guarded through its own Source.

Matching by type makes aliasing something to guard: `f(lst, lst)` and `f(a, b)` must not share an
entry, because a mutation through one name is visible through the other only in the first. So every
mutable input (list, dict, user object, tensor) is wrapped once per real object: a second Source that
reaches an object already wrapped gets the same Value plus the guard `second is first`, and one guard
checks that the inputs that were different objects at translation still are
(`len({id(a), id(b), ...}) == n`).

Both guards are CONST_MATCH guards on a FactSource: a Source whose expression is a Python fact about
other Sources.
"""
import collections
import functools
import types
from dataclasses import dataclass

import torch

from ..source import AttrSource, GlobalSource, ItemSource, LocalSource, Source
from ..values.base import ObjectValue, SeqValue, SetValue, DictValue, TensorValue
from ..values.objects.new_objects import is_plain_instance


@dataclass(frozen=True)
class FactSource(Source):
    """A Python expression over other Sources, e.g. FactSource("({0} is {1})", (a, b))."""
    template: str
    parts: tuple
    boolean = False          # class attribute: True when the expression is itself a bool test

    def expr(self):
        return self.template.format(*(p.expr() for p in self.parts))

    def name(self):
        return self.template.format(*(p.name() for p in self.parts))


class DistinctObjectsSource(Source):
    """`len({id(a), id(b), ...}) == n` over the inputs tracked so far (the list grows while translating;
    the guard is rendered once translation has finished)."""
    boolean = True

    def __init__(self):
        object.__setattr__(self, "members", [])

    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def expr(self):
        if len(self.members) < 2:
            return "True"
        if len(self.members) <= 4:          # pairwise `is not` is ~20x cheaper than building a set
            exprs = [m.expr() for m in self.members]
            pairs = [f"{a} is not {b}" for i, a in enumerate(exprs) for b in exprs[i + 1:]]
            return "(" + " and ".join(pairs) + ")"
        ids = ", ".join(f"id({m.expr()})" for m in self.members)
        return f"(len({{{ids}}}) == {len(self.members)})"

    def name(self):
        return f"distinct objects: {', '.join(m.name() for m in self.members)}"


def is_nested_function(obj):
    """A function made at run time by other code (`<locals>` in its name): new every time it is made."""
    return isinstance(obj, types.FunctionType) and "<locals>" in obj.__qualname__ and \
        not (obj.__module__ or "").startswith("torch")


def guard_object(ctx, obj, source):
    """Guards for an object the translator keeps as an ObjectValue (instead of ID_MATCH where that
    would miss on every call)."""
    g = ctx.guards
    if is_plain_instance(obj):
        g.add("TYPE_MATCH", source, type(obj))
    elif is_nested_function(obj):
        guard_function(ctx, obj, source)
    elif isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType):
        g.add("TYPE_MATCH", source, types.MethodType)
        func_source = AttrSource(source, "__func__")
        if is_nested_function(obj.__func__):
            guard_function(ctx, obj.__func__, func_source)
        else:
            g.add("ID_MATCH", func_source, obj.__func__)
    elif type(obj) is functools.partial:
        g.add("TYPE_MATCH", source, functools.partial)
    elif isinstance(obj, types.BuiltinMethodType) and isinstance(getattr(obj, "__self__", None), type):
        # a builtin classmethod read off its class (`dict.fromkeys`): a new bound object on every read,
        # the same (class, name) pair
        g.add("TYPE_MATCH", source, types.BuiltinMethodType)
        g.add("ID_MATCH", AttrSource(source, "__self__"), obj.__self__)
        g.add("CONST_MATCH", AttrSource(source, "__name__"), obj.__name__)
    elif type(obj) is types.MappingProxyType:
        # a class's __dict__: a new proxy on every read; by type, and each use guards what it read
        g.add("TYPE_MATCH", source, types.MappingProxyType)
    elif type(obj) in KEY_VIEW_TYPES and all(type(k) in (str, int, bool, type(None)) for k in obj):
        g.add("TYPE_MATCH", source, type(obj))        # a keys view made on each call: by its keys
        g.add("CONST_MATCH", FactSource("tuple({0})", (source,)), tuple(obj))
    elif is_bound_builtin(obj):
        guard_bound_builtin(ctx, obj, source)
    elif isinstance(obj, types.MethodType):           # a method of a C function, a partial, a callable
        g.add("TYPE_MATCH", source, types.MethodType)
        g.add("ID_MATCH", AttrSource(source, "__func__"), obj.__func__)
        _guard_receiver(ctx, obj.__self__, AttrSource(source, "__self__"))
    else:
        g.add("ID_MATCH", source, obj)


KEY_VIEW_TYPES = (type({}.keys()), type(collections.OrderedDict().keys()))


def is_bound_builtin(obj):
    """A C method bound to an object or a class (`od.keys`, `lst.append`, `(1).__add__`, `dict.fromkeys`):
    a new object on every attribute access, so never matched by identity. C functions of a module
    (`len`, `torch.add`: bound to their module) are the same object on every access."""
    if not isinstance(obj, (types.BuiltinMethodType, types.MethodWrapperType)):
        return False
    receiver = getattr(obj, "__self__", None)
    return receiver is not None and not isinstance(receiver, types.ModuleType)


def guard_bound_builtin(ctx, obj, source):
    """A bound C method matched by what makes it: the receiver (its class fixes which C method a name
    finds, or the class itself for a classmethod) and the name."""
    g = ctx.guards
    g.add("TYPE_MATCH", source, type(obj))
    g.add("CONST_MATCH", AttrSource(source, "__name__"), obj.__name__)
    _guard_receiver(ctx, obj.__self__, AttrSource(source, "__self__"))


def _guard_receiver(ctx, receiver, source):
    """The object a method is bound to: a class (or module) by identity, an instance by its type (what
    the frame reads from it is guarded through its own Source when it reads it)."""
    if isinstance(receiver, (type, types.ModuleType)):
        ctx.guards.add("ID_MATCH", source, receiver)
    else:
        ctx.guards.add("ID_MATCH", FactSource("type({0})", (source,)), type(receiver))


def guard_function(ctx, fn, source):
    """A function matched by code: the same code, globals and default/closure layout (the values of
    defaults and closure cells are guarded when the inlined code reads them)."""
    g = ctx.guards
    g.add("TYPE_MATCH", source, types.FunctionType)
    g.add("ID_MATCH", AttrSource(source, "__code__"), fn.__code__)
    g.add("ID_MATCH", AttrSource(source, "__globals__"), fn.__globals__)
    g.add("CONST_MATCH", FactSource("len({0}.__defaults__ or ())", (source,)), len(fn.__defaults__ or ()))
    if fn.__code__.co_kwonlyargcount:
        g.add("CONST_MATCH", FactSource("tuple({0}.__kwdefaults__ or ())", (source,)),
              tuple(fn.__kwdefaults__ or ()))


def _is_input_path(source):
    """An argument or global, or an item of one (not an attribute path: module parameters and
    buffers are reached through attributes and are not checked for aliasing on every call)."""
    while isinstance(source, ItemSource):
        source = source.base
    return isinstance(source, (LocalSource, GlobalSource))


class IdentityTracker:
    """One per conversion: real object id -> the Value it was wrapped as (and its Source)."""

    def __init__(self, guards):
        self.guards = guards
        self.by_id = {}
        self.distinct = None
        self.fresh = set()       # Sources of objects made anew for every call (the frame's **kwargs)

    def alias(self, obj, source):
        """The Value already made for `obj` under another Source (guarding that both stay the same
        object), or None."""
        known = self.by_id.get(id(obj))
        if known is None or known[0] is not obj:
            return None
        _, value, first = known
        self.guards.add("CONST_MATCH", FactSource("({0} is {1})", (source, first)), True)
        return value

    def track(self, obj, source, value):
        if isinstance(value, TensorValue):
            checked = not isinstance(obj, torch.nn.Parameter) and _is_input_path(source)
        elif isinstance(value, (SeqValue, DictValue, SetValue)):
            checked = type(obj) in (list, dict, set)
        elif isinstance(value, ObjectValue):
            checked = is_plain_instance(obj)
        elif getattr(value, "tracks_identity", False):    # an iterator from outside (iterator_positions.py)
            checked = True
        else:
            return
        if not checked and not isinstance(value, TensorValue):
            return
        self.by_id[id(obj)] = (obj, value, source)
        if checked and source not in self.fresh:
            if self.distinct is None:
                self.distinct = DistinctObjectsSource()
            self.distinct.members.append(source)
            if len(self.distinct.members) == 2:
                self.guards.add("CONST_MATCH", self.distinct, True)


def _storage_key(tensor):
    try:
        return tensor.untyped_storage()._cdata if tensor.layout == torch.strided else None
    except (RuntimeError, NotImplementedError):
        return None


def _was_written(fake):
    if fake.is_inference():          # no version counter: written or not, it cannot be told
        return True
    return fake._version > 0


def guard_storage_sharing(guards, inputs):
    """When the graph writes into an input tensor, guard which input tensors share memory, as they did
    at translation: a write through one of two tensors on one storage is visible through the other, and
    the graph was built (graph/builder.py's fakes) for exactly that sharing. `inputs`: [(source, real
    tensor, fake after the graph)] of the graph's inputs. Inputs reached through attributes (module
    parameters and buffers) are left out, as for object aliasing: checking them would cost every call
    of a big model. The guard: each shared group stays on one storage, and the number of distinct
    storages stays the same (so no two groups merge)."""
    members = [(source, tensor) for source, tensor, _ in inputs
               if isinstance(tensor, torch.Tensor) and _is_input_path(source) and not isinstance(tensor, torch.nn.Parameter)
               and _storage_key(tensor) is not None]
    written = any(isinstance(fake, torch.Tensor) and _was_written(fake) and _is_input_path(source)
                  for source, _, fake in inputs)
    if not written or len(members) < 2:
        return
    groups = {}
    for source, tensor in members:
        groups.setdefault(_storage_key(tensor), []).append(source)
    parts = [source for source, _ in members]
    keys = ", ".join(f"{{{i}}}.untyped_storage()._cdata" for i in range(len(parts)))
    guards.add("CONST_MATCH", FactSource(f"len({{{{{keys}}}}})", tuple(parts)), len(groups))
    for group in groups.values():
        for other in group[1:]:
            guards.add("CONST_MATCH", FactSource("({0}.untyped_storage()._cdata == {1}.untyped_storage()._cdata)",
                                                 (group[0], other)), True)


def guard_written_leaves(guards, inputs):
    """A graph that writes an input tensor that requires grad was converted for a non-leaf (a leaf that
    requires grad refuses the write, so its fake raised and the write ran as Python): its tensor guard
    checks leaf-ness (GuardSet.require_leaf). `inputs` as for guard_storage_sharing."""
    for source, tensor, fake in inputs:
        if isinstance(tensor, torch.Tensor) and isinstance(fake, torch.Tensor) and tensor.requires_grad and \
                _was_written(fake):
            guards.require_leaf(source)
