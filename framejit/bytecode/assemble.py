"""List of Instruction -> code object.

The translator edits instruction lists freely (new instructions, moved jump targets,
prologues that jump into the middle); this module recomputes everything derived:
co_consts / co_names / co_varnames indices, localsplus slots for cells and free
variables, EXTENDED_ARG prefixes (to a fixpoint, since they move offsets), inline
CACHE entries, relative jump args and their FORWARD/BACKWARD opcode variants, the
location table, the exception table and co_stacksize.  Version details come from
py311.
"""

from itertools import accumulate
import math
import types

from . import py311
from .instruction import Instruction

_OPMAP = py311.OPMAP
_ARG_KIND = py311.ARG_KIND
_CACHE_COUNT = py311.CACHE_COUNT
_HAVE_ARGUMENT = py311.HAVE_ARGUMENT
_EXTENDED_ARG = py311.EXTENDED_ARG
_FORWARD_VARIANT = py311.FORWARD_VARIANT
_BACKWARD_VARIANT = py311.BACKWARD_VARIANT
_NO_FALLTHROUGH = frozenset(_OPMAP[name] for name in py311.NO_FALLTHROUGH_OPNAMES)
_KIND_NONE = py311.KIND_NONE
_KIND_INT = py311.KIND_INT
_KIND_CONST = py311.KIND_CONST
_KIND_NAME = py311.KIND_NAME
_KIND_GLOBAL = py311.KIND_GLOBAL
_KIND_LOCAL = py311.KIND_LOCAL
_KIND_DEREF = py311.KIND_DEREF
_KIND_COMPARE = py311.KIND_COMPARE
_KIND_JUMP = py311.KIND_JUMP
_KIND_BINARY_OP = py311.KIND_BINARY_OP
_KIND_FREE_COUNT = py311.KIND_FREE_COUNT
_extended_arg_count = py311.extended_arg_count
_jump_arg = py311.jump_arg
_stack_effect = py311.stack_effect
_NO_ARG_STACK_EFFECT = py311.NO_ARG_STACK_EFFECT
_handler_entry_depth = py311.handler_entry_depth

REPLACEABLE = frozenset({
    "co_name", "co_qualname", "co_filename", "co_firstlineno", "co_argcount",
    "co_posonlyargcount", "co_kwonlyargcount", "co_flags", "co_varnames",
    "co_cellvars", "co_freevars",
    # Seeds: the table starts as given (default: the template's) and grows as needed.
    "co_consts", "co_names",
})

_PLAIN_CONST_TYPES = frozenset({str, int, bool, bytes, type(None), type(Ellipsis)})


class AssemblyError(ValueError):
    """The instruction list cannot be turned into valid 3.11 bytecode."""


def const_key(value):
    """Key under which two constants may share one co_consts slot: equal value and
    equal type, recursively, with the sign of zero kept (so 1, 1.0, True, 0.0, -0.0
    stay distinct); anything else (code objects, tensors, unhashables) by identity."""
    t = type(value)
    if t in _PLAIN_CONST_TYPES:
        return (t, value)
    if t is float:
        return (t, value, math.copysign(1.0, value))
    if t is complex:
        return (t, value, math.copysign(1.0, value.real), math.copysign(1.0, value.imag))
    if t is tuple:
        return (t, tuple([const_key(v) for v in value]))
    if t is frozenset:
        return (t, frozenset([const_key(v) for v in value]))
    return (t, id(value))


def assemble(instrs: list[Instruction], template: types.CodeType, **replace) -> types.CodeType:
    """Build a code object from `instrs`, taking everything not computed here from
    `template` unless given in `replace` (see REPLACEABLE).

    co_consts and co_names start from the template's (or the `replace` seed) so that
    indices, and a function's docstring in co_consts[0], are kept; new values are
    appended.  co_varnames is the template's / given tuple (arguments first) plus any
    local the instructions use that it lacks.  Line information comes only from
    `positions` (None -> "no location"); `arg`, `offset`, `starts_line` and a jump's
    `argval` are ignored.  Does not modify `instrs`.  Raises AssemblyError for lists
    that cannot be valid bytecode (unknown names for derefs, jump targets outside
    the list, inconsistent or negative stack depths)."""
    unknown = replace.keys() - REPLACEABLE
    if unknown:
        raise TypeError(f"assemble() cannot set {sorted(unknown)}")
    get = replace.get
    varnames = list(get("co_varnames", template.co_varnames))
    cellvars = tuple(get("co_cellvars", template.co_cellvars))
    freevars = tuple(get("co_freevars", template.co_freevars))
    consts = list(get("co_consts", template.co_consts))
    names = list(get("co_names", template.co_names))

    const_index: dict = {}
    for i, value in enumerate(consts):
        const_index.setdefault(const_key(value), i)
    name_index: dict[str, int] = {}
    for i, name in enumerate(names):
        name_index.setdefault(name, i)
    local_index: dict[str, int] = {}
    for i, name in enumerate(varnames):
        local_index.setdefault(name, i)

    n = len(instrs)
    position_of = {id(ins): i for i, ins in enumerate(instrs)}
    if len(position_of) != n:
        raise AssemblyError("the same Instruction object appears more than once")
    ops = [0] * n
    args = [0] * n
    jump_targets: list[tuple[int, int]] = []
    derefs: list[int] = []

    for i, ins in enumerate(instrs):
        op = _OPMAP.get(ins.opname)
        if op is None or op == _EXTENDED_ARG:
            raise AssemblyError(f"#{i}: unknown or unsupported opcode {ins.opname!r}")
        kind = _ARG_KIND[op]
        argval = ins.argval
        if kind == _KIND_NONE:
            arg = 0
        elif kind == _KIND_CONST:
            key = const_key(argval)
            arg = const_index.get(key)
            if arg is None:
                if not consts and type(argval) is str:
                    # A function's co_consts[0] is its docstring (or None): never let
                    # a string the code merely loads become one.
                    const_index[const_key(None)] = 0
                    consts.append(None)
                arg = const_index[key] = len(consts)
                consts.append(argval)
        elif kind == _KIND_NAME or kind == _KIND_GLOBAL:
            if type(argval) is not str:
                raise AssemblyError(f"#{i}: {ins.opname} needs a name, got {argval!r}")
            arg = name_index.get(argval)
            if arg is None:
                arg = name_index[argval] = len(names)
                names.append(argval)
            if kind == _KIND_GLOBAL:
                arg = py311.join_global_arg(arg, ins.push_null)
        elif kind == _KIND_LOCAL:
            arg = local_index.get(argval)
            if arg is None:
                if type(argval) is not str:
                    raise AssemblyError(f"#{i}: {ins.opname} needs a local name, got {argval!r}")
                arg = local_index[argval] = len(varnames)
                varnames.append(argval)
        elif kind == _KIND_JUMP:
            target = ins.target
            t = position_of.get(id(target)) if target is not None else None
            if t is None:
                raise AssemblyError(f"#{i}: {ins.opname} target is "
                                    f"{'missing' if target is None else 'not in the list'}")
            op = _FORWARD_VARIANT[op] if t > i else _BACKWARD_VARIANT[op]
            if op < 0:
                raise AssemblyError(f"#{i}: {ins.opname} cannot jump "
                                    f"{'forward' if t > i else 'backward'} in 3.11")
            jump_targets.append((i, t))
            arg = 0
        elif kind == _KIND_DEREF:
            derefs.append(i)
            arg = 0
        elif kind == _KIND_COMPARE:
            arg = py311.COMPARE_INDEX.get(argval) if type(argval) is str else argval
            if type(arg) is not int:
                raise AssemblyError(f"#{i}: unknown comparison {argval!r}")
        elif kind == _KIND_FREE_COUNT:
            arg = len(freevars)
        else:
            arg = ins.arg if argval is None else argval
            if kind == _KIND_BINARY_OP and type(arg) is str:
                arg = py311.BINARY_OP_INDEX.get(arg, arg)
            if not isinstance(arg, int) or arg < 0:
                raise AssemblyError(f"#{i}: {ins.opname} needs an int arg >= 0, got {arg!r}")
        ops[i] = op
        args[i] = arg

    if derefs:
        deref_index = py311.deref_index_map(varnames, cellvars, freevars)
        for i in derefs:
            name = instrs[i].argval
            slot = deref_index.get(name)
            if slot is None:
                raise AssemblyError(f"#{i}: {instrs[i].opname} {name!r} is neither in "
                                    f"co_cellvars {cellvars} nor co_freevars {freevars}")
            args[i] = slot

    # Layout: EXTENDED_ARG counts grow until every jump arg fits (never shrink, so
    # this terminates at the smallest consistent layout).
    caches = [_CACHE_COUNT[op] for op in ops]
    extn = [_extended_arg_count(a) for a in args]
    while True:
        starts = list(accumulate([1 + e + c for e, c in zip(extn, caches)], initial=0))
        grew = False
        for i, t in jump_targets:
            arg = _jump_arg(starts[i] + extn[i], starts[t])
            args[i] = arg
            e = _extended_arg_count(arg)
            if e > extn[i]:
                extn[i] = e
                grew = True
        if not grew:
            break

    code = bytearray(2 * starts[n])
    for i in range(n):
        pos = 2 * starts[i]
        arg = args[i]
        e = extn[i]
        while e:
            code[pos] = _EXTENDED_ARG
            code[pos + 1] = (arg >> (8 * e)) & 0xFF
            pos += 2
            e -= 1
        code[pos] = ops[i]
        code[pos + 1] = arg & 0xFF

    firstlineno = get("co_firstlineno", template.co_firstlineno)
    linetable = py311.encode_location_table(
        [(ins.positions, starts[i + 1] - starts[i]) for i, ins in enumerate(instrs)],
        firstlineno)
    exceptiontable = _exception_table(instrs, starts, position_of)
    stacksize = _max_stack_depth(instrs, ops, args, position_of)

    return template.replace(
        co_argcount=get("co_argcount", template.co_argcount),
        co_posonlyargcount=get("co_posonlyargcount", template.co_posonlyargcount),
        co_kwonlyargcount=get("co_kwonlyargcount", template.co_kwonlyargcount),
        co_nlocals=len(varnames),
        co_stacksize=stacksize,
        co_flags=get("co_flags", template.co_flags),
        co_firstlineno=firstlineno,
        co_code=bytes(code),
        co_consts=tuple(consts),
        co_names=tuple(names),
        co_varnames=tuple(varnames),
        co_freevars=freevars,
        co_cellvars=cellvars,
        co_filename=get("co_filename", template.co_filename),
        co_name=get("co_name", template.co_name),
        co_qualname=get("co_qualname", template.co_qualname),
        co_linetable=linetable,
        co_exceptiontable=exceptiontable,
    )


def _exception_table(instrs, starts, position_of) -> bytes:
    """One entry per run of consecutive instructions with the same handler."""
    entries = []
    run_start = 0
    run_key = None
    prev_exn = None
    for i, ins in enumerate(instrs):
        exn = ins.exn
        if exn is prev_exn:
            continue
        prev_exn = exn
        if exn is None:
            key = None
        else:
            t = position_of.get(id(exn.target))
            if t is None:
                raise AssemblyError(f"#{i}: exception handler target not in the list")
            key = (t, exn.depth, bool(exn.lasti))
        if key != run_key:
            if run_key is not None:
                entries.append((run_start, starts[i] - run_start, starts[run_key[0]],
                                run_key[1], run_key[2]))
            run_key = key
            run_start = starts[i]
    if run_key is not None:
        end = starts[len(instrs)]
        entries.append((run_start, end - run_start, starts[run_key[0]], run_key[1], run_key[2]))
    return py311.encode_exception_table(entries)


def _max_stack_depth(instrs, ops, args, position_of) -> int:
    """Walk every path from the entry and from each exception handler, checking that
    each instruction is always reached at the same depth."""
    n = len(instrs)
    depth_at = [-1] * n
    pending = [(0, 0)] if n else []
    seen_handlers = set()
    max_depth = 0
    while pending:
        i, depth = pending.pop()
        while i < n:
            known = depth_at[i]
            if known >= 0:
                if known != depth:
                    raise AssemblyError(
                        f"#{i} {instrs[i]!r} reached with stack depth {depth} and {known}")
                break
            depth_at[i] = depth
            ins = instrs[i]
            exn = ins.exn
            if exn is not None:
                key = (id(exn.target), exn.depth, exn.lasti)
                if key not in seen_handlers:
                    seen_handlers.add(key)
                    if exn.depth > depth:
                        raise AssemblyError(f"#{i} {ins!r}: handler unwinds to depth "
                                            f"{exn.depth} above current depth {depth}")
                    entry = _handler_entry_depth(exn.depth, exn.lasti)
                    if entry > max_depth:
                        max_depth = entry
                    pending.append((position_of[id(exn.target)], entry))
            op = ops[i]
            if op < _HAVE_ARGUMENT:
                effect = _NO_ARG_STACK_EFFECT[op]
                if effect is None:
                    raise AssemblyError(f"#{i}: {ins.opname} is not an executable opcode")
                after = depth + effect
            else:
                arg = args[i]
                after = depth + _stack_effect(op, arg, jump=False)
                if _ARG_KIND[op] == _KIND_JUMP:
                    jumped = depth + _stack_effect(op, arg, jump=True)
                    if jumped > max_depth:
                        max_depth = jumped
                    pending.append((position_of[id(ins.target)], jumped))
            if after < 0:
                raise AssemblyError(f"#{i} {ins!r} pops from an empty stack")
            if after > max_depth:
                max_depth = after
            if op in _NO_FALLTHROUGH:
                break
            depth = after
            i += 1
    return max_depth
