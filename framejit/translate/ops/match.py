"""Handlers: structural pattern matching (`match` statements) on values known at translation time.

Why this exists: `match` over shapes, tuples, dicts, dataclass-like configs or literals picks a case
from Python values, exactly like an if/elif chain, so it belongs in the graph as an unrolled choice.
CPython 3.11 compiles patterns to MATCH_SEQUENCE / MATCH_MAPPING (type tests), GET_LEN, MATCH_KEYS and
MATCH_CLASS plus ordinary comparisons, unpacking and jumps; this module handles the five match
opcodes with Python's own rules. A pattern whose test needs a tensor's value (`case 0:` against a
tensor) breaks in the comparison, as any other data-dependent branch does.
"""
from ...errors import GraphBreak
from ..lookasides.builtins_table import LOOKASIDES, python_type_of
from ..dispatch import handler
from ..values.base import Const, DictValue, ObjectValue, SeqValue

_SEQUENCE_FLAG = 1 << 5        # Py_TPFLAGS_SEQUENCE
_MAPPING_FLAG = 1 << 6         # Py_TPFLAGS_MAPPING
_MATCH_SELF_FLAG = 1 << 22     # _Py_TPFLAGS_MATCH_SELF: int(x), str(x)... bind the subject itself


def _subject_type(v):
    try:
        return python_type_of(v)
    except (NotImplementedError, AttributeError):
        raise GraphBreak("match", f"pattern matching against {v!r}")


@handler("MATCH_SEQUENCE")
def match_sequence(tx, inst):
    t = _subject_type(tx.peek())
    tx.push(Const(bool(t.__flags__ & _SEQUENCE_FLAG)))


@handler("MATCH_MAPPING")
def match_mapping(tx, inst):
    t = _subject_type(tx.peek())
    tx.push(Const(bool(t.__flags__ & _MAPPING_FLAG)))


@handler("GET_LEN")
def get_len(tx, inst):
    tx.push(LOOKASIDES[len](tx, [tx.peek()], {}))


@handler("MATCH_KEYS")
def match_keys(tx, inst):
    keys, subject = tx.peek(), tx.peek(2)
    if not isinstance(keys, Const) or not isinstance(keys.value, tuple):
        raise GraphBreak("match", "mapping pattern keys that are not constants")
    if len(set(keys.value)) != len(keys.value):
        raise GraphBreak("raise", f"ValueError: mapping pattern checks duplicate key ({keys.value!r})")
    if isinstance(subject, DictValue):
        items = subject.items
    elif isinstance(subject, Const) and isinstance(subject.value, dict):
        items = {k: Const(v) for k, v in subject.value.items()}
    else:
        raise GraphBreak("match", f"mapping pattern against {subject!r}")
    if subject.python_type() is not dict and not isinstance(subject, Const):
        raise GraphBreak("match", "mapping pattern against a dict subclass (its .get may be overridden)")
    if all(k in items for k in keys.value):
        tx.push(SeqValue(tuple, [items[k] for k in keys.value]))
    else:
        tx.push(Const(None))


@handler("MATCH_CLASS")
def match_class(tx, inst):
    from .load_store import get_attribute
    names, cls_value, subject = tx.peek(), tx.peek(2), tx.peek(3)
    if isinstance(cls_value, ObjectValue):
        cls = cls_value.obj
    elif isinstance(cls_value, Const):
        cls = cls_value.value
    else:
        raise GraphBreak("match", f"class pattern with {cls_value!r}")
    if not isinstance(cls, type):
        raise GraphBreak("raise", "TypeError: called match pattern must be a class")
    nargs = inst.arg
    kw_names = names.value
    if not LOOKASIDES[isinstance](tx, [subject, cls_value], {}).value:
        result = Const(None)
    else:
        attrs = []
        if nargs:
            match_args = getattr(cls, "__match_args__", None)
            if match_args is None:
                if not cls.__flags__ & _MATCH_SELF_FLAG or nargs > 1:
                    raise GraphBreak("raise", f"TypeError: {cls.__name__}() accepts "
                                     f"{1 if cls.__flags__ & _MATCH_SELF_FLAG else 0} positional sub-pattern(s) "
                                     f"({nargs} given)")
                attr_names = []
                attrs.append(subject)
            else:
                if type(match_args) is not tuple:
                    raise GraphBreak("raise", f"TypeError: {cls.__name__}.__match_args__ must be a tuple")
                if nargs > len(match_args):
                    raise GraphBreak("raise", f"TypeError: {cls.__name__}() accepts {len(match_args)} positional "
                                     f"sub-patterns ({nargs} given)")
                attr_names = list(match_args[:nargs])
        else:
            attr_names = []
        attr_names += list(kw_names)
        if len(set(attr_names)) != len(attr_names):
            raise GraphBreak("raise", f"TypeError: {cls.__name__}() got multiple sub-patterns for one attribute")
        result = None
        for name in attr_names:
            if not _has_attribute(tx, subject, name):
                result = Const(None)
                break
            attrs.append(get_attribute(tx, subject, name))
        if result is None:
            result = SeqValue(tuple, attrs)
    del tx.stack[-3:]
    tx.push(result)


def _has_attribute(tx, subject, name):
    found = LOOKASIDES[hasattr](tx, [subject, Const(name)], {})
    if not isinstance(found, Const):
        raise GraphBreak("match", f"cannot tell whether {subject!r} has attribute {name!r}")
    return bool(found.value)
