"""Handlers: IMPORT_NAME / IMPORT_FROM of modules that are already imported.

Why this exists: library code imports inside functions (`import torch.fx` in a helper, `from ..utils
import x` in a forward). When the module is already in sys.modules such a statement has no effect
beyond a lookup, so it translates to the module object itself. A module that is not imported yet
would run its top-level code: that is a graph break (it runs as plain Python, once). The module is
pushed with a fixed Source, so `from mod import FLAG` and `mod.FLAG` are guarded reads of the module's
attribute: a module-level value changed between calls is a cache miss, not a stale constant.
"""
import sys

from ...errors import GraphBreak
from ..lookasides.builtins_table import as_python
from ..dispatch import handler
from ..source import AttrSource, fixed_source
from ..values.base import ObjectValue


def _absolute_name(tx, name, level):
    if level == 0:
        return name
    package = tx.f_globals.get("__package__") or tx.f_globals.get("__name__", "")
    if tx.f_globals.get("__path__") is None and not tx.f_globals.get("__package__"):
        package = package.rpartition(".")[0]
    parts = package.split(".")
    if level - 1 > len(parts):
        raise GraphBreak("import", "relative import beyond the top-level package")
    base = ".".join(parts[:len(parts) - (level - 1)])
    return f"{base}.{name}" if name else base


@handler("IMPORT_NAME")
def import_name(tx, inst):
    fromlist = as_python(tx.stack[-1])
    level = as_python(tx.stack[-2])
    full = _absolute_name(tx, inst.argval, level)
    module = sys.modules.get(full)
    if module is None:
        raise GraphBreak("import", f"`import {full}`: the module is not imported yet (importing runs its code)")
    if fromlist:
        for item in fromlist:
            if item != "*" and not hasattr(module, item) and f"{full}.{item}" not in sys.modules:
                raise GraphBreak("import", f"`from {full} import {item}` would import a submodule")
        result = module
    else:
        result = sys.modules.get(full.partition(".")[0]) if level == 0 else module
        if result is None:
            raise GraphBreak("import", f"`import {full}`: its top-level package is not imported")
    tx.popn(2)
    # the module object itself, as a fixed Source: what the frame reads off it is guarded like a global's
    # attribute (a module-level flag another call changed must not stay folded in)
    tx.push(tx.ctx.wrap(result, fixed_source(result, result.__name__)))


@handler("IMPORT_FROM")
def import_from(tx, inst):
    module = tx.peek()
    if not isinstance(module, ObjectValue):
        raise GraphBreak("import", f"`from ... import {inst.argval}` of {module!r}")
    name = inst.argval
    obj = module.obj
    if hasattr(obj, name):
        value = getattr(obj, name)
    else:
        value = sys.modules.get(f"{getattr(obj, '__name__', '')}.{name}")
        if value is None:
            raise GraphBreak("import", f"cannot import name {name!r} (ImportError eagerly)")
    if module.source is not None and hasattr(obj, name):
        tx.push(tx.ctx.wrap(value, AttrSource(module.source, name)))    # guarded, as `module.name` would be
        return
    from ..context import wrap_unsourced
    tx.push(wrap_unsourced(value))
