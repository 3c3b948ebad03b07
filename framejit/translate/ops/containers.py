"""Handlers: building and unpacking tuples/lists/dicts/sets/slices/strings, subscripts."""
from ...errors import GraphBreak
from ..lookasides.builtins_table import as_python, unpack_iterable
from ..values.containers.subscripts import delitem, getitem, setitem
from ..dispatch import handler
from ..values.base import Const, DictValue, SeqValue, SetValue, TensorValue
from ..values.dicts.identity_hashed_keys import key_value
from ..values.protocol import dict_key
from ..values.numbers.sym_values import SliceValue, SymValue


@handler("BUILD_TUPLE")
def build_tuple(tx, inst):
    items = tx.popn(inst.arg)
    if all(isinstance(i, Const) for i in items):
        tx.push(Const(tuple(i.value for i in items)))
    else:
        tx.push(SeqValue(tuple, items))


@handler("BUILD_LIST")
def build_list(tx, inst):
    tx.push(SeqValue(list, tx.popn(inst.arg)))


def _set_items(existing, added):
    """The items of a set holding `existing`, then the Values `added` in order: equal keys (1, 1.0 and
    True) are one item and the first one stays, as in a real set (a dict keys them the same way);
    tensors are members by identity (values/dicts/identity_hashed_keys.py)."""
    kept = {}
    for item in list(existing) + list(added):
        kept.setdefault(dict_key(item), item)
    return [key_value(k) for k in kept.keys()]


@handler("BUILD_SET")
def build_set(tx, inst):
    items = tx.popn(inst.arg)
    tx.push(SetValue(_set_items([], items)))


@handler("BUILD_MAP")
def build_map(tx, inst):
    items = tx.popn(2 * inst.arg)
    tx.push(DictValue({dict_key(items[i]): items[i + 1] for i in range(0, len(items), 2)}))


@handler("BUILD_CONST_KEY_MAP")
def build_const_key_map(tx, inst):
    keys = tx.pop().value
    values = tx.popn(inst.arg)
    tx.push(DictValue(dict(zip(keys, values))))


@handler("BUILD_SLICE")
def build_slice(tx, inst):
    parts = tx.popn(inst.arg)
    if any(isinstance(p, TensorValue) for p in parts):
        raise GraphBreak("data-dependent", "slice bounds taken from a tensor")
    if any(isinstance(p, SymValue) for p in parts):      # symbolic bounds stay symbolic for tensor indexing
        tx.push(SliceValue(parts))
        return
    tx.push(Const(slice(*[as_python(p) for p in parts])))


@handler("BUILD_STRING")
def build_string(tx, inst):
    parts = tx.popn(inst.arg)
    tx.push(Const("".join(as_python(p) for p in parts)))


@handler("FORMAT_VALUE")
def format_value(tx, inst):
    spec = tx.pop() if inst.arg & 0x04 else Const("")
    value = tx.pop()
    v = as_python(value)        # constants and containers of constants; anything else is a GraphBreak
    conv = inst.arg & 0x03
    v = str(v) if conv == 1 else repr(v) if conv == 2 else ascii(v) if conv == 3 else v
    tx.push(Const(format(v, spec.value)))


def _under_construction(tx, depth):
    """The list, set or dict a LIST_APPEND/SET_ADD/MAP_ADD/*_EXTEND/*_UPDATE/DICT_MERGE adds to.

    The frame made it (BUILD_LIST/SET/MAP) and nothing else holds it. In a resume function that starts
    in the middle of building one (a graph break at `g()` in `f(x, **{"b": g()})` or `[*a, g()]`) it
    arrives as an argument, with a Source: adding to that Value would change only the symbolic copy,
    and the object rebuilt from the Source would miss the new items. So it is replaced on the stack by
    a copy the frame owns, rebuilt from its items like one built here."""
    v = tx.peek(depth)
    if v.source is None:
        return v
    if isinstance(v, SeqValue) and v.kind is list:
        own = SeqValue(list, v.items)
    elif isinstance(v, DictValue) and v.kind is dict:
        own = DictValue(v.items)
    elif isinstance(v, SetValue):
        own = SetValue(v.items)
    else:
        raise GraphBreak("container build", f"adding items to {v!r}, which the frame did not build")
    tx.stack[-depth] = own
    return own


@handler("LIST_APPEND")
def list_append(tx, inst):
    v = tx.pop()
    _under_construction(tx, inst.arg).items.append(v)


@handler("SET_ADD")
def set_add(tx, inst):
    v = tx.pop()
    s = _under_construction(tx, inst.arg)
    s.items[:] = _set_items(s.items, [v])


@handler("MAP_ADD")
def map_add(tx, inst):
    value = tx.pop()
    key = tx.pop()
    _under_construction(tx, inst.arg).items[dict_key(key)] = value


@handler("LIST_EXTEND")
def list_extend(tx, inst):
    v = tx.pop()
    _under_construction(tx, inst.arg).items.extend(unpack_iterable(tx, v))


@handler("SET_UPDATE")
def set_update(tx, inst):
    v = tx.pop()
    s = _under_construction(tx, inst.arg)
    s.items[:] = _set_items(s.items, unpack_iterable(tx, v))


@handler("DICT_UPDATE", "DICT_MERGE")
def dict_update(tx, inst):
    v = tx.pop()
    d = _under_construction(tx, inst.arg)
    if not isinstance(v, DictValue):
        if isinstance(v, Const) and isinstance(v.value, dict):
            v = DictValue({k: Const(x) for k, x in v.value.items()})
        else:
            raise GraphBreak("dict update", f"** of {v!r}")
    if inst.opname == "DICT_MERGE":
        dup = set(d.items) & set(v.items)
        if dup:
            raise GraphBreak("bad call", f"TypeError: got multiple values for keyword argument {dup.pop()!r}")
    d.items.update(v.items)


@handler("LIST_TO_TUPLE")
def list_to_tuple(tx, inst):
    v = tx.pop()
    tx.push(SeqValue(tuple, v.items))


@handler("BINARY_SUBSCR")
def binary_subscr(tx, inst):
    index = tx.pop()
    obj = tx.pop()
    tx.push(getitem(tx, obj, index))


@handler("STORE_SUBSCR")
def store_subscr(tx, inst):
    index = tx.pop()
    obj = tx.pop()
    value = tx.pop()
    setitem(tx, obj, index, value)


@handler("DELETE_SUBSCR")
def delete_subscr(tx, inst):
    index = tx.pop()
    obj = tx.pop()
    delitem(tx, obj, index)


@handler("UNPACK_SEQUENCE")
def unpack_sequence(tx, inst):
    v = tx.pop()
    items = unpack_iterable(tx, v)
    if len(items) != inst.arg:
        raise GraphBreak("value error", f"ValueError: expected {inst.arg} values to unpack, got {len(items)}")
    for item in reversed(items):
        tx.push(item)


@handler("UNPACK_EX")
def unpack_ex(tx, inst):
    before, after = inst.arg & 0xFF, inst.arg >> 8
    items = unpack_iterable(tx, tx.pop())
    if len(items) < before + after:
        raise GraphBreak("value error", "ValueError: not enough values to unpack")
    middle = items[before:len(items) - after]
    out = items[:before] + [SeqValue(list, middle)] + items[len(items) - after:]
    for item in reversed(out):
        tx.push(item)
