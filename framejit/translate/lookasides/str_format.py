"""`template.format(...)` whose arguments are not all constants: each replacement field is resolved the way
str.format resolves it, on Values (`'{0.x},{p[k]}'.format(obj, p=d)`: attribute reads and subscripts of
the argument, through the translator), and only the final value of each field must be a constant.

Why this exists: the constant path calls the real str.format on the arguments' real values, which an
object the frame made (a NewObject) or a dict holding tensors does not have; yet the text only needs
`obj.x`, a constant. Fields are taken left to right as CPython does (`_string.formatter_parser`): the
field's value, then its format spec (which may hold fields of its own), then the conversion and
format(). A field whose final value is not a constant (a tensor, an object's default repr) or a
template str.format would reject is a GraphBreak, and the call runs as Python.
"""
import _string

from ...errors import GraphBreak
from ..values.base import Const
from ..values.containers.subscripts import getitem
from ..values.protocol import as_python


def format_values(tx, template, args, kwargs):
    """The text of `template.format(*args, **kwargs)` (Values), as a Const."""
    state = {"auto": 0, "numbered": False}
    return Const(_render(tx, template, args, kwargs, state, depth=2))


def _render(tx, template, args, kwargs, state, depth):
    if depth < 0:
        raise GraphBreak("constant op raised", "str.format raised ValueError: Max string recursion exceeded")
    out = []
    try:
        parsed = list(_string.formatter_parser(template))
    except ValueError as e:
        raise GraphBreak("constant op raised", f"str.format raised ValueError: {e}")
    for literal, field, spec, conversion in parsed:
        out.append(literal)
        if field is None:
            continue
        value = _field_value(tx, field, args, kwargs, state)
        spec = _render(tx, spec, args, kwargs, state, depth - 1) if spec else ""
        real = as_python(value)
        if conversion == "r":
            real = repr(real)
        elif conversion == "s":
            real = str(real)
        elif conversion == "a":
            real = ascii(real)
        elif conversion is not None:
            raise GraphBreak("constant op raised", f"str.format raised ValueError: Unknown conversion "
                                                   f"specifier {conversion}")
        try:
            out.append(format(real, spec))
        except Exception as e:
            raise GraphBreak("constant op raised", f"format raised {type(e).__name__}: {e}")
    return "".join(out)


def _field_value(tx, field, args, kwargs, state):
    from ..values.attrs import load_attr
    try:
        first, rest = _string.formatter_field_name_split(field)
    except ValueError as e:
        raise GraphBreak("constant op raised", f"str.format raised ValueError: {e}")
    if first == "":
        if state["numbered"]:
            raise GraphBreak("constant op raised", "str.format raised ValueError: cannot switch from manual "
                                                   "field specification to automatic field numbering")
        first, state["auto"] = state["auto"], state["auto"] + 1
        state["automatic"] = True
    elif isinstance(first, int):
        if state.get("automatic"):
            raise GraphBreak("constant op raised", "str.format raised ValueError: cannot switch from automatic "
                                                   "field numbering to manual field specification")
        state["numbered"] = True
    if isinstance(first, int):
        if first >= len(args):
            raise GraphBreak("constant op raised", f"str.format raised IndexError: Replacement index {first} "
                                                   "out of range for positional args tuple")
        value = args[first]
    else:
        if first not in kwargs:
            raise GraphBreak("constant op raised", f"str.format raised KeyError: {first!r}")
        value = kwargs[first]
    for is_attr, key in rest:
        value = load_attr(tx, value, key) if is_attr else getitem(tx, value, Const(key))
    return value
