"""transformers' ModelOutput and diffusers' BaseOutput (dataclasses that are also OrderedDicts) built,
used and returned.

Why this exists: every transformers forward ends in `return SomeModelOutput(last_hidden_state=h, ...)`,
and the caller reads it back by attribute (`out.logits`), key (`out["logits"]`), position (`out[0]`),
`to_tuple()`, `in`, `keys()`... Generic object support stops at it (it subclasses a builtin). Its
semantics are small and fixed, so they are modelled here directly:

  * the dataclass __init__ assigns every field in order; ModelOutput.__setattr__ also puts a field
    into the dict when the value is not None, so the keys are the non-None fields in field order;
  * __post_init__ special-cases "only the first field is set and it is not a tensor" (an iterator of
    key/value pairs): that form is not modelled (a graph break);
  * `out[str]` reads the dict, `out[int or slice]` indexes to_tuple(), `out[k] = v` sets both the
    dict entry and the attribute; __delitem__/pop/update/setdefault raise.

The class is recognised by its MRO (transformers.utils.generic.ModelOutput, diffusers.utils.outputs.BaseOutput);
framejit never imports either library. After the graph, the object is rebuilt without running __init__/__post_init__ again
(they only validate): the same dict items and instance __dict__ as the eager object, several times
cheaper than calling the constructor.
"""
import collections
import dataclasses

from ....errors import GraphBreak
from ...source import AttrSource
from ..base import Const, IteratorValue, MethodValue, SeqValue, TensorValue, Value
from ..protocol import as_python, wrap_unsourced

# The bases modelled here. diffusers' BaseOutput has the same semantics (its __setattr__ and
# __post_init__ give the same keys, its __getitem__ the same answers) except the special first-field form:
# transformers takes any non-tensor first field alone as a key/value iterator, diffusers only a dict.
_TRANSFORMERS = ("transformers.utils.generic", "ModelOutput")
_DIFFUSERS = ("diffusers.utils.outputs", "BaseOutput")
_BASES = (_TRANSFORMERS, _DIFFUSERS)


def _base_of(cls):
    for k in cls.__mro__:
        if (k.__module__, k.__qualname__) in _BASES:
            return (k.__module__, k.__qualname__)
    return None


def is_model_output_class(cls):
    if not isinstance(cls, type) or not issubclass(cls, collections.OrderedDict):
        return False
    return _base_of(cls) is not None and dataclasses.is_dataclass(cls)


def _first_field_form(cls, first):
    """Does the constructor take this first field, the others being None, as the dict/iterator form?
    True, False, or None when that depends on a value not known here."""
    if _is_none(first) or isinstance(first, TensorValue):
        return False
    if _base_of(cls) == _DIFFUSERS:
        if isinstance(first, Const):
            return isinstance(first.value, dict)
        kind = first.python_type()
        return issubclass(kind, dict) if isinstance(kind, type) else None
    return True


_NEW = collections.OrderedDict.__new__
_SET = collections.OrderedDict.__setitem__
_SETATTR = object.__setattr__           # ModelOutput.__setattr__ is Python: bypass it for __dict__


def _is_none(v):
    return isinstance(v, Const) and v.value is None


class ModelOutputValue(Value):
    """A ModelOutput made in the frame: `attrs` (instance attributes, all fields first) and `keys`
    (the dict part, in insertion order; each key's value is attrs[key])."""
    __slots__ = ("cls", "attrs", "keys")

    def __init__(self, cls, attrs, keys):
        super().__init__(None)
        self.cls = cls
        self.attrs = dict(attrs)
        self.keys = list(keys)

    def python_type(self):
        return self.cls

    def __repr__(self):
        return f"ModelOutputValue({self.cls.__name__}, {self.keys})"

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def construct(cls_, tx, cls, args, kwargs):
        fields = dataclasses.fields(cls)
        names = [f.name for f in fields]
        if len(args) > len(names):
            raise GraphBreak("bad call", f"TypeError: {cls.__name__}() takes {len(names)} positional arguments")
        given = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names or k in given:
                raise GraphBreak("bad call", f"TypeError: {cls.__name__}() got an unexpected or repeated argument {k!r}")
            given[k] = v
        attrs = {}
        for f in fields:
            if f.name in given:
                attrs[f.name] = given[f.name]
            elif f.default is not dataclasses.MISSING:
                attrs[f.name] = wrap_unsourced(f.default)
            elif f.default_factory is not dataclasses.MISSING:
                raise GraphBreak("model output", f"{cls.__name__}.{f.name} has a default_factory")
            else:
                raise GraphBreak("bad call", f"TypeError: {cls.__name__}() missing argument {f.name!r}")
        first = attrs[names[0]]
        others_none = all(_is_none(attrs[n]) for n in names[1:])
        if others_none and _first_field_form(cls, first) is not False:
            raise GraphBreak("model output", f"{cls.__name__} built from a non-tensor first field only (the "
                             "key/value iterator form)")
        keys = [n for n in names if not _is_none(attrs[n])]
        return cls_(cls, attrs, keys)

    @classmethod
    def of_input(cls_, ctx, obj, source):
        """A ModelOutput from outside the frame (an argument, the result of a call made before a graph
        break): matched by its class and its keys, each attribute guarded when wrapped through its own
        Source, never by identity (a model's `encoder_outputs` is a new object on every call)."""
        cls = type(obj)
        ctx.guards.add("TYPE_MATCH", source, cls)
        keys = tuple(collections.OrderedDict.keys(obj))
        ctx.guards.add("DICT_KEYS", source, keys)
        attrs = {k: ctx.wrap(v, AttrSource(source, k)) for k, v in vars(obj).items()}
        if any(k not in attrs for k in keys):
            raise GraphBreak("model output", f"a {cls.__name__} whose keys are not its attributes")
        value = cls_(cls, attrs, keys)
        value.source = source
        return value

    def _writable(self, what):
        if self.source is not None:
            raise GraphBreak("model output", f"{what} on a {self.cls.__name__} from outside the frame")

    # ---- reading ------------------------------------------------------------------------------
    def load_attr(self, tx, name):
        if name in self.attrs:
            return self.attrs[name]
        if name in METHODS:
            return MethodValue(self, name)
        try:
            real = getattr(self.cls, name)
        except AttributeError:
            raise GraphBreak("attribute error", f"AttributeError: '{self.cls.__name__}' object has no attribute {name!r}")
        if callable(real):
            raise GraphBreak("model output", f"{self.cls.__name__}.{name}() is not modelled")
        return wrap_unsourced(real)

    def has_attr(self, tx, name):
        return name in self.attrs or hasattr(self.cls, name)

    def getitem(self, tx, index):
        key = as_python(index)
        if isinstance(key, str):
            if key not in self.keys:
                raise GraphBreak("key error", f"KeyError: {key!r}")
            return self.attrs[key]
        values = [self.attrs[k] for k in self.keys]
        try:
            out = values[key]
        except (IndexError, TypeError) as e:
            raise GraphBreak("index error", f"{type(e).__name__}: {e}")
        return SeqValue(tuple, out) if isinstance(key, slice) else out

    def length(self, tx):
        return len(self.keys)

    def truth(self, tx):
        return bool(self.keys)

    def unpack(self, tx):
        return [Const(k) for k in self.keys]

    def contains(self, tx, item):
        return as_python(item) in self.keys

    # ---- writing ------------------------------------------------------------------------------
    def store_attr(self, tx, name, value):
        self._writable(f"setting .{name}")
        if name in {f.name for f in dataclasses.fields(self.cls)} and not _is_none(value) and name not in self.keys:
            self.keys.append(name)
        self.attrs[name] = value

    def setitem(self, tx, index, value):
        self._writable("item assignment")
        key = as_python(index)
        if key not in self.keys:
            self.keys.append(key)
        self.attrs[key] = value

    # ---- methods ------------------------------------------------------------------------------
    def call_method(self, tx, name, args, kwargs):
        impl = METHODS.get(name)
        if impl is None:
            raise GraphBreak("model output", f"{self.cls.__name__}.{name}() is not modelled")
        return impl(self, tx, *args, **kwargs)

    # ---- after the graph ----------------------------------------------------------------------
    def rebuild_parts(self):
        return list(self.attrs.values()) if self.source is None else []

    def rebuild(self, rb):
        """Inline statements, not a helper call: one Python frame less per call."""
        if self.source is not None:            # the caller's own object, unchanged
            return rb.reload(self.source)
        bind = rb.ns.bind
        name = rb.declare(self, f"{bind(_NEW)}({bind(self.cls)})")
        attrs = ", ".join(f"{k!r}: {rb.expr(v)}" for k, v in self.attrs.items())
        for k in self.keys:
            rb.prelude.append(f"{bind(_SET)}({name}, {k!r}, {rb.expr(self.attrs[k])})")
        rb.prelude.append(f"{bind(_SETATTR)}({name}, '__dict__', {{{attrs}}})")
        return name


def _to_tuple(self, tx):
    return SeqValue(tuple, [self.attrs[k] for k in self.keys])


def _keys(self, tx):
    return SeqValue(list, [Const(k) for k in self.keys])


def _values(self, tx):
    return SeqValue(list, [self.attrs[k] for k in self.keys])


def _items(self, tx):
    return SeqValue(list, [SeqValue(tuple, [Const(k), self.attrs[k]]) for k in self.keys])


def _get(self, tx, key, default=Const(None)):
    k = as_python(key)
    return self.attrs[k] if k in self.keys else default


def _getitem(self, tx, key):
    return self.getitem(tx, key)


def _setitem(self, tx, key, value):
    self.setitem(tx, key, value)
    return Const(None)


def _refuse(name):
    def impl(self, tx, *args, **kwargs):
        raise GraphBreak("raise", f"Exception: You cannot use ``{name}`` on a {self.cls.__name__} instance.")
    return impl


METHODS = {"to_tuple": _to_tuple, "keys": _keys, "values": _values, "items": _items, "get": _get,
           "__getitem__": _getitem, "__setitem__": _setitem, "__len__": lambda self, tx: Const(len(self.keys)),
           "__contains__": lambda self, tx, k: Const(self.contains(tx, k)),
           "__iter__": lambda self, tx: IteratorValue(self.unpack(tx)),
           "pop": _refuse("pop"), "update": _refuse("update"), "setdefault": _refuse("setdefault"),
           "__delitem__": _refuse("__delitem__")}
