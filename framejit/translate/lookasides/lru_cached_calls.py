"""A functools.lru_cache / functools.cache function called with hashable constants: answered at
translation, by calling it.

Why this exists: einops (`rearrange`, `reduce`, `repeat`, `pack`, `einsum`) parses its pattern and
computes its shapes through lru_cache'd helpers on every call; diffusers and others cache frequency
tables and the like the same way. Such a call was a graph break (a cache is state), and an einops ViT
gave 3 graphs / 11 breaks where torch.compile gives 1/0.

With arguments known at translation (constants, tuples of them, and objects whose identity is fixed:
unsourced or identity-guarded, such as the recipe an earlier cached call returned), the eager call's
answer is what the cache holds for them: the first eager call computes and stores it (which this call
at translation does, once), every later one returns it. So the answer is a constant of the graph, guarded by
the call itself: the entry calls `fn(*args)` as eager does on every call (a hit, or a miss that
computes again after `cache_clear()`) and checks it returns the very object it answered (`is`; equal
for numbers and strings), so a cleared cache whose function now answers differently converts again.
The arguments' own guards are already there: they are constants of the frame.
A symbolic size, a tensor or any other value keeps the graph break.
"""
from dataclasses import dataclass

from ...errors import GraphBreak
from ..source import Source, fixed_source
from ..values.base import Const, DictValue, ObjectValue, SeqValue, TensorValue
from ..values.protocol import CONST_TYPES, wrap_unsourced

_NOT_KNOWN = object()


def _known(tx, value):
    """The real, hashable object `value` is on every call these guards admit, or _NOT_KNOWN."""
    if isinstance(value, Const):
        real = value.value
    elif isinstance(value, SeqValue) and value.kind is tuple:
        items = [_known(tx, item) for item in value.items]
        if any(item is _NOT_KNOWN for item in items):
            return _NOT_KNOWN
        real = tuple(items)
    elif isinstance(value, ObjectValue) and not isinstance(value, TensorValue):
        real = value.obj
        if value.source is not None:
            tx.ctx.guards.add("ID_MATCH", value.source, real)
    else:
        return _NOT_KNOWN
    try:
        hash(real)
    except TypeError:
        return _NOT_KNOWN
    return real


def _answer(obj):
    """The cached answer as a value: constants as constants, tuples item by item, other objects as
    themselves (the same object eager gets from the cache); lists and dicts as copies, which differs from
    eager only if the frame writes into the cache's own list."""
    if type(obj) is tuple and not all(type(x) in CONST_TYPES for x in obj):
        return SeqValue(tuple, [_answer(x) for x in obj])
    if type(obj) is list:          # a copy: the frame's writes to it do not reach the cache's object
        return SeqValue(list, [_answer(x) for x in obj])
    if type(obj) is dict and all(type(k) in CONST_TYPES for k in obj):
        return DictValue({k: _answer(v) for k, v in obj.items()})
    return wrap_unsourced(obj)


@dataclass(frozen=True)
class CachedCallSource(Source):
    """`fn(*args, **kwargs)` of a cached function with fixed arguments (each bound as a fixed object)."""
    fn: Source
    args: Source
    kwargs: Source

    def expr(self):
        return f"{self.fn.expr()}(*{self.args.expr()}, **{self.kwargs.expr()})"

    def name(self):
        return f"{self.fn.name()}(...)"


def cached_call(tx, fn, name, args, kwargs):
    real_args = [_known(tx, a) for a in args]
    real_kwargs = {k: _known(tx, v) for k, v in kwargs.items()}
    if any(a is _NOT_KNOWN for a in (*real_args, *real_kwargs.values())):
        raise GraphBreak("call", f"call to {name}, a functools.lru_cache/cache function, with arguments not "
                         "known at translation: its cache is state the call reads and changes, so it runs "
                         "as plain Python")
    try:
        out = fn(*real_args, **real_kwargs)
    except Exception as e:
        raise GraphBreak("constant call raised", f"{name} raised {type(e).__name__}: {e}")
    source = CachedCallSource(fixed_source(fn, name), fixed_source(tuple(real_args), "args"),
                              fixed_source(real_kwargs, "kwargs"))
    tx.ctx.guards.add("ID_MATCH", source, out)
    return _answer(out)
