"""Handlers: calls (CALL, KW_NAMES, CALL_FUNCTION_EX) and function creation (MAKE_FUNCTION)."""
from ...errors import GraphBreak
from ..lookasides.builtins_table import as_python, unpack_iterable
from ..calls import call_value
from ..dispatch import handler
from ..values.functions.function_values import FunctionValue
from ..values.base import Const, DictValue, NULL, SeqValue


@handler("KW_NAMES")
def kw_names(tx, inst):
    tx.kw_names = inst.argval


@handler("CALL")
def call(tx, inst):
    argc = inst.arg
    names = tx.kw_names or ()
    items = tx.stack[-(argc + 2):]
    if items[0] is NULL:
        fn, args = items[1], items[2:]
    else:
        fn, args = items[0], items[1:]
    kwargs = {}
    if names:
        kwargs = dict(zip(names, args[len(args) - len(names):]))
        args = args[:len(args) - len(names)]
    result = call_value(tx, fn, list(args), kwargs)
    del tx.stack[-(argc + 2):]
    tx.kw_names = None
    tx.push(result)


@handler("CALL_FUNCTION_EX")
def call_function_ex(tx, inst):
    kwargs_v = tx.pop() if inst.arg & 1 else None
    args_v = tx.pop()
    fn = tx.pop()
    tx.pop()                     # the NULL pushed before the callable
    args = unpack_iterable(tx, args_v)
    kwargs = {}
    if kwargs_v is not None:
        if not isinstance(kwargs_v, DictValue):
            raise GraphBreak("call", "**kwargs of a non-dict")
        kwargs = dict(kwargs_v.items)
    tx.push(call_value(tx, fn, args, kwargs))


@handler("MAKE_FUNCTION")
def make_function(tx, inst):
    flags = inst.arg
    code = tx.pop().value
    closure = annotations = kwdefaults = defaults = None
    if flags & 0x08:
        closure = tuple(tx.pop().items)
        tx.closures_made.add(code.co_name)
    if flags & 0x04:
        annotations = tx.pop()
    if flags & 0x02:
        kwdefaults = tx.pop()
    if flags & 0x01:
        defaults = tx.pop()
    tx.push(FunctionValue(code, tx.f_globals, defaults=tuple(defaults.items) if isinstance(defaults, SeqValue)
                          else (tuple(Const(d) for d in defaults.value) if defaults is not None else ()),
                          kwdefaults=dict(kwdefaults.items) if kwdefaults is not None else {},
                          closure=closure or (), globals_source=tx.globals_source))
