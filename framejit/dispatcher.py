"""The fast path: a generated function with the compiled function's own signature.

    def add_relu(x, y):                          # same parameters, defaults, *args/**kwargs as fn
        for __fj_e in __fj_entries:              # the cache entries of fn's code object
            __fj_r = __fj_e(x, y)                # generated guards + graph call (codegen.py)
            if __fj_r is not __fj_MISS:
                return __fj_r
        return __fj_on_miss((x, y), {})          # slow path: convert (api._on_miss)

Arguments are bound once, by CPython, when the dispatcher is called; entries receive them as plain
positional/keyword arguments, so nothing re-binds them and no *args tuple or **kwargs dict is built
on a hit. For a function with free variables the closure tuple goes first (entries guard on the cells
of the function actually called, since several functions can share one code object).
"""
from .codegen import MISS, signature_source


def _call_parts(code):
    names = code.co_varnames
    nargs, nkwonly = code.co_argcount, code.co_kwonlyargcount
    positional = list(names[:nargs])
    kwonly = list(names[nargs:nargs + nkwonly])
    i = nargs + nkwonly
    star = names[i] if code.co_flags & 0x04 else None
    if star:
        i += 1
    dstar = names[i] if code.co_flags & 0x08 else None
    call = positional + ([f"*{star}"] if star else []) + [f"{k}={k}" for k in kwonly] + \
        ([f"**{dstar}"] if dstar else [])
    miss_args = "(" + "".join(f"{p}, " for p in positional) + (f"*{star}, " if star else "") + ")"
    miss_kwargs = "{" + ", ".join(f"{k!r}: {k}" for k in kwonly) + (f", **{dstar}" if dstar and kwonly else
                                                                         f"**{dstar}" if dstar else "") + "}"
    return ", ".join(call), miss_args, miss_kwargs


def build_dispatcher(fn, entries, on_miss):
    code = fn.__code__
    with_closure = bool(code.co_freevars)
    call, miss_args, miss_kwargs = _call_parts(code)
    head = "__fj_cl, " if with_closure else ""
    src = (f"def __fj_make(__fj_entries, __fj_on_miss, __fj_MISS, __fj_cl):\n"
           f"    def {_safe_name(code.co_name)}({signature_source(code, False)}):\n"
           f"        for __fj_e in __fj_entries:\n"
           f"            __fj_r = __fj_e({head}{call})\n"
           f"            if __fj_r is not __fj_MISS:\n"
           f"                return __fj_r\n"
           f"        return __fj_on_miss({miss_args}, {miss_kwargs})\n"
           f"    return {_safe_name(code.co_name)}\n")
    namespace = {}
    exec(compile(src, f"<framejit dispatcher {code.co_qualname}>", "exec"), namespace)
    dispatcher = namespace["__fj_make"](entries, on_miss, MISS, fn.__closure__)
    dispatcher.__defaults__ = fn.__defaults__
    dispatcher.__kwdefaults__ = fn.__kwdefaults__
    return dispatcher


def _safe_name(name):
    return name if name.isidentifier() and not name.startswith("__fj") else "framejit_wrapper"
