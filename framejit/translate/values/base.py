"""Symbolic values: what the translator keeps on its stack instead of real objects, and the one protocol
every kind answers.

A few small classes, no deep tree:
  Const          an immutable Python value known at translation time (ints, shapes, dtypes, strings...)
  TensorValue    a tensor computed by (or fed into) the graph: an fx Node plus its fake tensor
  SeqValue       a tuple or list of values (lists are mutable; mutations of an input list are side effects)
  DictValue      a dict of constant keys to values (insertion order kept)
  SetValue       a set of values
  ObjectValue    a real Python object used by identity: functions, classes, modules, nn.Modules...
  MethodValue    a method looked up on a symbolic value (x.view, lst.append), not yet called
  IteratorValue  an iterator over a known list of values (for loops are unrolled)
  NULL           the 3.11 NULL stack marker pushed before callables
Every value may carry a Source (where it came from in the frame); values built in the frame have none.
The other kinds live in the families beside this module (tensors/, numbers/, containers/, dicts/,
objects/, modules/, functions/, iterators/, managers/).

The value protocol (`Value`): every operation the translator may ask of a value is a method of Value,
and callers call it -- they never probe a value for a method. A kind overrides the operations it has
rules of its own for. The defaults are of two sorts:
  * a graph break naming the operation and the kind (`call`, `call_method`, `next_value`, `binary_op`,
    `delete_attr`, `rebuild`): what the translator did for every kind without a rule;
  * GENERIC, for the operations the translator also has a generic rule for (values/protocol.py,
    values/attrs.py, values/operator_rules.py, values/containers/subscripts.py, the builtins' table):
    the kind has no rule of its own and the caller applies the generic one (which may still break).

  rebuild_parts()          the values a rebuild of this one reaches (its items, its receiver, its cells),
                           or None when this kind cannot be rebuilt as a real object after the graph.
                           One answer for codegen (which counts and walks the parts) and for the break
                           decision (which asks that every part be rebuildable).
  rebuild(rb)              the expression that makes the real object in the code run after the graph
  python_type()            the Python type of the object the value stands for
  as_python()              the real value of a value made only of constants
  truth(tx), length(tx)    bool(v), len(v)
  unpack(tx)               the items when iterated, as a list of Values
  iterate(tx)              iter(v) through a Python __iter__ (a Value to iterate)
  is_lazy_iterator()       is the value its own iterator, producing items one by one (`next_value`)?
  next_value(tx)           the next item of a lazy iterator, or None when exhausted
  contains(tx, item)       `item in v`
  getitem / setitem / delitem (tx, index[, value])           v[index], v[index] = value, del v[index]
  load_attr / store_attr / delete_attr / has_attr (tx, name[, value])   v.name, v.name = x, del, hasattr
  call(tx, args, kwargs), call_method(tx, name, args, kwargs)          v(...), v.name(...)
  is_callable()            callable(v) for a kind without a real object
  binary_op(tx, sym, other)            v <sym> other (and the in-place forms) by the kind's own rules
  rich_compare(tx, sym, left, right)   left <sym> right by Python dunders, self being one of the two
  made_in_frame            (a class attribute) an object the frame made, hashed by identity
"""
import torch

from ...errors import GraphBreak
from .numbers.sym_concrete import SUSPECT_TYPES, concrete

GENERIC = type("Generic", (), {"__repr__": lambda self: "GENERIC", "__slots__": ()})()
"""What a protocol method returns when its kind has no rule of its own: the caller applies the generic rule."""


class Value:
    """The value protocol: see the module docstring for every operation and its default."""
    __slots__ = ("source",)
    made_in_frame = False

    def __init__(self, source=None):
        self.source = source

    def python_type(self):
        raise NotImplementedError

    # -- rebuilding as a real object after the graph (convert/codegen.py) and the break decision
    def rebuild_parts(self):
        return None

    def rebuild(self, rb):
        raise GraphBreak("reconstruct", f"{type(self).__name__} cannot be rebuilt as a real object after the graph")

    # -- Python's object protocol: GENERIC means the caller's generic rule applies
    def as_python(self):
        return GENERIC

    def truth(self, tx):
        return GENERIC

    def length(self, tx):
        return GENERIC

    def unpack(self, tx):
        return GENERIC

    def iterate(self, tx):
        return GENERIC

    def is_lazy_iterator(self):
        return False

    def next_value(self, tx):
        raise GraphBreak("iterate", f"iteration over {self!r}")

    def contains(self, tx, item):
        return GENERIC

    def getitem(self, tx, index):
        return GENERIC

    def setitem(self, tx, index, value):
        return GENERIC

    def delitem(self, tx, index):
        return GENERIC

    def load_attr(self, tx, name):
        return GENERIC

    def store_attr(self, tx, name, value):
        return GENERIC

    def delete_attr(self, tx, name):
        raise GraphBreak("delete attr", f"del of attribute {name!r} of {self!r} is not supported")

    def has_attr(self, tx, name):
        return GENERIC

    def call(self, tx, args, kwargs):
        raise GraphBreak("call", f"calling {self!r} is not supported")

    def is_callable(self):
        return type(self).call is not Value.call

    def call_method(self, tx, name, args, kwargs):
        raise GraphBreak("method", f"method {name} of {self!r}")

    def has_methods(self):
        """Does the kind answer method calls itself (`call_method`)? A with-block on it looks for a Python
        __enter__ / __exit__ on its class."""
        return type(self).call_method is not Value.call_method

    def binary_op(self, tx, sym, other):
        raise GraphBreak("operator", f"{sym} on {type(self).__name__} and {type(other).__name__} is not supported")

    def rich_compare(self, tx, sym, left, right):
        return GENERIC


class IdentityKey:
    """A dict key or set member that hashes by identity (values/dicts/identity_hashed_keys.py): equal only
    to a key of the same object. `value` is the Value it was made from (what the key rebuilds as),
    `ident` what decides identity (the Value itself for a tensor or an object the frame made; the real
    object for an ObjectValue, which two Sources of one object may wrap separately)."""
    __slots__ = ("value", "ident")

    def __init__(self, value, ident=None):
        self.value = value
        self.ident = value if ident is None else ident

    def __hash__(self):
        return id(self.ident)

    def __eq__(self, other):
        return isinstance(other, IdentityKey) and other.ident is self.ident

    def __repr__(self):
        return f"<identity key {self.value!r}>"


class Const(Value):
    __slots__ = ("value",)

    def __init__(self, value, source=None):
        super().__init__(source)
        if type(value) in SUSPECT_TYPES:      # fake metadata folded: never a SymInt (values/numbers/sym_concrete.py)
            value = concrete(value)
        self.value = value

    def python_type(self):
        return type(self.value)

    def rebuild_parts(self):
        return []

    def __repr__(self):
        return f"Const({self.value!r})"


class TensorValue(Value):
    """`cls`: the tensor subclass this value is an instance of (values/tensors/tensor_subclasses.py), None for a
    plain tensor or parameter; node and fake are plain either way."""
    __slots__ = ("node", "fake", "cls")

    def __init__(self, node, fake, source=None):
        super().__init__(source)
        self.node = node
        self.fake = fake
        self.cls = None

    def python_type(self):
        return self.cls or _tensor_type(self)

    def rebuild_parts(self):
        return []

    def __repr__(self):
        return f"TensorValue({self.node.name})"


def _tensor_type(value):
    import torch
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass
    if is_traceable_wrapper_subclass(value.fake):
        return type(value.fake)       # a wrapper subclass taken by the graph as it is (tensors/tensor_subclasses.py)
    return torch.nn.Parameter if value.node.meta.get("is_param") else torch.Tensor


class SeqValue(Value):
    """A tuple or list. `kind` is the Python type (tuple, list, torch.Size, a namedtuple class)."""
    __slots__ = ("kind", "items")

    def __init__(self, kind, items, source=None):
        super().__init__(source)
        self.kind = kind
        self.items = list(items)

    def python_type(self):
        return self.kind

    def rebuild_parts(self):
        return self.items

    def __repr__(self):
        return f"SeqValue({self.kind.__name__}, {self.items!r})"


class DictValue(Value):
    """A dict (or dict subclass given by `kind`) keyed by constants or IdentityKeys (values/dicts/identity_hashed_keys.py);
    values are Values."""
    __slots__ = ("kind", "items")

    def __init__(self, items, source=None, kind=dict):
        super().__init__(source)
        self.kind = kind
        self.items = dict(items)

    def python_type(self):
        return self.kind

    def rebuild_parts(self):
        """The objects of identity keys (values/dicts/identity_hashed_keys.py), then the values."""
        return [k.value for k in self.items if type(k) is IdentityKey] + list(self.items.values())

    def __repr__(self):
        return f"DictValue({self.items!r})"


class SetValue(Value):
    """A set: its members as Values in build order (constants, or tensors by identity: values/dicts/identity_hashed_keys.py)."""
    __slots__ = ("items",)

    def __init__(self, items, source=None):
        super().__init__(source)
        self.items = list(items)

    def python_type(self):
        return set

    def rebuild_parts(self):
        return self.items


class ObjectValue(Value):
    """`edited`: the frame changed the object's attributes (side_effects.py), so the real object is not
    what the frame sees until the changes are replayed: it cannot stand for itself (as_python)."""
    __slots__ = ("obj", "edited")

    def __init__(self, obj, source=None):
        super().__init__(source)
        self.obj = obj
        self.edited = False

    def python_type(self):
        return type(self.obj)

    def rebuild_parts(self):
        return []

    def rebuild(self, rb):
        return rb.ns.bind(self.obj)

    def __repr__(self):
        return f"ObjectValue({_safe_repr(self.obj)})"


def _safe_repr(obj):
    """repr(obj) for messages, without running code of the program: a tensor's repr goes through
    __torch_function__ (a subclass may log or count it) and reads the data, so tensors are named by type."""
    if isinstance(obj, torch.Tensor):
        return f"<{type(obj).__qualname__} tensor>"
    return repr(obj)


class MethodValue(Value):
    """`receiver.name` looked up but not called yet (tensor, list, dict, str methods...)."""
    __slots__ = ("receiver", "name")

    def __init__(self, receiver, name, source=None):
        super().__init__(source)
        self.receiver = receiver
        self.name = name

    def rebuild_parts(self):
        return [self.receiver]

    def rebuild(self, rb):
        return f"getattr({rb.expr(self.receiver)}, {self.name!r})"

    def is_callable(self):
        return True

    def __repr__(self):
        return f"MethodValue({self.receiver!r}.{self.name})"


class IteratorValue(Value):
    """An iterator over known items, `pos` of them consumed. `seq`: the list, tuple or range Value it
    iterates, when iter() of one made it (then it is rebuilt after the graph as the real iterator over
    that object, at its position: `iterator_at`); None for other iterators (zip, map...), which cannot
    cross a graph break. values/iterators/iterator_positions.py models iterators from outside."""
    __slots__ = ("items", "pos", "seq")

    def __init__(self, items, seq=None):
        super().__init__(None)
        self.items = list(items)
        self.pos = 0
        self.seq = seq

    def python_type(self):
        return type(iter(()))

    def rebuild_parts(self):
        return None if self.seq is None else [self.seq]     # zip, map...: not as the object eager has

    def rebuild(self, rb):
        if self.seq is None:
            return super().rebuild(rb)
        seq = rb.expr(self.seq)
        return rb.declare(self, f"{rb.ns.bind(iterator_at)}({seq}, {self.pos})")


def iterator_at(seq, pos):
    """iter(seq) advanced past its first `pos` items (generated code: a rebuilt IteratorValue)."""
    it = iter(seq)
    if pos:
        it.__setstate__(pos)
    return it


def iterated_sequence(v):
    """The Value an iterator made by iter(v) can be rebuilt over (v itself: a list, tuple or range), or None."""
    if isinstance(v, SeqValue) and v.kind in (list, tuple):
        return v
    if isinstance(v, Const) and type(v.value) in (tuple, range):
        return v
    return None


class NullValue(Value):
    __slots__ = ()

    def __repr__(self):
        return "NULL"


NULL = NullValue()
