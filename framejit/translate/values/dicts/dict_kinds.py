"""Dict subclasses as symbolic dicts: OrderedDict, defaultdict, Counter and user subclasses of dict.

Why this exists: model and library code builds these in the frame (`defaultdict(list)` to group
tensors, `OrderedDict` for state, `Counter` to count names, a registry class deriving from dict) and
receives them as arguments. Each is a DictValue whose `kind` is the real class, so its items are
tracked like a dict's, and only what the class changes is modelled here:

  methods      a method the class (or a user subclass) defines in Python is inlined with the value
               as `self` (so `super().__setitem__` reaches the builtin through the lookasides below);
               OrderedDict's own `move_to_end` / `popitem(last=)` are modelled; Counter's methods
               and operators run for real on a real Counter when every count is a constant
  d[k]         a Python `__getitem__` is inlined; a missing key calls `__missing__`: the
               defaultdict's factory (a call in the frame, its result stored), or a Python one
  d[k] = v     a Python `__setitem__` / `__delitem__` is inlined
  escaping     rebuilt without calling the class (`rebuild_dict`: `cls.__new__` plus the base
               builtin's own update), so a user `__init__` is not run again
  inputs       wrapped by type, keys and items (item guards read through `dict.__getitem__`); the
               factory of a defaultdict by identity; mutations written back with the base builtin's
               own clear/update (a user `__setitem__` already ran in the frame)

Classes with a Python `__new__`, `__slots__` or a Python `__getattribute__`, or whose instances
carry attributes, are not modelled (the caller breaks or keeps them as objects).
"""
import collections
import dataclasses
import inspect
import types

from ....errors import GraphBreak
from ...source import Source
from ..base import Const, DictValue, ObjectValue, SeqValue, TensorValue
from .identity_hashed_keys import key_value
from .constant_keys import all_constant_keys, constant_key_source
from ..protocol import dict_key
from ..protocol import as_python, unpack_iterable, wrap_unsourced

_BASES = (collections.OrderedDict, collections.defaultdict, dict)
_BUILTIN_KINDS = (dict, collections.OrderedDict, collections.defaultdict, collections.Counter)
# what a user subclass may not define: the value reads its items directly for these protocols
_NOT_MODELLED = ("__slots__", "__getattribute__", "__getattr__", "__new__", "__len__", "__iter__", "__contains__",
                 "__bool__", "__eq__", "__ne__", "keys", "items", "values", "__reversed__", "__or__", "__ior__")
DICT_METHODS = {}     # the plain dict's method table, filled in by values/containers/subscripts.py (which imports this)


class DefaultDictValue(DictValue):
    """A defaultdict: its items plus the Value of its default_factory."""
    __slots__ = ("factory",)

    def __init__(self, items, source=None, kind=collections.defaultdict, factory=None):
        super().__init__(items, source, kind)
        self.factory = factory if factory is not None else Const(None)

    def rebuild_parts(self):
        """The dict's own parts (identity keys, values), then the factory."""
        return super().rebuild_parts() + [self.factory]


def base_of(cls):
    """The builtin dict type whose storage `cls` uses (OrderedDict keeps its own order links)."""
    for base in _BASES:
        if issubclass(cls, base):
            return base
    return None


def is_dict_kind(cls):
    """Can instances of `cls` be modelled as a DictValue of that kind?"""
    if not isinstance(cls, type) or not issubclass(cls, dict) or cls is dict:
        return False
    if type(cls).__call__ is not type.__call__:
        return False
    if cls in _BUILTIN_KINDS:
        return True
    if getattr(cls, "_framejit_model_output", False):
        return False
    for klass in cls.__mro__:
        if klass in _BUILTIN_KINDS or klass is object:
            continue
        own = vars(klass)
        if any(name in own for name in _NOT_MODELLED):
            return False
        if klass.__module__ == "builtins":
            return False
    return True


def _static(cls, name):
    try:
        return inspect.getattr_static(cls, name)
    except AttributeError:
        return None


def _python_method(d, name):
    """The Python function `name` resolves to on the value's class, unless it is the builtin's own."""
    fn = _static(d.kind, name)
    return fn if isinstance(fn, types.FunctionType) else None


def _new_value(kind, items=(), factory=None):
    if issubclass(kind, collections.defaultdict):
        return DefaultDictValue(dict(items), kind=kind, factory=factory)
    return DictValue(dict(items), kind=kind)


def _pairs(tx, arg):
    """The (key, value) pairs of dict(arg)'s positional argument."""
    if isinstance(arg, DictValue):
        return list(arg.items.items())
    if isinstance(arg, Const) and isinstance(arg.value, dict):
        return [(k, wrap_unsourced(v)) for k, v in arg.value.items()]
    out = []
    for pair in unpack_iterable(tx, arg):
        items = unpack_iterable(tx, pair)
        if len(items) != 2:
            raise GraphBreak("bad call", "ValueError: dictionary update sequence element has the wrong length")
        out.append((dict_key(items[0]), items[1]))
    return out


# ---- construction --------------------------------------------------------------------------------

def construct(tx, cls, args, kwargs):
    """cls(*args, **kwargs) for a dict kind: __new__ is the builtin's, __init__ the builtin's or inlined."""
    if _static(cls, "__init__") is collections.Counter.__init__ and _counter_plain(cls):
        return _counter_construct(tx, cls, args, kwargs)
    factory = None
    if issubclass(cls, collections.defaultdict):
        factory = Const(None)
    value = _new_value(cls, factory=factory)
    init = _static(cls, "__init__")
    if isinstance(init, types.FunctionType):
        out = tx.inline(init, None, [value, *args], kwargs)
        if not (isinstance(out, Const) and out.value is None):
            raise GraphBreak("bad call", "TypeError: __init__() should return None")
        return value
    builtin_init(tx, value, args, kwargs)
    return value


def builtin_init(tx, value, args, kwargs):
    """dict.__init__ / OrderedDict.__init__ / defaultdict.__init__ on a DictValue."""
    args = list(args)
    if isinstance(value, DefaultDictValue) and args:
        factory = args.pop(0)
        if not (isinstance(factory, Const) and factory.value is None) and not _callable(factory):
            raise GraphBreak("bad call", "TypeError: first argument must be callable or None")
        value.factory = factory
    if len(args) > 1:
        raise GraphBreak("bad call", f"TypeError: {value.kind.__name__} expected at most 1 argument")
    pairs = _pairs(tx, args[0]) if args else []
    pairs += list(kwargs.items())
    for k, v in pairs:
        store_item(tx, value, k, v)
    return Const(None)


def _callable(v):
    if isinstance(v, (ObjectValue, Const)):
        return callable(as_python(v))
    return v.is_callable()


def store_item(tx, d, key, value):
    d.items[key] = value
    tx.ctx.side_effects.mutate_container(d)


# ---- Counter: run for real when its counts are constants --------------------------------------------

def _counter_plain(cls):
    """A Counter (sub)class whose behaviour is Counter's own (no Python override of a dict slot)."""
    for klass in cls.__mro__:
        if klass in (collections.Counter, dict, object):
            continue
        if any(isinstance(v, types.FunctionType) for v in vars(klass).values()):
            return False
    return True


def _real_counter(d):
    if not all(isinstance(v, Const) for v in d.items.values()):
        raise GraphBreak("counter", "a Counter holding non-constant counts")
    real = d.kind.__new__(d.kind)
    dict.update(real, {k: v.value for k, v in d.items.items()})
    return real


def _counter_construct(tx, cls, args, kwargs):
    real_args = [as_python(a) for a in args]
    real_kwargs = {k: as_python(v) for k, v in kwargs.items()}
    try:
        real = cls(*real_args, **real_kwargs)
    except Exception as e:
        raise GraphBreak("constant call raised", f"{cls.__name__}(...) raised {type(e).__name__}: {e}")
    return DictValue({k: Const(v) for k, v in dict.items(real)}, kind=cls)


def _from_real(tx, out):
    """A Counter method's result as a Value (a new Counter, a list of pairs, a number...)."""
    if isinstance(out, collections.Counter):
        return DictValue({k: wrap_unsourced(v) for k, v in dict.items(out)}, kind=type(out))
    value = wrap_unsourced(out)
    if isinstance(value, ObjectValue):
        if isinstance(out, list) and all(isinstance(p, tuple) for p in out):
            return SeqValue(list, [wrap_unsourced(p) for p in out])
        if isinstance(out, types.GeneratorType) or type(out).__module__ == "itertools":
            from ..base import IteratorValue
            return IteratorValue([wrap_unsourced(x) for x in out])
        raise GraphBreak("counter", f"Counter result of type {type(out).__name__}")
    return value


def _counter_method(tx, d, name, args, kwargs):
    real = _real_counter(d)
    real_args = [_real_counter(a) if isinstance(a, DictValue) and issubclass(a.kind, collections.Counter)
                 else as_python(a) for a in args]
    real_kwargs = {k: as_python(v) for k, v in kwargs.items()}
    try:
        out = getattr(real, name)(*real_args, **real_kwargs)
    except Exception as e:
        raise GraphBreak("constant call raised", f"Counter.{name} raised {type(e).__name__}: {e}")
    new_items = {k: Const(v) for k, v in dict.items(real)}
    if new_items.keys() != d.items.keys() or any(d.items[k].value != v.value or type(d.items[k].value) is not
                                                  type(v.value) for k, v in new_items.items()):
        d.items.clear()
        d.items.update(new_items)
        tx.ctx.side_effects.mutate_container(d)
    if out is real:
        return d
    return _from_real(tx, out)


COUNTER_OPERATORS = {"+": "__add__", "-": "__sub__", "|": "__or__", "&": "__and__", "+=": "__iadd__",
                     "-=": "__isub__", "|=": "__ior__", "&=": "__iand__", "==": "__eq__", "!=": "__ne__",
                     "<=": "__le__", "<": "__lt__", ">=": "__ge__", ">": "__gt__"}


def binary_op(tx, sym, a, b):
    """`a <sym> b` where a is a dict kind; None when not handled here."""
    if issubclass(a.kind, collections.Counter) and _counter_plain(a.kind) and sym in COUNTER_OPERATORS:
        if isinstance(b, DictValue) or isinstance(b, Const):
            return _counter_method(tx, a, COUNTER_OPERATORS[sym], [b], {})
    return None


# ---- methods, items, attributes --------------------------------------------------------------------

_ORDERED_MUTATORS = ("update", "setdefault", "pop", "popitem", "clear", "move_to_end")


def call_method(tx, d, name, args, kwargs):
    """A method call on a dict-kind value (kind is not dict)."""
    fn = _python_method(d, name)
    if fn is not None and not (fn.__module__ == "collections" and issubclass(d.kind, collections.Counter)
                               and _counter_plain(d.kind)):
        return tx.inline(fn, None, [d, *args], kwargs)
    if issubclass(d.kind, collections.Counter) and _counter_plain(d.kind) and \
            isinstance(_static(collections.Counter, name), types.FunctionType):
        return _counter_method(tx, d, name, args, kwargs)
    if name == "__getitem__":
        return getitem(tx, d, args[0])
    if name == "__setitem__":
        setitem(tx, d, args[0], args[1])
        return Const(None)
    if name == "__delitem__":
        delitem(tx, d, args[0])
        return Const(None)
    if name == "__init__":
        return builtin_init(tx, d, args, kwargs)
    ordered = issubclass(d.kind, collections.OrderedDict)
    if ordered and name == "move_to_end":
        return _move_to_end(tx, d, *args, **kwargs)
    if ordered and name == "popitem":
        return _ordered_popitem(tx, d, *args, **kwargs)
    if name == "copy":
        return _copy(tx, d)
    if name == "fromkeys":
        return fromkeys(tx, d.kind, args, kwargs)
    if ordered and name in _ORDERED_MUTATORS and (_python_method(d, "__setitem__") or _python_method(d, "__delitem__")):
        # OrderedDict's C methods go through a subclass's own __setitem__/__delitem__ (dict's do not)
        raise GraphBreak("method", f"{d.kind.__name__}.{name} with a Python __setitem__/__delitem__")
    impl = DICT_METHODS.get(name)
    if impl is None:
        raise GraphBreak("method", f"{d.kind.__name__}.{name} is not supported")
    return impl(tx, d, *args, **kwargs)


def _move_to_end(tx, d, key, last=Const(True)):
    k = dict_key(key)
    if k not in d.items:
        raise GraphBreak("key error", f"KeyError: {k!r}")
    value = d.items.pop(k)
    if as_python(last):
        d.items[k] = value
    else:
        rest = dict(d.items)
        d.items.clear()
        d.items[k] = value
        d.items.update(rest)
    tx.ctx.side_effects.mutate_container(d)
    return Const(None)


def _ordered_popitem(tx, d, last=Const(True)):
    if not d.items:
        raise GraphBreak("key error", "KeyError: 'dictionary is empty'")
    key = next(reversed(d.items)) if as_python(last) else next(iter(d.items))
    value = d.items.pop(key)
    tx.ctx.side_effects.mutate_container(d)
    return SeqValue(tuple, [key_value(key), value])


def _copy(tx, d):
    """d.copy(): OrderedDict and defaultdict copy as `type(d)(...)`; a user __init__ would run then."""
    if d.kind not in _BUILTIN_KINDS and isinstance(_static(d.kind, "__init__"), types.FunctionType):
        raise GraphBreak("method", f"{d.kind.__name__}.copy runs the class's __init__")
    kind = d.kind if issubclass(d.kind, (collections.OrderedDict, collections.defaultdict)) else dict
    return _new_value(kind, d.items, getattr(d, "factory", None))


def getitem(tx, d, index):
    fn = _python_method(d, "__getitem__")
    if fn is not None:
        return tx.inline(fn, None, [d, index], {})
    return builtin_getitem(tx, d, index)


def builtin_getitem(tx, d, index):
    """dict.__getitem__: the item, or __missing__ when the class has one."""
    key = dict_key(index)
    if key in d.items:
        return d.items[key]
    missing = _static(d.kind, "__missing__")
    if isinstance(missing, types.FunctionType):
        return tx.inline(missing, None, [d, index], {})
    if isinstance(d, DefaultDictValue):
        if isinstance(d.factory, Const) and d.factory.value is None:
            raise GraphBreak("key error", f"KeyError: {key!r}")
        value = tx.call(d.factory, [], {})
        store_item(tx, d, key, value)
        return value
    raise GraphBreak("key error", f"KeyError: {key!r}")


def setitem(tx, d, index, value):
    fn = _python_method(d, "__setitem__")
    if fn is not None:
        tx.inline(fn, None, [d, index, value], {})
        return
    store_item(tx, d, dict_key(index), value)


def delitem(tx, d, index):
    fn = _python_method(d, "__delitem__")
    if fn is not None:
        tx.inline(fn, None, [d, index], {})
        return
    key = dict_key(index)
    if key not in d.items:
        raise GraphBreak("key error", f"KeyError: {key!r}")
    del d.items[key]
    tx.ctx.side_effects.mutate_container(d)


def load_attr(tx, d, name):
    """d.name for a dict kind: default_factory, class attributes, or a method (called through call_method)."""
    if name == "default_factory" and isinstance(d, DefaultDictValue):
        return d.factory
    attr = _static(d.kind, name)
    if attr is None:
        raise GraphBreak("attribute error", f"AttributeError: '{d.kind.__name__}' object has no attribute {name!r}")
    if isinstance(attr, (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
                         types.WrapperDescriptorType, classmethod, staticmethod)) or callable(attr) and \
            type(attr).__name__ in ("method_descriptor", "wrapper_descriptor", "classmethod_descriptor"):
        if isinstance(attr, staticmethod):
            return ObjectValue(attr.__func__)
        from ..base import MethodValue
        return MethodValue(d, name)
    if isinstance(attr, property):
        return tx.inline(attr.fget, None, [d], {})
    if hasattr(type(attr), "__get__"):
        raise GraphBreak("attribute", f"{d.kind.__name__}.{name} is a {type(attr).__name__} descriptor")
    return wrap_unsourced(attr)


# ---- fromkeys ------------------------------------------------------------------------------------

def fromkeys(tx, cls, args, kwargs):
    """cls.fromkeys(iterable, value=None): cls() then d[key] = value for each key (one shared value)."""
    if kwargs and _fromkeys_owner(cls) is collections.OrderedDict:
        # OrderedDict's own fromkeys takes (iterable, value=None) by keyword too; dict's takes none
        args = list(args)
        for i, name in enumerate(("iterable", "value")):
            if name in kwargs:
                if len(args) != i:
                    raise GraphBreak("bad call", "TypeError: fromkeys() got its arguments twice or out of order")
                args.append(kwargs[name])
        if set(kwargs) - {"iterable", "value"}:
            raise GraphBreak("bad call", "TypeError: an invalid keyword argument for fromkeys()")
        kwargs = {}
    if kwargs or not 1 <= len(args) <= 2:
        raise GraphBreak("bad call", "TypeError: fromkeys expected 1 or 2 arguments")
    keys = unpack_iterable(tx, args[0])
    value = args[1] if len(args) > 1 else Const(None)
    if cls is dict:
        return DictValue({dict_key(k): value for k in keys})
    d = tx.call(ObjectValue(cls), [], {})
    if not isinstance(d, DictValue):
        raise GraphBreak("call", f"{cls.__name__}.fromkeys on a class framejit does not model")
    for k in keys:
        setitem(tx, d, k, value)
    return d


def _fromkeys_owner(cls):
    """The class in cls's MRO whose own fromkeys cls.fromkeys is."""
    return next((c for c in cls.__mro__ if "fromkeys" in c.__dict__), dict)


def fromkeys_callable(obj):
    """`SomeDict.fromkeys` (a builtin classmethod bound to a dict kind): the class, else None."""
    if isinstance(obj, types.BuiltinMethodType) and getattr(obj, "__name__", None) == "fromkeys":
        owner = getattr(obj, "__self__", None)
        if owner is dict or is_dict_kind(owner):
            return owner
    return None


# ---- inputs and rebuilding ---------------------------------------------------------------------------

def rebuild_dict(cls, items, factory=None):
    """A dict of kind `cls` holding `items`, made without running the class's own __init__/__setitem__."""
    d = cls.__new__(cls)
    base = base_of(cls)
    if base is collections.defaultdict:
        d.default_factory = factory
    if base is collections.OrderedDict:
        for k, v in items.items():
            collections.OrderedDict.__setitem__(d, k, v)
    else:
        dict.update(d, items)
    return d


def write_back_dict(d, items):
    """Make input dict `d` hold `items`, in order, through the base builtin's own methods."""
    if base_of(type(d)) is collections.OrderedDict:
        collections.OrderedDict.clear(d)
        for k, v in items.items():
            collections.OrderedDict.__setitem__(d, k, v)
    else:
        dict.clear(d)
        dict.update(d, items)


# The standard library's dict kinds: reached from a global or an attribute (not only as an argument) they
# are modelled too; a user's subclass is modelled only as an argument (a library's registry subclass with
# its own __getitem__, such as transformers' ACT2FN, stays the object it is).
STDLIB_KINDS = (collections.OrderedDict, collections.defaultdict, collections.Counter)


@dataclasses.dataclass(frozen=True)
class EmptyInstanceDictSource(Source):
    """`not base.__dict__`: a modelled dict-kind argument holds no instance attributes (a later one with
    them -- `d.scale = 5` -- must not reuse code that answered hasattr(d, "scale") as False)."""
    base: Source
    boolean = True

    def expr(self):
        return f"(not {self.base.expr()}.__dict__)"

    def name(self):
        return f"{self.base.name()}.__dict__ is empty"

    def root(self):
        return self.base.root()


def wrappable_input(obj):
    """An argument of a dict kind that can be modelled: no instance attributes, constant keys."""
    t = type(obj)
    if not is_dict_kind(t) or getattr(obj, "__dict__", None):
        return False
    if _static(t, "keys") not in (dict.keys, collections.OrderedDict.keys):
        return False
    return all_constant_keys(dict.keys(obj))


def wrap_input(ctx, obj, source, guard):
    from ...source import AttrSource
    t = type(obj)
    if guard:
        ctx.guards.add("TYPE_MATCH", source, t)
        ctx.guards.add("DICT_KEYS", source, tuple(dict.keys(obj)))
        if hasattr(obj, "__dict__"):        # an instance that can hold attributes: modelled only while it holds none
            ctx.guards.add("CONST_MATCH", EmptyInstanceDictSource(source), True)
    items = {k: ctx.wrap(dict.__getitem__(obj, k), constant_key_source(source, k), guard) for k in dict.keys(obj)}
    if isinstance(obj, collections.defaultdict):
        factory = ctx.wrap(obj.default_factory, AttrSource(source, "default_factory"), guard)
        value = DefaultDictValue(items, source, kind=t, factory=factory)
    else:
        value = DictValue(items, source, kind=t)
    if hasattr(obj, "__dict__"):
        ctx.dict_kind_objects[id(value)] = (value, obj)      # its instance attributes: values/dicts/dict_kind_attrs.py
    return value


def real_object(tx, d):
    """The real dict-kind argument a DictValue models, when it can hold instance attributes; else None."""
    entry = tx.ctx.dict_kind_objects.get(id(d))
    return entry[1] if entry is not None and entry[0] is d else None
