"""Sources: where a value came from, as a path from the frame.

A Source is frozen and chained (local `x`, then `.weight`, then `[0]`). It gives both the Python
expression that reloads the value inside generated code (`expr`) and a readable name for reports
(`name`). Guards are built from Sources only; user strings reach generated code only through repr().

Generated code runs with these names bound: the frame's arguments by their own names, `__fj_g` (the
function's globals dict), `__fj_b` (its builtins dict), `__fj_cl` (its closure tuple).
"""
from dataclasses import dataclass, fields

_HASH = "_fj_hash"
_FIELD_NAMES = {}                     # Source class -> its dataclass field names


def _remembered_hash(self):
    """The dataclass hash of a Source's fields, computed once per Source: Sources are frozen chains, so
    the generated __hash__ re-hashed the whole chain on every dict lookup (guard rendering looks each
    path up thousands of times: a fifth of a ResNet's capture). Kept in the instance __dict__, never
    pickled or copied (see Source.__getstate__): str hashes differ between processes."""
    d = self.__dict__
    h = d.get(_HASH)
    if h is None:
        names = _FIELD_NAMES.get(type(self))
        if names is None:
            names = _FIELD_NAMES[type(self)] = tuple(f.name for f in fields(self) if f.compare)
        h = d[_HASH] = hash(tuple([getattr(self, name) for name in names]))
    return h


@dataclass(frozen=True)
class Source:
    def __init_subclass__(cls, **kwargs):
        # set before @dataclass runs: a class that defines __hash__ keeps it (frozen, eq), so every
        # dataclass Source remembers its hash; a class with its own __hash__ (identity) keeps that
        super().__init_subclass__(**kwargs)
        if "__hash__" not in cls.__dict__:
            cls.__hash__ = _remembered_hash

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop(_HASH, None)
        return state

    def expr(self) -> str:
        raise NotImplementedError

    def name(self) -> str:
        return self.expr()

    def root(self) -> "Source":
        return self


@dataclass(frozen=True)
class LocalSource(Source):
    local: str

    def expr(self):
        return self.local

    def name(self):
        return self.local


@dataclass(frozen=True)
class GlobalSource(Source):
    global_name: str

    def expr(self):
        return f"__fj_g[{self.global_name!r}]"

    def name(self):
        return self.global_name


@dataclass(frozen=True)
class BuiltinSource(Source):
    builtin: str

    def expr(self):
        return f"__fj_b[{self.builtin!r}]"

    def name(self):
        return self.builtin


@dataclass(frozen=True)
class ClosureSource(Source):
    index: int
    var: str

    def expr(self):
        return f"__fj_cl[{self.index}].cell_contents"

    def name(self):
        return self.var


@dataclass(frozen=True)
class NamespaceSource(Source):
    """The frame's globals dict (`__fj_g`) or its builtins dict (`__fj_b`) itself: what a guard on a
    name's absence (`'x' in __fj_g` is False) looks into."""
    builtins: bool = False

    def expr(self):
        return "__fj_b" if self.builtins else "__fj_g"

    def name(self):
        return "builtins" if self.builtins else "globals()"


@dataclass(frozen=True)
class FloatTensorSource(Source):
    """A Python float handed to the graph as a 0-dim float64 tensor (a dynamic float under a backend that
    traces the graph: graph/float_inputs.py); guards read the float itself from `base`."""
    base: Source

    def expr(self):
        return f"__fj_float_tensor({self.base.expr()})"

    def name(self):
        return self.base.name()

    def root(self):
        return self.base.root()


@dataclass(frozen=True)
class PlainTensorSource(Source):
    """A tensor subclass input handed to the graph as a plain alias (values/tensors/tensor_subclasses.py): the
    entry passes `__fj_plain_tensor(x)`, and its tensor guard reads the alias, not x (whose attribute
    reads would run x's __torch_function__)."""
    base: Source

    def expr(self):
        return f"__fj_plain_tensor({self.base.expr()})"

    def name(self):
        return self.base.name()

    def root(self):
        return self.base.root()


@dataclass(frozen=True)
class AttrSource(Source):
    base: Source
    attr: str

    def expr(self):
        if self.attr.isidentifier() and not self.attr.startswith("__"):
            return f"{self.base.expr()}.{self.attr}"
        return f"getattr({self.base.expr()}, {self.attr!r})"

    def name(self):
        return f"{self.base.name()}.{self.attr}"

    def root(self):
        return self.base.root()


@dataclass(frozen=True)
class TypeSource(Source):
    """`type(base)`: what the frame's `type(x)` returned, so what it reads from that class is guarded."""
    base: Source

    def expr(self):
        return f"type({self.base.expr()})"

    def name(self):
        return f"type({self.base.name()})"

    def root(self):
        return self.base.root()


@dataclass(frozen=True)
class ItemSource(Source):
    base: Source
    index: object  # int or str or other constant key

    def expr(self):
        return f"{self.base.expr()}[{self.index!r}]"

    def name(self):
        return f"{self.base.name()}[{self.index!r}]"

    def root(self):
        return self.base.root()


@dataclass(frozen=True)
class FixedObjectSource(Source):
    """A long-lived object generated code cannot reach from the frame (another module's globals dict):
    it is named `__fj_fixed_<id>`, and build_entry binds that name (see fixed_source)."""
    key: int
    label: str

    def expr(self):
        return f"__fj_fixed_{self.key}"

    def name(self):
        return self.label


class _FixedObjects:
    """id -> object named by a FixedObjectSource: held weakly when the object allows it (functions),
    strongly otherwise (module globals dicts, which live as long as their modules anyway). An entry's
    namespace keeps its own strong reference once built."""

    def __init__(self):
        import weakref
        self.weak = weakref.WeakValueDictionary()
        self.strong = {}

    def add(self, obj):
        try:
            self.weak[id(obj)] = obj
        except TypeError:
            self.strong[id(obj)] = obj

    def __getitem__(self, key):
        obj = self.weak.get(key)
        return self.strong[key] if obj is None else obj


FIXED_OBJECTS = _FixedObjects()


def fixed_source(obj, label):
    FIXED_OBJECTS.add(obj)
    return FixedObjectSource(id(obj), label)


@dataclass(frozen=True)
class DefaultSource(Source):
    """A function's default argument value (fn.__defaults__[i] or __kwdefaults__[name])."""
    fn_source: Source
    key: object

    def expr(self):
        if isinstance(self.key, int):
            return f"{self.fn_source.expr()}.__defaults__[{self.key}]"
        return f"{self.fn_source.expr()}.__kwdefaults__[{self.key!r}]"

    def name(self):
        return f"{self.fn_source.name()}(default {self.key!r})"

    def root(self):
        return self.fn_source.root()


@dataclass(frozen=True)
class DictKeySource(Source):
    """`dict.__contains__(base, key)` (present=False) or `dict.__getitem__(base, key)` (present=True),
    spelled with the frame's builtin `dict`."""
    base: Source
    key: object
    lookup: bool = True

    def expr(self):
        method = "__getitem__" if self.lookup else "__contains__"
        return f"__fj_b['dict'].{method}({self.base.expr()}, {self.key!r})"

    def name(self):
        return f"{self.base.name()}[{self.key!r}]" if self.lookup else f"{self.key!r} in {self.base.name()}"

    def root(self):
        return self.base.root()


@dataclass(frozen=True)
class MembershipSource(Source):
    """`key in base` for a mapping whose `in` runs no user code (a class's `__dict__` mappingproxy)."""
    base: Source
    key: object

    def expr(self):
        return f"({self.key!r} in {self.base.expr()})"

    def name(self):
        return f"{self.key!r} in {self.base.name()}"

    def root(self):
        return self.base.root()
