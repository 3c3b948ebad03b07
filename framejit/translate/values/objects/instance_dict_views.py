"""`obj.__dict__` / `vars(obj)` as a view over the attribute model (objects/attribute_model.py): its keys,
order, `in`, get and items agree with attribute reads, and writes through it are the model's writes.
"""
import types

from ....errors import GraphBreak
from ...source import AttrSource, DictKeySource, ItemSource
from ..base import Const, DictValue, MethodValue, ObjectValue, Value
from ..protocol import as_python, unpack_iterable, wrap_unsourced
from .attribute_sources import ABSENT, InstanceHasSource, mro_lookup
from .lookup_steps import (DELETED, MISSING, class_lookup, instance_dict_of, is_data_descriptor, is_new_object,
                           raw_store)


def instance_dict_value(tx, owner):
    """The one InstanceDictValue of `owner` (an ObjectValue of a plain object, or a NewObject)."""
    views = tx.ctx.instance_dicts
    key = id(owner.obj) if isinstance(owner, ObjectValue) else id(owner)
    view = views.get(key)
    if view is None:
        view = views[key] = InstanceDictValue(tx.ctx, owner)
    return view


class _LiveItems:
    """The view's current items as a read-only mapping (dict views and `**` read it); values are read
    (and guarded) only when asked for."""

    def __init__(self, view):
        self.view = view

    def __iter__(self):
        return iter(self.view.keys())

    def __len__(self):
        return len(self.view.keys())

    def __contains__(self, key):
        return self.view.has(key)

    def __getitem__(self, key):
        value = self.view.get(key)
        if value is MISSING:
            raise KeyError(key)
        return value

    def keys(self):
        return self.view.keys()

    def values(self):
        return [self[k] for k in self.view.keys()]

    def items(self):
        return [(k, self[k]) for k in self.view.keys()]

    def get(self, key, default=None):
        value = self.view.get(key)
        return default if value is MISSING else value


class InstanceDictValue(Value):
    """`obj.__dict__` of a plain object from outside the frame (an ObjectValue) or made in it (a
    NewObject): a view over the attribute model, so it and attribute reads always agree."""
    __slots__ = ("ctx", "owner")

    def __init__(self, ctx, owner):
        super().__init__(None)
        self.ctx = ctx
        self.owner = owner

    def python_type(self):
        return dict

    def __repr__(self):
        return f"InstanceDictValue({self.owner!r})"

    @property
    def items(self):
        return _LiveItems(self)

    @property
    def _new(self):
        return is_new_object(self.owner)

    def _cls(self):
        return self.owner.cls if self._new else type(self.owner.obj)

    def _is_slot(self, name):
        return isinstance(mro_lookup(self._cls(), name), types.MemberDescriptorType)

    # the state
    def keys(self):
        if self._new:
            return [k for k in self.owner.attrs if not self._is_slot(k)]
        obj, src = self.owner.obj, self.owner.source
        real = list(instance_dict_of(obj))
        if src is not None:
            self.ctx.guards.add("DICT_KEYS", AttrSource(src, "__dict__"), tuple(real))
        keys = dict.fromkeys(real)
        for name, present in self.ctx.side_effects.dict_edits(obj):
            if present:
                keys.setdefault(name)
            else:
                keys.pop(name, None)
        return list(keys)

    def has(self, name):
        return self.get(name, read=False) is not MISSING

    def get(self, name, read=True):
        """The Value of key `name`, or MISSING; guards the real dict's answer."""
        if self._new:
            if name in self.owner.attrs and not self._is_slot(name):
                return self.owner.attrs[name]
            return MISSING
        obj, src = self.owner.obj, self.owner.source
        if type(name) is str and not self._is_slot(name):
            pending = self.ctx.side_effects.pending_attr(obj, name)
            if pending is DELETED:
                return MISSING
            if pending is not None:
                return pending
        inst = instance_dict_of(obj)
        present = name in inst
        if src is None:
            return wrap_unsourced(inst[name]) if present else MISSING
        if not present or not read:
            self.ctx.guards.add("CONST_MATCH", InstanceHasSource(src, name) if type(name) is str else
                                _dict_key_source(src, name), present)
        if not present:
            return MISSING
        return self.ctx.wrap(inst[name], ItemSource(AttrSource(src, "__dict__"), name)) if read else True

    def _plain_key(self, tx, name, what):
        """Writes and deletes through the dict are attribute stores and deletes (object.__setattr__ /
        __delattr__ replay them) unless the class has a data descriptor under that name."""
        if type(name) is not str:
            raise GraphBreak(what, f"a non-string key {name!r} in an instance __dict__")
        cls = self._cls()
        found = class_lookup(tx, cls, name)
        if found is not ABSENT and is_data_descriptor(found):
            raise GraphBreak(what, f"changing {cls.__name__}.__dict__[{name!r}], a name the class has a "
                             f"{type(found).__name__} for")

    def set(self, tx, name, value):
        self._plain_key(tx, name, "store subscript")
        if self._new:
            self.owner.attrs[name] = value
            return
        raw_store(tx, self.owner, name, value)

    def delete(self, tx, name):
        if type(name) is str:
            self._plain_key(tx, name, "delete subscript")
        if self.get(name, read=False) is MISSING:
            raise GraphBreak("key error", f"KeyError: {name!r}")
        if self._new:
            del self.owner.attrs[name]
            return
        self.owner.edited = True
        tx.ctx.side_effects.delete_attr(self.owner.obj, self.owner.source, name, raw=True, in_dict=True)

    # value protocol (values/containers/subscripts.py, values/operator_rules.py, lookasides/builtins_table.py)
    def getitem(self, tx, index):
        key = as_python(index)
        value = self.get(key)
        if value is MISSING:
            raise GraphBreak("key error", f"KeyError: {key!r}")
        return value

    def setitem(self, tx, index, value):
        self.set(tx, as_python(index), value)

    def delitem(self, tx, index):
        self.delete(tx, as_python(index))

    def contains(self, tx, item):
        return self.has(as_python(item))

    def length(self, tx):
        return len(self.keys())

    def truth(self, tx):
        return bool(self.keys())

    def unpack(self, tx):
        return [Const(k) for k in self.keys()]

    def load_attr(self, tx, name):
        if name not in DICT_VIEW_METHODS:
            raise GraphBreak("attribute", f"dict.{name} of an instance __dict__")
        return MethodValue(self, name)

    def call_method(self, tx, name, args, kwargs):
        impl = DICT_VIEW_METHODS.get(name)
        if impl is None:
            raise GraphBreak("method", f"dict.{name} on an instance __dict__")
        return impl(tx, self, *args, **kwargs)

    def rebuild_parts(self):
        return [self.owner]

    def rebuild(self, rb):
        return f"getattr({rb.expr(self.owner)}, '__dict__')"


def _dict_key_source(src, key):
    return DictKeySource(AttrSource(src, "__dict__"), key, lookup=False)


def _view_get(tx, view, key, default=Const(None)):
    value = view.get(as_python(key))
    return default if value is MISSING else value


def _view_pop(tx, view, key, *default):
    k = as_python(key)
    value = view.get(k)
    if value is MISSING:
        if default:
            return default[0]
        raise GraphBreak("key error", f"KeyError: {k!r}")
    view.delete(tx, k)
    return value


def _view_setdefault(tx, view, key, default=Const(None)):
    k = as_python(key)
    value = view.get(k)
    if value is MISSING:
        view.set(tx, k, default)
        return default
    return value


def _view_update(tx, view, other=None, **kwargs):
    pairs = []
    if other is not None:
        if isinstance(other, DictValue):
            pairs += list(other.items.items())
        elif isinstance(other, InstanceDictValue):
            pairs += [(k, other.get(k)) for k in other.keys()]
        else:
            for pair in unpack_iterable(tx, other):
                k, v = unpack_iterable(tx, pair)
                pairs.append((as_python(k), v))
    pairs += list(kwargs.items())
    for k, v in pairs:
        view.set(tx, k, v)
    return Const(None)


def _view_clear(tx, view):
    for k in view.keys():
        view.delete(tx, k)
    return Const(None)


def _view_copy(tx, view):
    return DictValue({k: view.get(k) for k in view.keys()})


def _view_kind(kind):
    def impl(tx, view):
        from ..containers.subscripts import DictViewValue
        return DictViewValue(view, kind)
    return impl


DICT_VIEW_METHODS = {"get": _view_get, "pop": _view_pop, "setdefault": _view_setdefault, "update": _view_update,
                     "clear": _view_clear, "copy": _view_copy, "keys": _view_kind("keys"),
                     "values": _view_kind("values"), "items": _view_kind("items"),
                     "__contains__": lambda tx, view, k: Const(view.contains(tx, k)),
                     "__getitem__": lambda tx, view, k: view.getitem(tx, k),
                     "__setitem__": lambda tx, view, k, v: (view.setitem(tx, k, v), Const(None))[1],
                     "__delitem__": lambda tx, view, k: (view.delitem(tx, k), Const(None))[1],
                     "__len__": lambda tx, view: Const(view.length(tx))}

