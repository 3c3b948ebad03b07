"""Subscripts and container methods on symbolic values.

Tensor indexing becomes an `operator.getitem` / `operator.setitem` node. Lists, tuples and dicts are
indexed symbolically; writes into a list or dict that came from outside the frame are recorded as side
effects. Methods of lists, dicts, sets and constants (str.format, dict.items, list.append...) are
handled here too, by table.
"""
import operator

import torch

from ....errors import GraphBreak
from ...source import ItemSource
from ..dicts import dict_kinds
from ..tensors import tensor_subclasses
from ..objects.typing_forms import class_subscript, is_typing_form, subscript as typing_subscript
from ..base import GENERIC, Value, Const, DictValue, ObjectValue, SeqValue, SetValue, TensorValue
from ..dicts.identity_hashed_keys import hashes_by_identity, key_value
from ..protocol import dict_key
from ..tensors.known_tensor_values import known_value
from ..protocol import as_python, is_structseq_class, unpack_iterable, wrap_unsourced
from .input_lists import append_items

MODULE_CONTAINERS = (torch.nn.ModuleList, torch.nn.Sequential, torch.nn.ModuleDict, torch.nn.ParameterList,
                     torch.nn.ParameterDict)


def getitem(tx, obj, index):
    if isinstance(obj, TensorValue):
        out = tensor_subclasses.operator_call(tx, operator.getitem, (obj, index))
        if out is not tensor_subclasses.NOT_DISPATCHED:       # a subclass's __torch_function__
            return out
        return tx.ctx.graph.call_function(operator.getitem, (obj, index), {})
    if isinstance(obj, SeqValue):
        key = tensor_index(index) if isinstance(index, TensorValue) else as_python(index)
        if isinstance(key, slice):
            kind = obj.kind if obj.kind in (tuple, list) else tuple
            return SeqValue(kind, obj.items[key])
        try:
            return obj.items[key]
        except (IndexError, TypeError) as e:
            raise GraphBreak("index error", f"{type(e).__name__}: {e}")
    if isinstance(obj, DictValue) and obj.kind is not dict:      # OrderedDict, defaultdict, a subclass...
        return dict_kinds.getitem(tx, obj, index)
    if isinstance(obj, DictValue):
        key = dict_key(index)
        if key not in obj.items:
            raise GraphBreak("key error", f"KeyError: {key!r}")
        return obj.items[key]
    if isinstance(obj, Const):
        key = tensor_index(index) if isinstance(index, TensorValue) else as_python(index)
        try:
            return _wrap_const(obj.value[key])
        except Exception as e:
            raise GraphBreak("constant op raised", f"{type(e).__name__}: {e}")
    own = obj.getitem(tx, index)            # value kinds with their own indexing (ModuleValue...)
    if own is not GENERIC:
        return own
    if isinstance(obj, ObjectValue) and is_typing_form(obj.obj):      # List[int], Optional[Tensor]
        return typing_subscript(obj.obj, index)
    if isinstance(obj, ObjectValue) and isinstance(obj.obj, type) and obj.obj.__module__ == "builtins":
        alias = class_subscript(obj.obj, index)                          # list[int], dict[str, int]
        if alias is not None:
            return alias
    if isinstance(obj, ObjectValue) and type(obj.obj) is dict and obj.source is not None:
        from ...dispatch import LOOKASIDES         # a real dict with keys no DictValue holds (classes)
        return LOOKASIDES[dict.__getitem__](tx, [obj, index], {})
    if isinstance(obj, ObjectValue) and is_structseq_class(type(obj.obj)):    # sys.version_info[0], [:2]
        key = as_python(index)
        if isinstance(key, slice) or obj.source is None:
            return wrap_unsourced(obj.obj[key])
        return tx.ctx.wrap(obj.obj[key], ItemSource(obj.source, key))
    if isinstance(obj, ObjectValue) and isinstance(obj.obj, MODULE_CONTAINERS):
        key = as_python(index)
        real = obj.obj[key]
        if isinstance(key, slice) or obj.source is None:
            return ObjectValue(real)
        return tx.ctx.wrap(real, ItemSource(obj.source, key))
    if isinstance(obj, ObjectValue):       # an object whose class defines __getitem__ in Python
        import types
        method = getattr(type(obj.obj), "__getitem__", None)
        if isinstance(method, types.FunctionType):
            return tx.inline(method, None, [obj, index], {})
        alias = _builtin_generic_alias(obj.obj, index)
        if alias is not None:
            return ObjectValue(alias)
    raise GraphBreak("subscript", f"subscript of {obj!r} is not supported")


def tensor_index(index):
    """`seq[t]` calls t.__index__(), which reads t's value: known when the frame made t from constants
    (values/tensors/known_tensor_values.py); an input's (or any computed) value is data, a graph break (as under
    torch.compile, which breaks there unless fullgraph makes it specialize on the value)."""
    real = known_value(index)
    if real is None:
        raise GraphBreak("data-dependent", "indexing a sequence with a tensor calls its __index__, which needs "
                         "the tensor's value (known only for a tensor the frame made from constants)")
    try:
        return operator.index(real)
    except Exception as e:
        raise GraphBreak("constant op raised", f"{type(e).__name__}: {e}")


def _builtin_generic_alias(cls, index):
    """`list[Tensor]`, `dict[str, int]` (typing.cast's first argument in torch.optim): a builtin class's
    own __class_getitem__ only builds a types.GenericAlias, so it runs for real; None otherwise."""
    import types
    if not isinstance(cls, type) or cls.__module__ != "builtins" or \
            type(cls.__dict__.get("__class_getitem__")).__name__ != "classmethod_descriptor":
        return None
    try:
        return cls[as_python(index)]
    except GraphBreak:
        return None
    except Exception:
        return None


def _wrap_const(x):
    return wrap_unsourced(x)


def setitem(tx, obj, index, value):
    if obj.setitem(tx, index, value) is not GENERIC:      # kinds with their own (ModelOutputValue...)
        return
    if isinstance(obj, TensorValue):
        if tensor_subclasses.operator_call(tx, operator.setitem, (obj, index, value)) is \
                tensor_subclasses.NOT_DISPATCHED:
            tx.ctx.graph.call_function(operator.setitem, (obj, index, value), {})
        return
    if isinstance(obj, SeqValue) and obj.kind is list:
        key = as_python(index)
        obj.items[key] = value if not isinstance(key, slice) else unpack_iterable(tx, value)
        tx.ctx.side_effects.mutate_container(obj)
        return
    if isinstance(obj, DictValue) and obj.kind is not dict:
        dict_kinds.setitem(tx, obj, index, value)
        return
    if isinstance(obj, DictValue):
        obj.items[dict_key(index)] = value
        tx.ctx.side_effects.mutate_container(obj)
        return
    raise GraphBreak("store subscript", f"item assignment on {obj!r} is not supported")


def delitem(tx, obj, index):
    if obj.delitem(tx, index) is not GENERIC:             # kinds with their own (an instance __dict__)
        return
    if isinstance(obj, DictValue) and obj.kind is not dict:
        dict_kinds.delitem(tx, obj, index)
        return
    if isinstance(obj, (SeqValue, DictValue)) and (isinstance(obj, DictValue) or obj.kind is list):
        key = dict_key(index) if isinstance(obj, DictValue) else as_python(index)
        try:
            del obj.items[key]
        except (KeyError, IndexError) as e:
            raise GraphBreak("key error", f"{type(e).__name__}: {e}")
        tx.ctx.side_effects.mutate_container(obj)
        return
    raise GraphBreak("delete subscript", f"del on {obj!r} is not supported")


# ---- container methods ----------------------------------------------------------------------------

def call_container_method(tx, recv, name, args, kwargs):
    if isinstance(recv, SeqValue):
        impl = LIST_METHODS.get(name) if recv.kind is list else None
        if impl is None and name in ("index", "count"):
            impl = LIST_METHODS[name]
        if impl is None:
            raise GraphBreak("method", f"{recv.kind.__name__}.{name} is not supported")
        return impl(tx, recv, *args, **kwargs)
    if isinstance(recv, DictValue) and recv.kind is not dict:
        return dict_kinds.call_method(tx, recv, name, args, kwargs)
    if isinstance(recv, DictValue):
        impl = DICT_METHODS.get(name)
        if impl is None:
            raise GraphBreak("method", f"dict.{name} is not supported")
        return impl(tx, recv, *args, **kwargs)
    if isinstance(recv, SetValue):
        return _set_method(tx, recv, name, args, kwargs)
    raise GraphBreak("method", f"{name} on {recv!r}")


def _mut(tx, recv):
    tx.ctx.side_effects.mutate_container(recv)


def _append(tx, l, v):
    append_items(tx, l, [v]); return Const(None)


def _extend(tx, l, v):
    append_items(tx, l, list(unpack_iterable(tx, v))); return Const(None)


def _insert(tx, l, i, v):
    l.items.insert(as_python(i), v); _mut(tx, l); return Const(None)


def _pop(tx, l, i=Const(-1)):
    try:
        v = l.items.pop(as_python(i))
    except IndexError as e:
        raise GraphBreak("index error", f"IndexError: {e}")
    _mut(tx, l)
    return v


def _clear(tx, c):
    c.items.clear(); _mut(tx, c); return Const(None)


def _reverse(tx, l):
    l.items.reverse(); _mut(tx, l); return Const(None)


def _copy(tx, c):
    return SeqValue(list, c.items) if isinstance(c, SeqValue) else DictValue(c.items)


def _index(tx, l, v, *rest):
    for i, item in enumerate(l.items):
        if item is v or (isinstance(item, Const) and isinstance(v, Const) and item.value == v.value):
            return Const(i)
    raise GraphBreak("value error", "list.index: value not found or not comparable")


def _count(tx, l, v):
    if not all(isinstance(i, Const) for i in l.items) or not isinstance(v, Const):
        raise GraphBreak("count", "count() of non-constants")
    return Const(sum(1 for i in l.items if i.value == v.value))


def _sort(tx, l, key=None, reverse=Const(False)):
    if key is not None and not (isinstance(key, Const) and key.value is None):
        raise GraphBreak("sort", "list.sort(key=...) is not supported")
    vals = [as_python(i) for i in l.items]
    l.items[:] = [Const(x) for x in sorted(vals, reverse=as_python(reverse))]
    _mut(tx, l)
    return Const(None)


LIST_METHODS = {"append": _append, "extend": _extend, "insert": _insert, "pop": _pop, "clear": _clear,
                "reverse": _reverse, "copy": _copy, "index": _index, "count": _count, "sort": _sort}


class DictViewValue(Value):
    """d.keys() / d.values() / d.items(): a live view, so later changes to d show through it."""
    __slots__ = ("dict_value", "kind")
    _TYPES = {"keys": type({}.keys()), "values": type({}.values()), "items": type({}.items())}

    def __init__(self, dict_value, kind):
        super().__init__(None)
        self.dict_value = dict_value
        self.kind = kind

    def python_type(self):
        return self._TYPES[self.kind]

    def unpack(self, tx):
        d = self.dict_value.items
        if self.kind == "keys":
            return [key_value(k) for k in d]
        if self.kind == "values":
            return list(d.values())
        return [SeqValue(tuple, [key_value(k), v]) for k, v in d.items()]

    def length(self, tx):
        return len(self.dict_value.items)

    def truth(self, tx):
        return bool(self.dict_value.items)

    def contains(self, tx, item):
        if self.kind == "keys":
            return dict_key(item) in self.dict_value.items
        raise GraphBreak("dict view", f"`in` on dict.{self.kind}()")

    def binary_op(self, tx, sym, other):
        if self.kind != "keys" or sym not in ("|", "&", "-", "^"):
            raise GraphBreak("dict view", f"{sym} on dict.{self.kind}()")
        import operator as op
        fn = {"|": op.or_, "&": op.and_, "-": op.sub, "^": op.xor}[sym]
        right = set(as_python(i) for i in unpack_iterable(tx, other))
        return SetValue([Const(x) for x in fn(self.dict_value.items.keys(), right)])

    def rebuild_parts(self):
        return [self.dict_value]

    def rebuild(self, rb):
        return f"{rb.expr(self.dict_value)}.{self.kind}()"


def _keys(tx, d):
    return DictViewValue(d, "keys")


def _values(tx, d):
    return DictViewValue(d, "values")


def _items(tx, d):
    return DictViewValue(d, "items")


def _get(tx, d, k, default=Const(None)):
    return d.items.get(dict_key(k), default)


def _dpop(tx, d, k, *default):
    key = dict_key(k)
    if key in d.items:
        v = d.items.pop(key)
        _mut(tx, d)
        return v
    if default:
        return default[0]
    raise GraphBreak("key error", f"KeyError: {key!r}")


def _setdefault(tx, d, k, default=Const(None)):
    key = dict_key(k)
    if key not in d.items:
        d.items[key] = default
        _mut(tx, d)
    return d.items[key]


def _update(tx, d, other=None, **kwargs):
    if other is not None:
        if isinstance(other, DictValue):
            d.items.update(other.items)
        else:
            for pair in unpack_iterable(tx, other):
                k, v = unpack_iterable(tx, pair)
                d.items[dict_key(k)] = v
    d.items.update(kwargs)
    _mut(tx, d)
    return Const(None)


def _popitem(tx, d):
    if not d.items:
        raise GraphBreak("key error", "KeyError: 'popitem(): dictionary is empty'")
    key = next(reversed(d.items))
    value = d.items.pop(key)
    _mut(tx, d)
    return SeqValue(tuple, [key_value(key), value])


DICT_METHODS = {"popitem": _popitem, "keys": _keys, "values": _values, "items": _items, "get": _get, "pop": _dpop,
                "setdefault": _setdefault, "update": _update, "clear": _clear, "copy": _copy,
                "__contains__": lambda tx, d, k: Const(dict_key(k) in d.items),
                "__getitem__": lambda tx, d, k: getitem(tx, d, k)}
dict_kinds.DICT_METHODS.update(DICT_METHODS)


def _set_method(tx, s, name, args, kwargs):
    if name == "add":
        key = dict_key(args[0])
        if all(dict_key(i) != key for i in s.items):
            s.items.append(key_value(key))
        _mut(tx, s)
        return Const(None)
    if name in ("discard", "remove") and len(args) == 1 and not kwargs and \
            any(hashes_by_identity(i) for i in [*s.items, args[0]]):
        return _remove_member(tx, s, name, args[0])
    real = set(as_python(i) for i in s.items)
    try:
        out = getattr(real, name)(*[as_python(a) for a in args])
    except (KeyError, TypeError, AttributeError) as e:
        raise GraphBreak("key error" if isinstance(e, KeyError) else "constant op raised", f"set.{name}: {e!r}")
    if name in SET_MUTATORS:             # keep the surviving items in order, then the new ones
        kept = [i for i in s.items if i.value in real]
        kept_keys = {i.value for i in kept}
        s.items[:] = kept + [Const(x) for x in real if x not in kept_keys]
        _mut(tx, s)
    if isinstance(out, set):
        return SetValue([Const(x) for x in out])
    return Const(out)


SET_MUTATORS = {"discard", "remove", "pop", "clear", "update", "difference_update", "intersection_update",
                "symmetric_difference_update"}


def _remove_member(tx, s, name, item):
    """set.discard / set.remove of one item, members compared as a real set does (identity for tensors)."""
    key = dict_key(item)
    kept = [i for i in s.items if dict_key(i) != key]
    if len(kept) == len(s.items):
        if name == "remove":
            raise GraphBreak("key error", f"KeyError: {item!r}")
        return Const(None)
    s.items[:] = kept
    _mut(tx, s)
    return Const(None)


def build_dict_from_pairs(keys, values):
    return DictValue({dict_key(k): v for k, v in zip(keys, values)})
