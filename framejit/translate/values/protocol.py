"""How symbolic values behave as Python objects, for every kind at once: the real value of a value made
of constants (`as_python`), its truth, its items when iterated, its Python type, and the Value of a
real object reached without a Source (`wrap_unsourced`: constants only).

Kinds with rules of their own answer through methods (`truth(tx)`, `unpack(tx)`, `python_type()`),
so this module imports none of them. The tables of lookasides, the translator's handlers and the
value kinds all ask these questions.
"""

import torch

from ...errors import GraphBreak
from .base import GENERIC, Const, DictValue, IteratorValue, ObjectValue, SeqValue, SetValue, TensorValue
from .dicts.identity_hashed_keys import IdentityKey, hashes_by_identity, identity_key, key_value
from .numbers.sym_concrete import SYM_TYPES

CONST_TYPES = (int, float, bool, str, bytes, complex, type(None), type(Ellipsis), type(NotImplemented),
               torch.dtype, torch.device, torch.layout, torch.memory_format)


# The protocol of user objects from outside the frame (values/objects/user_dunders.py fills this in when it is
# imported: it imports this module, so this module does not import it): is_user_object, truth, iterate.
USER_OBJECTS = {}


def is_namedtuple_class(cls):
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields") and cls is not tuple


def is_structseq_class(cls):
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "n_sequence_fields")


def as_python(v):
    """Real value of a symbolic value made only of constants (else GraphBreak)."""
    if isinstance(v, Const):
        return v.value
    if isinstance(v, SeqValue):
        return sequence_of(v.kind, [as_python(i) for i in v.items])
    if isinstance(v, DictValue):
        return {_real_key(k): as_python(x) for k, x in v.items.items()}
    if isinstance(v, SetValue):
        return {as_python(i) for i in v.items}
    own = v.as_python()                    # a symbolic size (values/numbers/sym_values.py): its value, guarded
    if own is not GENERIC:
        return own
    if isinstance(v, ObjectValue):
        if v.edited:
            raise GraphBreak("needs real value", f"{v!r}: the frame changed its attributes, so it is not the real "
                             "object yet")
        return v.obj
    raise GraphBreak("needs real value", f"{v!r} is not a constant here")


def dict_key(v):
    """The real key a dict or set of the frame files v under (values/dicts/identity_hashed_keys.py)."""
    if hashes_by_identity(v):
        return identity_key(v)
    return as_python(v)


def _real_key(key):
    if type(key) is IdentityKey:
        return as_python(key.value)       # a tensor key: GraphBreak
    return key


def sequence_of(kind, items):
    """The real sequence of kind `kind` (a SeqValue's) holding `items`: a torch.Size stays a torch.Size
    and a named tuple that named tuple (their str, repr, type and == are not a plain tuple's)."""
    if kind is list or kind is tuple:
        return kind(items)
    if kind is torch.Size:
        return torch.Size(items)
    if isinstance(kind, type) and issubclass(kind, tuple):
        if hasattr(kind, "_fields"):                 # collections.namedtuple / typing.NamedTuple
            return kind(*items)
        if hasattr(kind, "n_fields"):                # a structseq (torch.return_types, os.stat_result)
            return kind(items)
    return tuple(items)


def unpack_iterable(tx, v):
    """Items of an iterable value as a list of Values, or GraphBreak."""
    if isinstance(v, SeqValue):
        return list(v.items)
    if isinstance(v, IteratorValue):
        items = v.items[v.pos:]
        v.pos = len(v.items)
        return items
    if isinstance(v, DictValue):
        return [key_value(k) for k in v.items]
    if isinstance(v, SetValue):
        if any(hashes_by_identity(i) for i in v.items):
            raise GraphBreak("set order", "iterating a set of tensors (or objects hashed by identity): its "
                             "order follows their hashes, id(obj), which exist only at run time")
        return _in_set_order(v.items)
    if isinstance(v, Const):
        val = v.value
        if isinstance(val, (tuple, list, range, str, bytes, frozenset, set, torch.Size)):
            return [Const(x) for x in val]
        if isinstance(val, dict):
            return [Const(k) for k in val]
    if isinstance(v, TensorValue):
        if v.cls is not None and TENSOR_SUBCLASS_ITERATION:       # Tensor.__iter__ through __torch_function__
            items = TENSOR_SUBCLASS_ITERATION[0](tx, v)
            if items is not None:
                return items
        n = v.fake.shape[0] if v.fake.ndim else None
        if n is None:
            raise GraphBreak("iterate tensor", "iteration over a 0-d tensor")
        # Tensor.__iter__ is iter(self.unbind(0)): its items are one op's multi-output views, which autograd
        # forbids writing in place (and using after their base was written), unlike x[i]
        return list(tx.ctx.graph.call_function(torch.unbind, (v, Const(0)), {}).items)
    own = v.unpack(tx)
    if own is not GENERIC:
        return own
    if isinstance(v, ObjectValue) and USER_OBJECTS and USER_OBJECTS["is_user_object"](v):
        return unpack_iterable(tx, USER_OBJECTS["iterate"](tx, v))
    if isinstance(v, ObjectValue) and is_structseq_class(type(v.obj)) and \
            all(type(x) in CONST_TYPES for x in v.obj):       # major, minor, *_ = sys.version_info
        return [Const(x) for x in v.obj]
    if isinstance(v, ObjectValue) and type(v.obj) is tuple:
        return [wrap_unsourced(x) for x in v.obj]   # a real tuple (cls.__mro__): immutable, its items are fixed
    raise GraphBreak("iterate", f"cannot iterate over {v!r}")


def _in_set_order(items):
    """A set's members in the order a real set iterates them: by hash, as a set filled in the members'
    build order lays them out (the order the set is rebuilt in after the graph)."""
    if not all(isinstance(i, Const) for i in items):
        return list(items)
    try:
        real = set()
        for i in items:
            real.add(i.value)
        by_value = {}
        for i in items:
            by_value.setdefault(i.value, i)
        return [by_value[x] for x in real]
    except TypeError:
        return list(items)


def wrap_unsourced(obj):
    """A real object reached without a Source (e.g. attribute of a constant): only constants are safe."""
    if type(obj) in CONST_TYPES or type(obj) is torch.Size or type(obj) in SYM_TYPES:
        return Const(obj)       # a Sym number read off fake metadata: Const makes it a number (values/numbers/sym_concrete.py)
    if isinstance(obj, tuple) and all(type(x) in CONST_TYPES for x in obj):
        return Const(obj)
    if type(obj) is range:
        return Const(obj)
    if type(obj) is list and all(type(x) in CONST_TYPES for x in obj):      # e.g. "a.b".split(".")
        return SeqValue(list, [Const(x) for x in obj])
    if type(obj) is dict and all(type(x) in CONST_TYPES for x in (*obj, *obj.values())):
        return DictValue({k: Const(v) for k, v in obj.items()})
    return ObjectValue(obj)


# values/tensors/tensor_subclasses.py's iteration of a subclass instance (it imports this module)
TENSOR_SUBCLASS_ITERATION = []


def truth(tx, v):
    """Python truth of a value known at translation time, or GraphBreak."""
    if isinstance(v, Const):
        return bool(v.value)
    if isinstance(v, (SeqValue, DictValue, SetValue)):
        return bool(v.items)
    if isinstance(v, TensorValue):
        raise GraphBreak("data-dependent branch", "the branch depends on a tensor's value")
    own = v.truth(tx)
    if own is not GENERIC:
        return own
    if isinstance(v, ObjectValue):
        if USER_OBJECTS and USER_OBJECTS["is_user_object"](v):
            return USER_OBJECTS["truth"](tx, v)
        if type(v.obj).__bool__ is object.__bool__ if hasattr(type(v.obj), "__bool__") else False:
            return True
        if not hasattr(type(v.obj), "__bool__") and not hasattr(type(v.obj), "__len__"):
            return True
        if isinstance(v.obj, torch.nn.Module) and not hasattr(type(v.obj), "__len__"):
            return True
        if type(v.obj) in (frozenset, tuple):    # immutable: fixed by whatever fixed the object (as iteration)
            return bool(v.obj)
        raise GraphBreak("truth", f"truth value of {type(v.obj).__name__}")
    return True


def python_type_of(v):
    if isinstance(v, Const):
        return type(v.value)
    if isinstance(v, ObjectValue):
        return type(v.obj)
    return v.python_type()
