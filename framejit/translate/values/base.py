"""Symbolic values: what the translator keeps on its stack instead of real objects.

A few small classes, no deep tree:
  Const          an immutable Python value known at translation time (ints, shapes, dtypes, strings...)
  TensorValue    a tensor computed by (or fed into) the graph: an fx Node plus its fake tensor
  SeqValue       a tuple or list of values (lists are mutable; mutations of an input list are side effects)
  DictValue      a dict of constant keys to values (insertion order kept)
  ObjectValue    a real Python object used by identity: functions, classes, modules, nn.Modules...
  MethodValue    a method looked up on a symbolic value (x.view, lst.append), not yet called
  IteratorValue  an iterator over a known list of values (for loops are unrolled)
  NULL           the 3.11 NULL stack marker pushed before callables
Every value may carry a Source (where it came from in the frame); values built in the frame have none.
"""
import torch

from .numbers.sym_concrete import SUSPECT_TYPES, concrete


class Value:
    __slots__ = ("source",)

    def __init__(self, source=None):
        self.source = source

    def python_type(self):
        raise NotImplementedError


class Const(Value):
    __slots__ = ("value",)

    def __init__(self, value, source=None):
        super().__init__(source)
        if type(value) in SUSPECT_TYPES:      # fake metadata folded: never a SymInt (values/sym_free.py)
            value = concrete(value)
        self.value = value

    def python_type(self):
        return type(self.value)

    def __repr__(self):
        return f"Const({self.value!r})"


class TensorValue(Value):
    """`cls`: the tensor subclass this value is an instance of (values/tensor_subclasses.py), None for a
    plain tensor or parameter; node and fake are plain either way."""
    __slots__ = ("node", "fake", "cls")

    def __init__(self, node, fake, source=None):
        super().__init__(source)
        self.node = node
        self.fake = fake
        self.cls = None

    def python_type(self):
        return self.cls or _tensor_type(self)

    def __repr__(self):
        return f"TensorValue({self.node.name})"


def _tensor_type(value):
    import torch
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

    def __repr__(self):
        return f"SeqValue({self.kind.__name__}, {self.items!r})"


class DictValue(Value):
    """A dict (or dict subclass given by `kind`) keyed by constants or IdentityKeys (values/identity_keys.py);
    values are Values."""
    __slots__ = ("kind", "items")

    def __init__(self, items, source=None, kind=dict):
        super().__init__(source)
        self.kind = kind
        self.items = dict(items)

    def python_type(self):
        return self.kind

    def __repr__(self):
        return f"DictValue({self.items!r})"


class SetValue(Value):
    """A set: its members as Values in build order (constants, or tensors by identity: values/identity_keys.py)."""
    __slots__ = ("items",)

    def __init__(self, items, source=None):
        super().__init__(source)
        self.items = list(items)

    def python_type(self):
        return set


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

    def __repr__(self):
        return f"MethodValue({self.receiver!r}.{self.name})"


class IteratorValue(Value):
    __slots__ = ("items", "pos")

    def __init__(self, items):
        super().__init__(None)
        self.items = list(items)
        self.pos = 0

    def python_type(self):
        return type(iter(()))


class NullValue(Value):
    __slots__ = ()

    def __repr__(self):
        return "NULL"


NULL = NullValue()
