"""len(), subscripts and `in` on an nn.Module whose own class defines __len__, __getitem__ or
__contains__ in Python (a model that indexes its layers as `self[i]`, a ModuleList subclass that
remaps indices): the user's method is inlined, as Python would call it.

Why this exists: ModuleValue answers these from torch's containers' own rules (ModuleList, ModuleDict,
Sequential, ParameterList/Dict). A module class of the user's that defines the method -- on a plain
nn.Module or overriding a container's -- broke (`len() of a CustomGetItemModuleList`) or, for a
container subclass, would have been answered by the container's rule instead of the override. Only a
method written outside torch.nn is taken; finding one is decided on the class (guarded, as every class
lookup the translator makes), torch's own containers keep their unguarded fast answers.
"""
import types

from ....errors import GraphBreak
from ..base import Const
from ..objects.new_objects import lookup, lookup_type


def user_module_method(tx, module_value, name):
    """The Python function `name` of the module's class when the user's code (not torch.nn) defines it, else None."""
    cls = type(module_value.obj)
    raw = lookup_type(cls, name)
    if not isinstance(raw, types.FunctionType) or (raw.__module__ or "").startswith("torch.nn."):
        return None
    return lookup(tx, cls, name)          # the same answer, now guarded


def user_module_length(tx, module_value, fn):
    out = tx.inline(fn, None, [module_value], {})
    if not isinstance(out, Const) or type(out.value) is not int or out.value < 0:
        raise GraphBreak("len", f"{type(module_value.obj).__name__}.__len__ returned {out!r}")
    return out.value
