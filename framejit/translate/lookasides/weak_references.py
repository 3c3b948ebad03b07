"""The weakref module's reads: `weakref.ref(obj)` made in the frame, and lookups in a WeakKeyDictionary or
WeakValueDictionary from outside the frame (`get`, `[]`, `in`).

Why this exists: the weakref module is never inlined (calls.NEVER_INLINE_PREFIXES: its classes keep
callbacks and pending-removal state that the translator must not replay), so a library's cache keyed
weakly by module or tensor (`_CACHE = weakref.WeakKeyDictionary()`, `cache.get(self)`) broke the graph.
A lookup is a read of real state, answered at translation like builtin_methods.py's dict lookups: whether
the key is present is guarded (`Class.__contains__(mapping, key)`, the class's own method, so a dead
referent reads as absent exactly as in eager), and the value found is wrapped under the Source that
repeats the lookup. Calling a ref itself is values/objects/weak_refs.py.
"""
import weakref
from dataclasses import dataclass

from ...errors import GraphBreak
from .builtins_table import LOOKASIDES
from .builtin_methods import _FreshTensor, _key
from ..source import Source, fixed_source
from ..values.base import Const, ObjectValue
from ..values.dicts.constant_keys import key_label
from ..values.objects.weak_refs import make_ref

LOOKASIDES[weakref.ref] = make_ref

WEAK_MAPPINGS = (weakref.WeakKeyDictionary, weakref.WeakValueDictionary)


@dataclass(frozen=True)
class MappingMethodSource(Source):
    """`Class.method(base, key)`: a lookup through the mapping class's own method, bound in guards."""
    method: Source
    base: Source
    key: Source

    def expr(self):
        return f"{self.method.expr()}({self.base.expr()}, {self.key.expr()})"

    def name(self):
        return f"{self.method.name()}({self.base.name()}, {self.key.name()})"

    def root(self):
        return self.base.root()


def _mapping(args, what):
    if not args or not isinstance(args[0], ObjectValue) or type(args[0].obj) not in WEAK_MAPPINGS:
        raise GraphBreak("call", f"{what} on {args[0] if args else 'nothing'!r}")
    if args[0].source is None:
        raise GraphBreak("call", f"{what} on a weak mapping framejit cannot reach to guard")
    return args[0]


def _key_of(tx, v):
    """(the real key, a Source that evaluates to it), or (_FreshTensor, None) for a tensor the frame made."""
    key, key_source = _key(tx, v)
    if key is _FreshTensor or key_source is not None:
        return key, key_source
    if isinstance(v, ObjectValue) and v.source is not None:
        return key, v.source
    return key, fixed_source(key, key_label(key))


def _method_source(mapping, name, key_source):
    cls = type(mapping.obj)
    method = getattr(cls, name)
    return MappingMethodSource(fixed_source(method, f"{cls.__name__}.{name}"), mapping.source, key_source)


def _present(tx, mapping, key, key_source):
    if key is _FreshTensor:                 # no weak mapping from outside holds a tensor made now
        return False
    found = type(mapping.obj).__contains__(mapping.obj, key)
    tx.ctx.guards.add("CONST_MATCH", _method_source(mapping, "__contains__", key_source), found)
    return found


def _found(tx, mapping, key, key_source):
    value = type(mapping.obj).__getitem__(mapping.obj, key)
    return tx.ctx.wrap(value, _method_source(mapping, "__getitem__", key_source))


def _get(tx, args, kwargs):
    mapping = _mapping(args, "get")
    if len(args) < 2:
        raise GraphBreak("call", "weak mapping get() without a key")
    default = args[2] if len(args) > 2 else kwargs.get("default", Const(None))
    key, key_source = _key_of(tx, args[1])
    return _found(tx, mapping, key, key_source) if _present(tx, mapping, key, key_source) else default


def _getitem(tx, args, kwargs):
    mapping = _mapping(args, "__getitem__")
    key, key_source = _key_of(tx, args[1])
    if not _present(tx, mapping, key, key_source):
        raise GraphBreak("key error", f"KeyError: {args[1]!r}")
    return _found(tx, mapping, key, key_source)


def _contains(tx, args, kwargs):
    mapping = _mapping(args, "__contains__")
    return Const(_present(tx, mapping, *_key_of(tx, args[1])))


for _cls in WEAK_MAPPINGS:
    LOOKASIDES[_cls.get] = _get
    LOOKASIDES[_cls.__getitem__] = _getitem
    LOOKASIDES[_cls.__contains__] = _contains
