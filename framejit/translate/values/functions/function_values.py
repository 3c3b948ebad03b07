"""Functions made inside the translated code: FunctionValue (def / lambda / MAKE_FUNCTION) and
PartialValue (functools.partial of anything callable in the frame).

Calling a FunctionValue inlines its code with its captured cells (up to config.inline_depth nested
calls: deeper recursion is a graph break, which the converter moves to the root call). When one
escapes the frame (returned, stored into an input, live at a graph break) codegen rebuilds a real
function from its code, globals, defaults and closure: cells that already exist (closures of the
frame or of functions it inlined) are reused by reference, cells created in the frame become new
`types.CellType` objects shared by every function that captured them, filled with their final
contents after the functions exist (so a nested function may refer to itself).
"""
import functools
import inspect
import types

from ....errors import GraphBreak
from .cells import EMPTY
from ...source import AttrSource, ClosureSource
from ..base import Const, DictValue, SeqValue, Value
from ..protocol import as_python


STORABLE_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__", "__module__", "__wrapped__",
                              "__annotations__"})


class FunctionValue(Value):
    __slots__ = ("code", "f_globals", "defaults", "kwdefaults", "closure", "globals_source", "attrs")

    def __init__(self, code, f_globals, defaults=(), kwdefaults=None, closure=(), globals_source=None):
        super().__init__(None)
        self.code = code
        self.f_globals = f_globals
        self.defaults = defaults
        self.kwdefaults = kwdefaults or {}
        self.closure = closure
        self.globals_source = globals_source
        self.attrs = {}

    def python_type(self):
        return types.FunctionType

    def call(self, tx, args, kwargs):
        if tx.depth >= tx.ctx.config.inline_depth:
            raise GraphBreak("recursion", f"inlining deeper than {tx.ctx.config.inline_depth} calls")
        bound = bind_arguments(self.code, self.code.co_qualname, args, kwargs, (list(self.defaults), self.kwdefaults))
        child = tx.child(self.code, self.f_globals, locals_=bound, closure=self.closure,
                         globals_source=self.globals_source, fn_name=self.code.co_qualname)
        return child.run()

    def load_attr(self, tx, name):
        if name in self.attrs:
            return self.attrs[name]
        if name == "__name__":
            return Const(self.code.co_name)
        if name == "__qualname__":
            return Const(self.code.co_qualname)
        if name == "__module__":
            return Const(self.f_globals.get("__name__"))
        if name == "__code__":
            return Const(self.code)
        if name == "__defaults__":
            return SeqValue(tuple, self.defaults) if self.defaults else Const(None)
        if name == "__kwdefaults__":
            return DictValue(self.kwdefaults) if self.kwdefaults else Const(None)
        if name == "__doc__":          # (3.11 puts the docstring, or None, first in a function's consts)
            first = self.code.co_consts[0] if self.code.co_consts else None
            return Const(first if isinstance(first, str) else None)
        if name == "__annotations__":  # (annotations are not kept by MAKE_FUNCTION's translation)
            value = self.attrs[name] = DictValue({})
            return value
        raise GraphBreak("attribute", f"attribute {name!r} of a function made in the frame")

    def store_attr(self, tx, name, value):
        if name.startswith("__") and name.endswith("__") and name not in STORABLE_DUNDERS:
            raise GraphBreak("store attr", f"setting {name} of a function made in the frame")
        self.attrs[name] = value

    def has_attr(self, tx, name):
        return name in self.attrs or name in ("__name__", "__qualname__", "__module__", "__code__",
                                               "__defaults__", "__kwdefaults__", "__closure__", "__globals__")

    def __repr__(self):
        return f"FunctionValue({self.code.co_qualname})"

    # ---- codegen ----------------------------------------------------------------------------------
    def rebuild_parts(self):
        out = list(self.defaults) + list(self.kwdefaults.values()) + list(self.attrs.values())
        for cell in self.closure:
            if cell.real is None and cell.contents is not EMPTY and cell.contents is not self:
                out.append(cell.contents)
        return out

    def rebuild(self, rb):
        new_cells = [c for c in self.closure if c.real is None and rb.known(c) is None]
        cells = [cell_expr(rb, c) for c in self.closure]
        defaults = "(" + "".join(f"{rb.expr(d)}, " for d in self.defaults) + ")" if self.defaults else "None"
        kwdefaults = ("{" + ", ".join(f"{k!r}: {rb.expr(v)}" for k, v in self.kwdefaults.items()) + "}"
                      if self.kwdefaults else "None")
        closure = "(" + "".join(f"{c}, " for c in cells) + ")" if cells else "None"
        name = rb.declare(self, f"{rb.ns.bind(make_function)}({rb.ns.bind(self.code)}, {self._globals_expr(rb)}, "
                                f"{defaults}, {kwdefaults}, {closure})")
        for attr, value in self.attrs.items():
            rb.prelude.append(f"{name}.{attr} = {rb.expr(value)}" if attr.isidentifier()
                              else f"setattr({name}, {attr!r}, {rb.expr(value)})")
        for cell in new_cells:             # contents last: they may refer to this very function
            if cell.contents is not EMPTY:
                rb.prelude.append(f"{rb.known(cell)}.cell_contents = {rb.expr(cell.contents)}")
        return name

    def _globals_expr(self, rb):
        if self.globals_source is None:
            return "__fj_g"
        if isinstance(self.globals_source, tuple):       # ("unsourced", the globals dict)
            return rb.ns.bind(self.globals_source[1])
        return self.globals_source.expr()


def bind_arguments(code, qualname, args, kwargs, defaults):
    """Map call arguments to the callee's parameter names, as CPython does (TypeErrors break)."""
    pos_defaults, kw_defaults = defaults
    nargs, nposonly, nkwonly = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    names = code.co_varnames
    has_varargs = bool(code.co_flags & inspect.CO_VARARGS)
    has_varkw = bool(code.co_flags & inspect.CO_VARKEYWORDS)
    bound = {}
    for i, v in enumerate(args[:nargs]):
        bound[names[i]] = v
    extra = list(args[nargs:])
    if extra and not has_varargs:
        raise GraphBreak("bad call", f"TypeError: {qualname}() takes {nargs} positional arguments but {len(args)} were given")
    varkw = {}
    kwonly_names = names[nargs:nargs + nkwonly]
    for k, v in kwargs.items():
        if k in names[nposonly:nargs] or k in kwonly_names:
            if k in bound:
                raise GraphBreak("bad call", f"TypeError: {qualname}() got multiple values for argument {k!r}")
            bound[k] = v
        elif has_varkw:
            varkw[k] = v
        else:
            raise GraphBreak("bad call", f"TypeError: {qualname}() got an unexpected keyword argument {k!r}")
    first_default = nargs - len(pos_defaults)
    for i in range(nargs):
        n = names[i]
        if n not in bound:
            if i >= first_default:
                bound[n] = pos_defaults[i - first_default]
            else:
                raise GraphBreak("bad call", f"TypeError: {qualname}() missing required argument {n!r}")
    for n in kwonly_names:
        if n not in bound:
            if n in kw_defaults:
                bound[n] = kw_defaults[n]
            else:
                raise GraphBreak("bad call", f"TypeError: {qualname}() missing keyword-only argument {n!r}")
    i = nargs + nkwonly
    if has_varargs:
        bound[names[i]] = SeqValue(tuple, extra)
        i += 1
    if has_varkw:
        bound[names[i]] = DictValue(varkw)
    return bound


def make_function(code, f_globals, defaults, kwdefaults, closure):
    """Runtime helper of rebuilt functions."""
    fn = types.FunctionType(code, f_globals, code.co_name, defaults, closure)
    if kwdefaults:
        fn.__kwdefaults__ = kwdefaults
    return fn


def cell_expr(rb, cell):
    """The real cell object behind a CellValue, as an expression of the generated code."""
    known = rb.known(cell)
    if known is not None:
        return known
    if cell.real is None:
        return rb.declare(cell, f"{rb.ns.bind(types.CellType)}()")
    src = cell.contents_source
    if isinstance(src, ClosureSource):
        return f"__fj_cl[{src.index}]"
    if isinstance(src, AttrSource) and src.attr == "cell_contents":
        return src.base.expr()
    return rb.ns.bind(cell.real)


class PartialValue(Value):
    """functools.partial(func, *args, **keywords) made in the frame."""
    __slots__ = ("func", "args", "keywords")

    def __init__(self, func, args, keywords):
        super().__init__(None)
        self.func = func
        self.args = list(args)
        self.keywords = dict(keywords)

    def python_type(self):
        return functools.partial

    def __repr__(self):
        return f"PartialValue({self.func!r})"

    def call(self, tx, args, kwargs):
        return tx.call(self.func, [*self.args, *args], {**self.keywords, **kwargs})

    def load_attr(self, tx, name):
        if name == "func":
            return self.func
        if name == "args":
            return SeqValue(tuple, self.args)
        if name == "keywords":
            return DictValue(self.keywords)
        raise GraphBreak("attribute", f"attribute {name!r} of a functools.partial made in the frame")

    def rebuild_parts(self):
        return [self.func, *self.args, *self.keywords.values()]

    def rebuild(self, rb):
        parts = [rb.expr(self.func)] + [rb.expr(a) for a in self.args]
        if self.keywords:
            parts.append("**{" + ", ".join(f"{k!r}: {rb.expr(v)}" for k, v in self.keywords.items()) + "}")
        return f"{rb.ns.bind(functools.partial)}({', '.join(parts)})"


def partial_lookaside(tx, args, kwargs):
    if not args:
        raise GraphBreak("bad call", "TypeError: type 'partial' takes at least one argument")
    func, rest = args[0], list(args[1:])
    if isinstance(func, PartialValue):             # partial(partial(f, a), b) is partial(f, a, b)
        return PartialValue(func.func, func.args + rest, {**func.keywords, **kwargs})
    return PartialValue(func, rest, kwargs)


def update_wrapper_lookaside(tx, args, kwargs):
    """functools.wraps / update_wrapper on a function made in the frame: copy the assigned attributes
    and the wrapped function's __dict__, set __wrapped__ (the rebuilt function gets them all)."""
    from ..attrs import PropertyCall, load_attr
    bound = dict(zip(("wrapper", "wrapped", "assigned", "updated"), args))
    bound.update(kwargs)
    wrapper, wrapped = bound["wrapper"], bound["wrapped"]
    assigned = as_python(bound.get("assigned", Const(functools.WRAPPER_ASSIGNMENTS)))
    updated = as_python(bound.get("updated", Const(functools.WRAPPER_UPDATES)))
    if not isinstance(wrapper, FunctionValue) or tuple(updated) not in ((), ("__dict__",)):
        raise GraphBreak("call", "functools.update_wrapper of something other than a function made in the frame")
    copied = {}
    for name in assigned:
        try:
            value = load_attr(tx, wrapped, name)
        except GraphBreak as gb:
            if gb.kind != "attribute error":
                raise
            continue
        if isinstance(value, PropertyCall):
            raise GraphBreak("call", f"functools.update_wrapper: {name} of the wrapped object is a property")
        copied[name] = value
    if updated:
        copied.update(_function_dict(tx, wrapped))
    wrapper.attrs.update(copied)
    wrapper.attrs["__wrapped__"] = wrapped
    return wrapper


def _function_dict(tx, fn):
    """The __dict__ entries of a function value, as Values."""
    if isinstance(fn, FunctionValue):
        return {k: v for k, v in fn.attrs.items() if not (k.startswith("__") and k.endswith("__"))}
    obj = getattr(fn, "obj", None)
    if isinstance(obj, types.FunctionType) and not obj.__dict__:
        return {}
    raise GraphBreak("call", "functools.update_wrapper: __dict__ of the wrapped object")
