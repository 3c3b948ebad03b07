"""FunctionValue: a function object created inside the translated code (def / lambda / MAKE_FUNCTION).

Calling it inlines its code with its captured cells; functools.partial of it works through the
generic call path. When it escapes the frame (returned, stored) it cannot be rebuilt yet: that is a
graph break with a clear reason.
"""
from ..errors import GraphBreak
from .values import Value


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
        return type(lambda: None)

    def call(self, tx, args, kwargs):
        from .calls import bind_arguments
        from .translator import Translator
        if tx.depth >= tx.ctx.config.inline_depth:
            raise GraphBreak("recursion", f"inlining deeper than {tx.ctx.config.inline_depth} calls")
        bound = bind_arguments(self.code, self.code.co_qualname, args, kwargs, (list(self.defaults), self.kwdefaults))
        child = Translator(tx.ctx, self.code, tx.ctx.decode(self.code), self.f_globals, locals_=bound,
                           closure=self.closure, globals_source=self.globals_source, parent=tx,
                           fn_name=self.code.co_qualname)
        return child.run()

    def load_attr(self, tx, name):
        if name in self.attrs:
            return self.attrs[name]
        from .values import Const
        if name == "__name__":
            return Const(self.code.co_name)
        if name == "__qualname__":
            return Const(self.code.co_qualname)
        raise GraphBreak("attribute", f"attribute {name!r} of a function made in the frame")

    def store_attr(self, tx, name, value):
        self.attrs[name] = value

    def __repr__(self):
        return f"FunctionValue({self.code.co_qualname})"
