"""Handlers: loads and stores of locals, globals, cells, attributes; stack shuffling; no-ops."""
from ...errors import GraphBreak
from ..values.attrs import delete_attribute, get_attribute, store_attr
from ..values.functions.cells import CellValue, EMPTY
from ..dispatch import handler
from ..source import GlobalSource
from ..values.base import Const, DictValue, MethodValue, NULL, ObjectValue, SeqValue, TensorValue
from ..values.objects import class_calls as classes, new_objects as objects  # noqa: F401  (install the super / object.* / tuple.__new__ lookasides)
from ..values.objects.new_objects import is_plain_instance


@handler("NOP", "RESUME", "PRECALL", "EXTENDED_ARG", "CACHE")
def nop(tx, inst):
    return None


@handler("POP_TOP")
def pop_top(tx, inst):
    tx.pop()


@handler("PUSH_NULL")
def push_null(tx, inst):
    tx.push(NULL)


@handler("COPY")
def copy(tx, inst):
    tx.push(tx.peek(inst.arg))


@handler("SWAP")
def swap(tx, inst):
    s = tx.stack
    s[-1], s[-inst.arg] = s[-inst.arg], s[-1]


@handler("LOAD_CONST")
def load_const(tx, inst):
    tx.push(Const(inst.argval))


@handler("LOAD_FAST")
def load_fast(tx, inst):
    tx.push(tx.load_local(inst.argval))


@handler("STORE_FAST")
def store_fast(tx, inst):
    tx.locals[inst.argval] = tx.pop()


@handler("DELETE_FAST")
def delete_fast(tx, inst):
    tx.load_local(inst.argval)
    del tx.locals[inst.argval]
    tx.deleted.add(inst.argval)


@handler("LOAD_GLOBAL")
def load_global(tx, inst):
    if inst.push_null:
        tx.push(NULL)
    tx.push(tx.load_global(inst.argval))



@handler("STORE_GLOBAL")
def store_global(tx, inst):
    value = tx.pop()
    if tx.globals_source is not None:
        tx.ctx.side_effects.store_module_global(tx.f_globals, inst.argval, value)
        return
    tx.ctx.side_effects.store_global(inst.argval, GlobalSource(inst.argval), value)


@handler("DELETE_GLOBAL")
def delete_global(tx, inst):
    raise GraphBreak("delete global", "del of a global is not supported")


# ---- cells ----------------------------------------------------------------------------------------

@handler("MAKE_CELL")
def make_cell(tx, inst):
    name = inst.argval
    if tx.parent is None and name in tx.frame_args and name not in tx.locals:
        tx.load_local(name)
    tx.cells[name] = CellValue(tx.locals.pop(name, EMPTY))


@handler("COPY_FREE_VARS")
def copy_free_vars(tx, inst):
    return None


def _cell(tx, name):
    cell = tx.cells.get(name)
    if cell is not None:
        return cell
    try:
        i = tx.code.co_freevars.index(name)
    except ValueError:
        raise GraphBreak("cell", f"unknown cell {name!r}")
    return tx.closure[i]


@handler("LOAD_CLOSURE")
def load_closure(tx, inst):
    tx.push(_cell(tx, inst.argval))


@handler("LOAD_DEREF", "LOAD_CLASSDEREF")
def load_deref(tx, inst):
    tx.push(_cell(tx, inst.argval).get(tx, inst.argval))


@handler("STORE_DEREF")
def store_deref(tx, inst):
    _cell(tx, inst.argval).set(tx, tx.pop())


@handler("DELETE_DEREF")
def delete_deref(tx, inst):
    raise GraphBreak("delete cell", "del of a closure variable is not supported")


# ---- attributes -----------------------------------------------------------------------------------

@handler("LOAD_ATTR")
def load_attr_op(tx, inst):
    obj = tx.pop()
    tx.push(get_attribute(tx, obj, inst.argval))


@handler("LOAD_METHOD")
def load_method(tx, inst):
    obj = tx.pop()
    name = inst.argval
    v = get_attribute(tx, obj, name)
    tx.push(NULL)
    tx.push(v)


@handler("STORE_ATTR")
def store_attr_op(tx, inst):
    obj = tx.pop()
    value = tx.pop()
    store_attr(tx, obj, inst.argval, value)


@handler("DELETE_ATTR")
def delete_attr(tx, inst):
    delete_attribute(tx, tx.pop(), inst.argval)
