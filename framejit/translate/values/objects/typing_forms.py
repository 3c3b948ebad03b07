"""Typing forms in the frame: `List[int]`, `Optional[torch.Tensor]`, `Dict[str, int]`, `list[int]`.

Why this exists: annotations of nested functions are evaluated when the function is made, so
`def inner(a: List[int]) -> Optional[Tensor]` inside a forward subscripts typing objects on every call;
as an opaque `__getitem__` that is a graph break. Subscripting a typing form with constants, classes
and other typing forms is a pure function of them (typing caches the answer), so it runs for real at
translation and the alias is a constant of the frame.
"""
import types
import typing

from ....errors import GraphBreak
from ..base import ObjectValue
from ..protocol import as_python, wrap_unsourced

_GENERIC_TYPES = (types.GenericAlias, types.UnionType)


def is_typing_form(obj):
    """A typing special form or generic alias (or a builtin class's `list[int]` alias)."""
    return type(obj).__module__ == "typing" or isinstance(obj, _GENERIC_TYPES)


def subscript(obj, index):
    """obj[index] for a typing form, run for real on a constant index (else GraphBreak)."""
    key = as_python(index)
    try:
        out = obj[key]
    except Exception as e:
        raise GraphBreak("constant op raised", f"{obj!r}[...] raised {type(e).__name__}: {e}")
    value = wrap_unsourced(out)
    return value if not isinstance(value, ObjectValue) else ObjectValue(out)


def class_subscript(cls, index):
    """`list[int]`, `dict[str, int]`, `tuple[int, ...]`: a builtin class's __class_getitem__."""
    if not hasattr(cls, "__class_getitem__") or type(cls).__module__ != "builtins" or cls.__module__ != "builtins":
        return None
    return subscript(cls, index)


__all__ = ["is_typing_form", "subscript", "class_subscript", "typing"]
