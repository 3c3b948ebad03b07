"""Lookasides for Python builtins and the operator/math modules.

Each entry is `fn(tx, args, kwargs) -> Value` standing in for a real callable. Constants fold by
calling the real function; tensors go to the graph; containers are handled symbolically. A call that
needs real data (int(tensor), bool(tensor)) raises GraphBreak.
"""
import math

import torch

from ...errors import GraphBreak
from ..dispatch import LOOKASIDES, lookaside
from ..source import TypeSource
from ..values.attrs import get_attribute, store_attr
from ..values.base import GENERIC, Const, DictValue, IteratorValue, ObjectValue, SeqValue, SetValue, TensorValue, \
    iterated_sequence
from ..values.iterators.composed_iterators import composed
from ..values.iterators.reversed_iterators import reversed_iterator
from ..values.iterators.reversed_dict_iterators import ReversedDictIteratorValue, reversible_dict
from ..values.containers.subscripts import DictViewValue
from ..values.dicts.identity_hashed_keys import key_value
from ..values.protocol import dict_key
from ..values.protocol import as_python, python_type_of, truth, unpack_iterable
from ..values.tensors import tensor_subclasses
from ..values.objects.user_dunders import is_user_object, user_length
from ..values.objects.class_calls import isinstance_with_metaclasses
from ..values.numbers.sym_values import symbolic_metadata

def all_const(values):
    return all(isinstance(v, Const) for v in values)


def _call_real(fn, args, kwargs):
    try:
        return Const(fn(*[as_python(a) for a in args], **{k: as_python(x) for k, x in kwargs.items()}))
    except GraphBreak:
        raise
    except Exception as e:
        raise GraphBreak("constant call raised", f"{getattr(fn, '__name__', fn)}(...) raised {type(e).__name__}: {e}")


@lookaside(len)
def _len(tx, args, kwargs):
    (v,) = args
    if isinstance(v, TensorValue):
        out = tensor_subclasses.operator_call(tx, len, (v,))     # a subclass's __torch_function__
        if out is not tensor_subclasses.NOT_DISPATCHED:
            return out
        if v.fake.ndim == 0:
            raise GraphBreak("len", "len() of a 0-d tensor")
        return symbolic_metadata(tx, v, "len") or Const(v.fake.shape[0])
    if isinstance(v, (SeqValue, DictValue, SetValue)):
        return Const(len(v.items))
    if isinstance(v, Const):
        return _call_real(len, args, kwargs)
    own = v.length(tx)
    if own is not GENERIC:
        return Const(own)
    if is_user_object(v):
        return Const(user_length(tx, v))
    if isinstance(v, ObjectValue) and type(v.obj) is tuple:     # a real tuple (cls.__mro__): immutable
        return Const(len(v.obj))
    if isinstance(v, ObjectValue) and v.source is not None and type(v.obj) in (dict, list, set, frozenset):
        tx.ctx.guards.add("LEN_MATCH", v.source, len(v.obj))     # a real container (a module's table): guarded
        return Const(len(v.obj))
    raise GraphBreak("len", f"len() of {v!r}")


@lookaside(isinstance)
def _isinstance(tx, args, kwargs):
    try:
        return _isinstance_answer(tx, args)
    except TypeError as e:          # isinstance(x, SomeTypedDict), a bad second argument: raises as eagerly
        raise GraphBreak("constant call raised", f"isinstance raised TypeError: {e}")


def _isinstance_answer(tx, args):
    v, cls = args
    classes = as_python(cls)
    t = python_type_of(v)
    by_metaclass = isinstance_with_metaclasses(tx, v, t, classes)    # a metaclass __instancecheck__
    if by_metaclass is not None:
        return Const(by_metaclass)
    if isinstance(v, TensorValue) and v.cls is not None:       # a tensor subclass instance
        return Const(issubclass(v.cls, classes))
    if isinstance(v, TensorValue):
        return Const(isinstance(v.fake, classes) or (isinstance(classes, tuple) and torch.Tensor in classes) or classes is torch.Tensor
                     or (t is torch.nn.Parameter and _contains(classes, torch.nn.Parameter)))
    if isinstance(v, ObjectValue):
        return Const(isinstance(v.obj, classes))
    if isinstance(v, Const):
        return Const(isinstance(v.value, classes))
    return Const(issubclass(t, classes))


def _contains(classes, c):
    return classes is c or (isinstance(classes, tuple) and c in classes)


@lookaside(issubclass)
def _issubclass(tx, args, kwargs):
    return _call_real(issubclass, args, kwargs)


@lookaside(callable)
def _callable(tx, args, kwargs):
    (v,) = args
    if isinstance(v, (ObjectValue, Const)):
        return Const(callable(as_python(v)))
    return Const(v.is_callable())


@lookaside(type)
def _type(tx, args, kwargs):
    if len(args) != 1:
        raise GraphBreak("type", "type() with 3 arguments")
    source = getattr(args[0], "source", None)
    if source is not None and not isinstance(args[0], (Const, TensorValue)):
        return tx.ctx.wrap(python_type_of(args[0]), TypeSource(source))   # class attributes read from it are guarded
    return ObjectValue(python_type_of(args[0]))


@lookaside(range)
def _range(tx, args, kwargs):
    return _call_real(range, args, kwargs)


def _make_converter(fn):
    def impl(tx, args, kwargs):
        if any(isinstance(a, TensorValue) for a in args):
            raise GraphBreak("data-dependent", f"{fn.__name__}() of a tensor needs its value")
        if fn is bool and len(args) == 1 and isinstance(args[0], (SeqValue, DictValue, SetValue)):
            return Const(bool(args[0].items))
        if fn is bool and len(args) == 1 and not kwargs and is_user_object(args[0]):
            return Const(truth(tx, args[0]))            # a Python __bool__/__len__, inlined
        if fn is bool and len(args) == 1 and not kwargs:
            own = args[0].truth(tx)                     # kinds with a truth of their own
            if own is not GENERIC:
                return Const(own)
        if fn is str and len(args) == 1 and isinstance(args[0], ObjectValue) and isinstance(args[0].obj, type):
            return Const(str(args[0].obj))       # a class: its name (the class is guarded by identity)
        if fn is str and len(args) == 1 and not isinstance(args[0], Const):
            if isinstance(args[0], (SeqValue, DictValue, SetValue)):   # containers of constants only
                return Const(str(as_python(args[0])))
            raise GraphBreak("str", f"str() of {args[0]!r}")
        return _call_real(fn, args, kwargs)
    return impl


for _f in (int, float, bool, str, complex):
    LOOKASIDES[_f] = _make_converter(_f)


def _make_seq(kind):
    def impl(tx, args, kwargs):
        if not args:
            return SeqValue(kind, [])
        return SeqValue(kind, unpack_iterable(tx, args[0]))
    return impl


LOOKASIDES[tuple] = _make_seq(tuple)
LOOKASIDES[list] = _make_seq(list)


@lookaside(dict)
def _dict(tx, args, kwargs):
    items = {}
    if args:
        src = args[0]
        if isinstance(src, DictValue):
            items.update(src.items)
        else:
            for pair in unpack_iterable(tx, src):
                k, v = unpack_iterable(tx, pair)
                items[dict_key(k)] = v
    items.update(kwargs)
    return DictValue(items)


@lookaside(set, frozenset)
def _set(tx, args, kwargs, kind=set):
    if not args:
        return SetValue([]) if kind is set else Const(frozenset())
    items = unpack_iterable(tx, args[0])
    if kind is frozenset:                # immutable and made of constants: a constant
        return Const(frozenset(as_python(i) for i in items))
    return SetValue(_dedupe(items))


LOOKASIDES[frozenset] = lambda tx, args, kwargs: _set(tx, args, kwargs, kind=frozenset)


def _dedupe(items):
    out, seen = [], set()
    for i in items:
        key = dict_key(i)
        if key not in seen:
            seen.add(key)
            out.append(key_value(key))
    return out


@lookaside(enumerate)
def _enumerate(tx, args, kwargs):
    items = unpack_iterable(tx, args[0])
    start = as_python(args[1]) if len(args) > 1 else as_python(kwargs.get("start", Const(0)))
    return composed(enumerate, [SeqValue(tuple, [Const(i + start), v]) for i, v in enumerate(items)], start)


@lookaside(zip)
def _zip(tx, args, kwargs):
    # Step the arguments in lockstep, as zip does: zip(it, it) pairs consecutive items of one iterator.
    strict = as_python(kwargs.get("strict", Const(False)))
    sources = [a if isinstance(a, IteratorValue) else IteratorValue(unpack_iterable(tx, a)) for a in args]
    rows = []
    while sources:
        row = []
        for it in sources:
            if it.pos >= len(it.items):
                break
            row.append(it.items[it.pos])
            it.pos += 1
        if len(row) < len(sources):
            if strict and (row or any(it.pos < len(it.items) for it in sources)):
                raise GraphBreak("value error", "ValueError: zip() arguments have different lengths")
            break
        rows.append(SeqValue(tuple, row))
    return composed(zip, rows)


@lookaside(reversed)
def _reversed(tx, args, kwargs):
    if isinstance(args[0], TensorValue):          # Tensor.__reversed__: the tensor flipped, not an iterator
        return args[0] if args[0].fake.ndim == 0 else tx.call_method(args[0], "flip", [Const(0)], {})
    view = "keys" if isinstance(args[0], DictValue) else args[0].kind if isinstance(args[0], DictViewValue) else None
    d = args[0] if view == "keys" else getattr(args[0], "dict_value", None)
    if isinstance(d, DictValue) and reversible_dict(d):    # a dict's, read live (values/iterators/reversed_dict_iterators.py)
        return ReversedDictIteratorValue(d, view, made_after_writes=tx.ctx.side_effects.mutated(d))
    return reversed_iterator(args[0], list(reversed(unpack_iterable(tx, args[0]))))


@lookaside(iter)
def _iter(tx, args, kwargs):
    if len(args) != 1:
        raise GraphBreak("iter", "iter() with a sentinel")
    if isinstance(args[0], IteratorValue):       # iter(it) is it
        return args[0]
    return IteratorValue(unpack_iterable(tx, args[0]), iterated_sequence(args[0]))


@lookaside(next)
def _next(tx, args, kwargs):
    it = args[0]
    if isinstance(it, IteratorValue):
        if it.pos < len(it.items):
            it.pos += 1
            return it.items[it.pos - 1]
        if len(args) > 1:
            return args[1]
        raise GraphBreak("StopIteration", "next() on an exhausted iterator raises StopIteration")
    raise GraphBreak("next", f"next() on {it!r}")


@lookaside(map)
def _map(tx, args, kwargs):
    fn, *its = args
    lists = [unpack_iterable(tx, a) for a in its]
    return composed(map, [tx.call(fn, list(t), {}) for t in zip(*lists)])


@lookaside(filter)
def _filter(tx, args, kwargs):
    fn, it = args
    out = []
    for v in unpack_iterable(tx, it):
        keep = v if isinstance(fn, Const) and fn.value is None else tx.call(fn, [v], {})
        if truth(tx, keep):
            out.append(v)
    return composed(filter, out)


def _key_values(tx, items, key):
    """The sort/min/max keys of items as real values: the items themselves, or key(item) called
    symbolically (so tensors can be ordered by their shapes, say), each of which must be a constant."""
    if key is None or (isinstance(key, Const) and key.value is None):
        return [as_python(i) for i in items]
    return [as_python(tx.call(key, [i], {})) for i in items]


@lookaside(sorted)
def _sorted(tx, args, kwargs):
    items = unpack_iterable(tx, args[0])
    keys = _key_values(tx, items, kwargs.get("key"))
    reverse = as_python(kwargs.get("reverse", Const(False)))
    try:
        order = sorted(range(len(items)), key=keys.__getitem__, reverse=reverse)
    except TypeError as e:
        raise GraphBreak("constant op raised", f"TypeError: {e}")
    return SeqValue(list, [items[i] for i in order])


def _make_extreme(fn):
    def impl(tx, args, kwargs):
        items = unpack_iterable(tx, args[0]) if len(args) == 1 else list(args)
        if not items:
            if "default" in kwargs:
                return kwargs["default"]
            raise GraphBreak("value error", f"ValueError: {fn.__name__}() arg is an empty sequence")
        if kwargs.get("key") is None and any(isinstance(i, TensorValue) for i in items):
            raise GraphBreak("data-dependent", f"{fn.__name__}() over tensors compares their values")
        keys = _key_values(tx, items, kwargs.get("key"))
        try:
            return items[fn(range(len(items)), key=keys.__getitem__)]     # the first extreme, as Python
        except TypeError as e:
            raise GraphBreak("constant op raised", f"TypeError: {e}")
    return impl


LOOKASIDES[min] = _make_extreme(min)
LOOKASIDES[max] = _make_extreme(max)


def _make_anyall(fn):
    def impl(tx, args, kwargs):
        items = unpack_iterable(tx, args[0])
        return Const(fn(truth(tx, i) for i in items))
    return impl


LOOKASIDES[any] = _make_anyall(any)
LOOKASIDES[all] = _make_anyall(all)


@lookaside(sum)
def _sum(tx, args, kwargs):
    from ..values.operator_rules import binary_op
    items = unpack_iterable(tx, args[0])
    acc = args[1] if len(args) > 1 else kwargs.get("start", Const(0))
    for i in items:
        acc = binary_op(tx, "+", acc, i)
    return acc


@lookaside(abs)
def _abs(tx, args, kwargs):
    (v,) = args
    if isinstance(v, TensorValue):
        out = tensor_subclasses.operator_call(tx, abs, (v,))     # a subclass's __torch_function__
        if out is not tensor_subclasses.NOT_DISPATCHED:
            return out
        return tx.ctx.graph.call_function(torch.abs, (v,), {})
    return _call_real(abs, args, kwargs)


# Pure functions of constants: called for real when no argument is a tensor.
PURE_FUNCTIONS = (round, divmod, pow, chr, ord, hash, repr, format, hex, oct, bin, math.sqrt, math.ceil, math.floor,
           math.log, math.exp, math.pow, math.prod, math.isclose, math.isfinite, math.isinf, math.isnan,
           math.gcd, math.sin, math.cos, math.tan, math.log2, math.log10, math.fabs, math.trunc, math.atan2,
           math.erf, math.tanh, math.fsum, math.factorial, math.comb, math.radians, math.degrees, math.hypot,
           math.perm, math.isqrt, math.lcm, math.copysign, math.fmod, math.modf, math.dist, math.frexp,
           math.ldexp, math.remainder, math.asin, math.acos, math.atan, math.sinh, math.cosh, math.log1p,
           math.expm1)


def _make_pure(fn):
    def impl(tx, args, kwargs):
        if any(isinstance(a, TensorValue) for a in list(args) + list(kwargs.values())):
            if fn is pow and isinstance(args[0], TensorValue):   # round(tensor) raises TypeError eagerly
                return tx.ctx.graph.call_function(torch.pow, tuple(args), {})
            raise GraphBreak("data-dependent", f"{getattr(fn, '__name__', fn)}() of a tensor needs its value")
        return _call_real(fn, args, kwargs)
    return impl


for _f in PURE_FUNCTIONS:
    LOOKASIDES[_f] = _make_pure(_f)
for _f in (str.maketrans, bytes.maketrans, bytearray.maketrans):    # static methods: no owner to tell them by
    LOOKASIDES[_f] = _make_pure(_f)


@lookaside(getattr)
def _getattr(tx, args, kwargs):
    from ..values.objects.attribute_model import is_attribute_error
    obj, name = args[0], as_python(args[1])
    if type(name) is not str:
        raise GraphBreak("bad call", "TypeError: attribute name must be string")
    try:
        return get_attribute(tx, obj, name)
    except GraphBreak as gb:
        if len(args) == 3 and is_attribute_error(gb):     # its absence is guarded where it was found
            return args[2]
        raise


@lookaside(hasattr)
def _hasattr(tx, args, kwargs):
    """hasattr(obj, name): the answer with a guard on it, or, where only reading can tell (a property,
    __getattr__), the read itself, an AttributeError meaning False."""
    from ..values.objects.attribute_model import is_attribute_error
    obj, name = args[0], as_python(args[1])
    if type(name) is not str:
        raise GraphBreak("bad call", "TypeError: attribute name must be string")
    answer = _presence(tx, obj, name)
    if answer is not None:
        return Const(answer)
    try:
        get_attribute(tx, obj, name)
    except GraphBreak as gb:
        if is_attribute_error(gb):
            return Const(False)
        raise
    return Const(True)


def _presence(tx, obj, name):
    from ..values.attrs import has_plain_lookup, is_plain_class
    from ..values.objects.new_objects import is_plain_instance
    from ..values.objects.attribute_model import has_python_lookup, instance_has, read_class_attr, real_has
    own = obj.has_attr(tx, name)              # kinds with attribute rules of their own (NewObject...)
    if own is not GENERIC:
        return own
    if isinstance(obj, ObjectValue):
        real = obj.obj
        if has_plain_lookup(real) and not isinstance(real, torch.nn.Module):
            return instance_has(tx, obj, name)
        if is_plain_instance(real) and has_python_lookup(tx, obj):
            return None                       # only running its __getattribute__ can tell
        if is_plain_class(real):
            try:
                read_class_attr(tx, obj, name)
                return True
            except GraphBreak as gb:
                from ..values.objects.attribute_model import is_attribute_error
                if is_attribute_error(gb):
                    return False
                raise
        return real_has(tx, obj, name)
    if isinstance(obj, Const):
        return hasattr(obj.value, name)
    if isinstance(obj, TensorValue):
        from ..values.tensors.tensor_instance_attrs import has_tensor_attr, is_instance_name
        if obj.cls is not None:               # a tensor subclass: its class may define the name; read to tell
            import inspect
            try:
                inspect.getattr_static(obj.cls, name)
                return None
            except AttributeError:
                pass
            if obj.source is not None or hasattr(obj.cls, "__getattr__") or \
                    tx.ctx.side_effects.pending_attr(obj.node, name) is not None:
                return None
            return False                      # made by the graph: no instance attributes, none on the class
        if is_instance_name(name):            # only the tensor's own __dict__ can hold it: guarded
            return has_tensor_attr(tx, obj, name)
        return True
    if isinstance(obj, DictValue):          # a dict-kind argument the frame stored attributes into
        from ..values.dicts.dict_kind_attrs import has_instance_attr
        own = has_instance_attr(tx, obj, name)
        if own is not None:
            return own
    return hasattr(python_type_of(obj), name)


@lookaside(delattr)
def _delattr(tx, args, kwargs):
    from ..values.attrs import delete_attribute
    if len(args) != 2 or kwargs:
        raise GraphBreak("bad call", "TypeError: delattr expected 2 arguments")
    delete_attribute(tx, args[0], as_python(args[1]))
    return Const(None)


@lookaside(vars)
def _vars(tx, args, kwargs):
    from ..values.objects.attribute_model import is_attribute_error
    if len(args) != 1 or kwargs:
        raise GraphBreak("call", "vars() without an argument")
    try:
        return get_attribute(tx, args[0], "__dict__")
    except GraphBreak as gb:
        if is_attribute_error(gb):
            raise GraphBreak("bad call", "TypeError: vars() argument must have __dict__ attribute")
        raise


@lookaside(setattr)
def _setattr(tx, args, kwargs):
    obj, name, value = args
    store_attr(tx, obj, as_python(name), value)
    return Const(None)


@lookaside(id)
def _id(tx, args, kwargs):
    (v,) = args
    if isinstance(v, ObjectValue) and v.source is not None and not v.edited and \
            tx.ctx.guards.has("ID_MATCH", v.source):
        return Const(id(v.obj))          # the entry only runs for this very object (a module, a class...)
    raise GraphBreak("id", "id() of an object the cache entry is not specialized to (its id differs per call)")


@lookaside(print)
def _print(tx, args, kwargs):
    raise GraphBreak("print", "print() writes to stdout; it runs as plain Python")
