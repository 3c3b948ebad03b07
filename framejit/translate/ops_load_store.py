"""Handlers: loads and stores of locals, globals, cells, attributes; stack shuffling; no-ops."""
from ..errors import GraphBreak
from .attrs import PropertyCall, load_attr
from .cells import CellValue, EMPTY
from .dispatch import handler
from .builtin_methods import DictKeySource
from .source import GlobalSource, ItemSource, NamespaceSource
from .values import Const, DictValue, MethodValue, NULL, ObjectValue, SeqValue, TensorValue
from . import classes, objects  # noqa: F401  (install the super / object.* / tuple.__new__ lookasides)
from .identity import is_plain_instance
from .state_calls import store_break, store_runs_code


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
    tx.push(load_global_value(tx, inst.argval))


def load_global_value(tx, name):
    ctx = tx.ctx
    if tx.globals_source is None:
        pending = ctx.side_effects.globals.get(name)
        if pending is not None:
            return pending
        if name in tx.f_globals:
            obj = tx.f_globals[name]
            if ctx.recorder is not None:
                ctx.recorder.record_global(name, obj)
            return ctx.wrap(obj, GlobalSource(name))
        obj = _builtin_or_name_error(tx, name, NamespaceSource())
        if ctx.recorder is not None:
            ctx.recorder.record_builtin(name, obj)
        return ctx.builtin_value(name, obj)
    if name in tx.f_globals:
        obj = tx.f_globals[name]
        if isinstance(tx.globals_source, tuple):      # callee globals without a reachable source
            return ctx.wrap_foreign_global(obj)
        # torch's own modules are trusted like TRUSTED_MODULES: their globals are not guarded
        trusted = (tx.f_globals.get("__name__") or "").startswith("torch.")
        return ctx.wrap(obj, ItemSource(tx.globals_source, name), guard=not trusted)
    source = None if isinstance(tx.globals_source, tuple) else tx.globals_source
    obj = _builtin_or_name_error(tx, name, source)
    return ctx.builtin_value(name, obj)


def _builtin_or_name_error(tx, name, globals_dict):
    """A name missing from the globals: the builtin (not guarded: see builtin_value), or a NameError
    whose cause -- the name in neither dict -- is guarded, so a global defined later is noticed."""
    try:
        return tx.lookup_builtin(name)
    except GraphBreak:
        if globals_dict is not None:
            guards = tx.ctx.guards
            guards.add("CONST_MATCH", DictKeySource(globals_dict, name, lookup=False), False)
            if isinstance(globals_dict, NamespaceSource):
                guards.add("CONST_MATCH", DictKeySource(NamespaceSource(builtins=True), name, lookup=False), False)
        raise


@handler("STORE_GLOBAL")
def store_global(tx, inst):
    value = tx.pop()
    if tx.globals_source is not None:
        raise GraphBreak("store global", "writing a global of another module")
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


def get_attribute(tx, obj, name):
    v = load_attr(tx, obj, name)
    if isinstance(v, PropertyCall):
        from .calls import call_property
        return call_property(tx, v)
    return v


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


def store_attr(tx, obj, name, value):
    if isinstance(obj, ObjectValue) and is_plain_instance(obj.obj):
        objects.store_input_attr(tx, obj, name, value)
        return
    if isinstance(obj, ObjectValue):
        if obj.source is None and not tx.ctx.is_local_object(obj):
            raise GraphBreak("store attr", f"setting .{name} on an object framejit cannot reach")
        if store_runs_code(obj.obj, name):          # torch.backends.cudnn.deterministic = True
            raise store_break(obj.obj, name)
        tx.ctx.store_object_attr(tx, obj, name, value)
        return
    if hasattr(obj, "store_attr"):
        obj.store_attr(tx, name, value)
        return
    if isinstance(obj, TensorValue):
        raise GraphBreak("store attr", f"setting tensor.{name} is not supported")
    raise GraphBreak("store attr", f"setting .{name} on {obj!r} is not supported")


@handler("DELETE_ATTR")
def delete_attr(tx, inst):
    delete_attribute(tx, tx.pop(), inst.argval)


def delete_attribute(tx, obj, name):
    """`del obj.name` (object_attrs.py: the same model as reads and stores)."""
    from .attrs import is_plain_class
    from .object_attrs import delete_class_attr, delete_instance_attr
    if isinstance(obj, ObjectValue) and is_plain_instance(obj.obj):
        delete_instance_attr(tx, obj, name)
    elif isinstance(obj, ObjectValue) and is_plain_class(obj.obj):
        delete_class_attr(tx, obj, name)
    elif hasattr(obj, "delete_attr"):
        obj.delete_attr(tx, name)
    else:
        raise GraphBreak("delete attr", f"del of attribute {name!r} of {obj!r} is not supported")
