"""Everything framejit knows that is specific to CPython 3.11 bytecode.

decode.py and assemble.py are written against the names in this module only, so a
later CPython version means a sibling of this file, not edits scattered through the
translator.  What lives here:

* opcode tables and how each opcode's raw ``arg`` maps to a meaningful ``argval``
  (the ``ARG_KIND`` table), including LOAD_GLOBAL's "push NULL" low bit;
* jumps: which opcodes jump, which are conditional/unconditional, relative jump
  encoding in code units, and the FORWARD/BACKWARD opcode variants;
* inline CACHE counts and EXTENDED_ARG sizing;
* the localsplus layout (cells that are also locals share the local's slot);
* the location table (co_linetable) and exception table (co_exceptiontable) codecs;
* the stack depth at which an exception handler is entered.
"""

import dis
import opcode as _opcode
import sys

if sys.version_info[:2] != (3, 11):  # pragma: no cover - guarded by pyproject
    raise ImportError("framejit.bytecode.py311 requires CPython 3.11")

OPMAP: dict[str, int] = dict(_opcode.opmap)
OPNAMES: list[str] = list(_opcode.opname)
HAVE_ARGUMENT: int = _opcode.HAVE_ARGUMENT
EXTENDED_ARG: int = _opcode.EXTENDED_ARG
CACHE: int = OPMAP["CACHE"]

# Number of inline CACHE code units that follow each opcode in co_code.
CACHE_COUNT: tuple[int, ...] = tuple(_opcode._inline_cache_entries)

COMPARE_OPS: tuple[str, ...] = tuple(_opcode.cmp_op)
COMPARE_INDEX: dict[str, int] = {name: i for i, name in enumerate(COMPARE_OPS)}
BINARY_OP_SYMBOLS: tuple[str, ...] = tuple(sym for _, sym in _opcode._nb_ops)
BINARY_OP_INDEX: dict[str, int] = {sym: i for i, sym in enumerate(BINARY_OP_SYMBOLS)}
for _i, (_name, _sym) in enumerate(_opcode._nb_ops):
    BINARY_OP_INDEX[_name] = _i

# --- how an opcode's arg is interpreted ------------------------------------------
KIND_NONE = 0       # opcode takes no argument (arg byte is 0)
KIND_INT = 1        # argval is the integer arg itself (CALL n, BUILD_TUPLE n, ...)
KIND_CONST = 2      # index into co_consts (LOAD_CONST, KW_NAMES)
KIND_NAME = 3       # index into co_names
KIND_GLOBAL = 4     # LOAD_GLOBAL: (index into co_names) << 1 | push_null
KIND_LOCAL = 5      # index into co_varnames
KIND_DEREF = 6      # index into localsplus (cells and free variables)
KIND_COMPARE = 7    # index into COMPARE_OPS
KIND_JUMP = 8       # relative jump in code units
KIND_BINARY_OP = 9  # index into BINARY_OP_SYMBOLS (argval kept as the int)
KIND_FREE_COUNT = 10  # COPY_FREE_VARS: always len(co_freevars)

_kinds = [KIND_NONE if op < HAVE_ARGUMENT else KIND_INT for op in range(256)]
for _op in _opcode.hasconst:
    _kinds[_op] = KIND_CONST
for _op in _opcode.hasname:
    _kinds[_op] = KIND_NAME
for _op in _opcode.haslocal:
    _kinds[_op] = KIND_LOCAL
for _op in _opcode.hasfree:
    _kinds[_op] = KIND_DEREF
for _op in _opcode.hascompare:
    _kinds[_op] = KIND_COMPARE
for _op in _opcode.hasjrel:
    _kinds[_op] = KIND_JUMP
_kinds[OPMAP["LOAD_GLOBAL"]] = KIND_GLOBAL
_kinds[OPMAP["BINARY_OP"]] = KIND_BINARY_OP
_kinds[OPMAP["COPY_FREE_VARS"]] = KIND_FREE_COUNT
ARG_KIND: tuple[int, ...] = tuple(_kinds)
assert not _opcode.hasjabs, "3.11 has only relative jumps"

# --- jumps -----------------------------------------------------------------------
JUMP_OPNAMES: frozenset[str] = frozenset(OPNAMES[op] for op in _opcode.hasjrel)
BACKWARD_JUMP_OPNAMES: frozenset[str] = frozenset(
    name for name in JUMP_OPNAMES if "JUMP_BACKWARD" in name)
UNCONDITIONAL_JUMP_OPNAMES: frozenset[str] = frozenset(
    {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"})
CONDITIONAL_JUMP_OPNAMES: frozenset[str] = JUMP_OPNAMES - UNCONDITIONAL_JUMP_OPNAMES
RETURN_OPNAMES: frozenset[str] = frozenset({"RETURN_VALUE"})
# Instructions after which control never falls through to the next instruction.
NO_FALLTHROUGH_OPNAMES: frozenset[str] = (
    UNCONDITIONAL_JUMP_OPNAMES | RETURN_OPNAMES | {"RAISE_VARARGS", "RERAISE"})

# Direction variants.  A jump written with either variant is re-encoded with the
# one that matches where its target actually lies.
_FORWARD_OF: dict[str, str] = {"JUMP_BACKWARD": "JUMP_FORWARD",
                               "JUMP_BACKWARD_NO_INTERRUPT": "JUMP_FORWARD"}
_BACKWARD_OF: dict[str, str] = {"JUMP_FORWARD": "JUMP_BACKWARD"}
for _cond in ("TRUE", "FALSE", "NONE", "NOT_NONE"):
    _FORWARD_OF[f"POP_JUMP_BACKWARD_IF_{_cond}"] = f"POP_JUMP_FORWARD_IF_{_cond}"
    _BACKWARD_OF[f"POP_JUMP_FORWARD_IF_{_cond}"] = f"POP_JUMP_BACKWARD_IF_{_cond}"
# Opcodes that exist only as forward jumps in 3.11.
FORWARD_ONLY_JUMP_OPNAMES: frozenset[str] = frozenset(
    {"FOR_ITER", "SEND", "JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP"})


def _variant_table(renames: dict[str, str], keeps_own_name) -> tuple[int, ...]:
    table = [-1] * 256
    for name in JUMP_OPNAMES:
        if name in renames:
            table[OPMAP[name]] = OPMAP[renames[name]]
        elif keeps_own_name(name):
            table[OPMAP[name]] = OPMAP[name]
    return tuple(table)


# Indexed by opcode: the opcode to use when the target lies after / at-or-before the
# jump; -1 where 3.11 has no such form (FOR_ITER, SEND, *_OR_POP cannot go back).
FORWARD_VARIANT: tuple[int, ...] = _variant_table(
    _FORWARD_OF, lambda name: name not in BACKWARD_JUMP_OPNAMES)
BACKWARD_VARIANT: tuple[int, ...] = _variant_table(
    _BACKWARD_OF, lambda name: name in BACKWARD_JUMP_OPNAMES)
assert FORWARD_ONLY_JUMP_OPNAMES == {name for name in JUMP_OPNAMES
                                     if BACKWARD_VARIANT[OPMAP[name]] < 0}
IS_BACKWARD_JUMP: tuple[bool, ...] = tuple(OPNAMES[op] in BACKWARD_JUMP_OPNAMES
                                           for op in range(256))
assert all(CACHE_COUNT[OPMAP[name]] == 0 for name in JUMP_OPNAMES)
del _kinds, _op, _i, _name, _sym, _cond


def is_jump(opname: str) -> bool:
    """True for every instruction with a jump target (FOR_ITER and SEND included)."""
    return opname in JUMP_OPNAMES


def is_conditional_jump(opname: str) -> bool:
    """True for jumps that may also fall through (POP_JUMP_*, *_OR_POP, FOR_ITER, SEND)."""
    return opname in CONDITIONAL_JUMP_OPNAMES


def is_unconditional_jump(opname: str) -> bool:
    return opname in UNCONDITIONAL_JUMP_OPNAMES


def is_backward_jump(opname: str) -> bool:
    """True for the opcodes whose encoded offset counts backwards."""
    return opname in BACKWARD_JUMP_OPNAMES


def forward_variant(opname: str) -> str:
    """The opcode name to use for this jump when its target lies after it."""
    op = FORWARD_VARIANT[OPMAP[opname]]
    if op < 0:
        raise ValueError(f"{opname} has no forward form in CPython 3.11")
    return OPNAMES[op]


def backward_variant(opname: str) -> str:
    """The opcode name to use for this jump when its target lies at or before it."""
    op = BACKWARD_VARIANT[OPMAP[opname]]
    if op < 0:
        raise ValueError(f"{opname} has no backward form in CPython 3.11")
    return OPNAMES[op]


def jump_target_offset(op: int, op_offset: int, arg: int) -> int:
    """Byte offset a relative jump at byte `op_offset` (the opcode itself, after any
    EXTENDED_ARG prefix) lands on."""
    if IS_BACKWARD_JUMP[op]:
        return op_offset + 2 - 2 * arg
    return op_offset + 2 + 2 * arg


def jump_arg(op_unit: int, target_unit: int) -> int:
    """Encoded arg for a jump whose opcode sits at code unit `op_unit`.  Forward when
    target_unit > op_unit, else backward (the caller picks the opcode variant)."""
    if target_unit > op_unit:
        return target_unit - op_unit - 1
    return op_unit + 1 - target_unit


def extended_arg_count(arg: int) -> int:
    """How many EXTENDED_ARG prefixes an argument needs."""
    if arg < 0x100:
        return 0
    if arg < 0x10000:
        return 1
    if arg < 0x1000000:
        return 2
    return 3


# --- LOAD_GLOBAL's NULL bit ------------------------------------------------------
def split_global_arg(arg: int) -> tuple[int, bool]:
    """LOAD_GLOBAL arg -> (index into co_names, push NULL first)."""
    return arg >> 1, bool(arg & 1)


def join_global_arg(name_index: int, push_null: bool) -> int:
    return (name_index << 1) | (1 if push_null else 0)


# --- localsplus ------------------------------------------------------------------
def localsplus_names(varnames, cellvars, freevars) -> tuple:
    """Names in localsplus order, as indexed by LOAD_DEREF & co.  A cell variable that
    is also in co_varnames (an argument captured by a closure) uses the local's slot,
    exactly as code objects built by CPython lay it out."""
    var_set = set(varnames)
    return (tuple(varnames) + tuple(c for c in cellvars if c not in var_set)
            + tuple(freevars))


def deref_index_map(varnames, cellvars, freevars) -> dict[str, int]:
    """name -> localsplus index for every cell and free variable."""
    local_index = {name: i for i, name in enumerate(varnames)}
    out: dict[str, int] = {}
    nxt = len(varnames)
    for name in cellvars:
        if name in local_index:
            out[name] = local_index[name]
        else:
            out[name] = nxt
            nxt += 1
    for name in freevars:
        if name not in out:
            out[name] = nxt
        nxt += 1
    return out


# --- exception handlers ----------------------------------------------------------
def handler_entry_depth(depth: int, lasti: bool) -> int:
    """Stack depth on entry to a handler: unwound to `depth`, then the exception is
    pushed, preceded by the raising instruction's offset when `lasti`."""
    return depth + 1 + (1 if lasti else 0)


stack_effect = dis.stack_effect


def _no_arg_effects() -> tuple:
    effects = []
    for op in range(HAVE_ARGUMENT):
        try:
            effects.append(dis.stack_effect(op) if OPNAMES[op][0] != "<" else None)
        except ValueError:
            effects.append(None)
    # RETURN_GENERATOR's frame is resumed with the first sent value on the stack
    # (popped by the POP_TOP that follows it); dis reports the caller-side effect 0.
    effects[OPMAP["RETURN_GENERATOR"]] = 1
    return tuple(effects)


# Stack effect for opcodes below HAVE_ARGUMENT as seen when walking the code
# object's own control flow; None for opcodes that do not exist.
NO_ARG_STACK_EFFECT: tuple = _no_arg_effects()


# --- exception table codec (co_exceptiontable) ----------------------------------
def parse_exception_table(table: bytes) -> list[tuple[int, int, int, int, bool]]:
    """-> [(start, end, target, depth, lasti)] with byte offsets, end exclusive."""
    entries = []
    pos = 0
    n = len(table)

    def varint():
        nonlocal pos
        b = table[pos]
        pos += 1
        val = b & 63
        while b & 64:
            b = table[pos]
            pos += 1
            val = (val << 6) | (b & 63)
        return val

    while pos < n:
        start = varint()
        length = varint()
        target = varint()
        dl = varint()
        entries.append((start * 2, (start + length) * 2, target * 2, dl >> 1, bool(dl & 1)))
    return entries


def _write_except_varint(out: list, value: int, first: int) -> None:
    # Big-endian groups of 6 bits; bit 6 marks "more follows"; bit 7 marks the
    # first byte of an entry.
    shift = 24
    while shift and value < (1 << shift):
        shift -= 6
    while shift:
        out.append(((value >> shift) & 63) | 64 | first)
        first = 0
        shift -= 6
    out.append((value & 63) | first)


def encode_exception_table(entries) -> bytes:
    """entries: iterable of (start_unit, length_units, target_unit, depth, lasti)."""
    out: list[int] = []
    for start, length, target, depth, lasti in entries:
        _write_except_varint(out, start, 128)
        _write_except_varint(out, length, 0)
        _write_except_varint(out, target, 0)
        _write_except_varint(out, (depth << 1) | (1 if lasti else 0), 0)
    return bytes(out)


# --- location table codec (co_linetable) -----------------------------------------
_LOC_SHORT0 = 0
_LOC_ONE_LINE0 = 10
_LOC_NO_COLUMNS = 13
_LOC_LONG = 14
_LOC_NONE = 15


def _write_varint(out: list, value: int) -> None:
    # Little-endian groups of 6 bits; bit 6 marks "more follows".
    while value >= 64:
        out.append((value & 63) | 64)
        value >>= 6
    out.append(value)


def _write_svarint(out: list, value: int) -> None:
    _write_varint(out, ((-value) << 1) | 1 if value < 0 else value << 1)


def encode_location_table(runs, firstlineno: int) -> bytes:
    """runs: iterable of (positions, n_code_units), one per instruction, where
    positions is None or (lineno, end_lineno, col, end_col) with None parts allowed.
    Same choices of entry form as CPython 3.11's assembler, one entry per instruction
    split every 8 code units."""
    out: list[int] = []
    append = out.append
    cur_line = firstlineno
    for pos, units in runs:
        if pos is None or pos[0] is None:
            while units > 8:
                append(0x80 | (_LOC_NONE << 3) | 7)
                units -= 8
            append(0x80 | (_LOC_NONE << 3) | (units - 1))
            continue
        line, end_line, col, end_col = pos
        if end_line is None:
            end_line = line
        elif end_line < line:  # not representable; clamp
            end_line = line
        if col is None:
            col = -1
        if end_col is None:
            end_col = -1
        while units > 0:
            chunk = 8 if units > 8 else units
            units -= chunk
            head = 0x80 | (chunk - 1)
            delta = line - cur_line
            if col < 0 or end_col < 0:
                if end_line == line:
                    append(head | (_LOC_NO_COLUMNS << 3))
                    _write_svarint(out, delta)
                    cur_line = line
                    continue
            elif end_line == line:
                if delta == 0 and col < 80 and 0 <= end_col - col < 16:
                    append(head | ((_LOC_SHORT0 + (col >> 3)) << 3))
                    append(((col & 7) << 4) | (end_col - col))
                    continue
                if 0 <= delta < 3 and col < 128 and end_col < 128:
                    append(head | ((_LOC_ONE_LINE0 + delta) << 3))
                    append(col)
                    append(end_col)
                    cur_line = line
                    continue
            append(head | (_LOC_LONG << 3))
            _write_svarint(out, delta)
            _write_varint(out, end_line - line)
            _write_varint(out, col + 1)
            _write_varint(out, end_col + 1)
            cur_line = line
    return bytes(out)

# --- the runtime beside the bytecode ---------------------------------------------
# Object layout facts that translate/guards/dict_versions.py reads through ctypes (it checks each against live
# objects before use, and turns itself off if one is wrong):
# * PyDictObject: PyObject_HEAD (refcount, type), ma_used, then ma_version_tag (PEP 509), a 64-bit tag
#   set from a global counter on every mutation of the dict, so an unchanged tag means unchanged contents;
# * PyObject: ob_type right after the refcount;
# * a managed __dict__ (Py_TPFLAGS_MANAGED_DICT types): its pointer three words before the object;
# * PyTypeObject.tp_version_tag: a 32-bit tag, 0 after any change to the type or one of its bases and
#   a fresh value once looked up again (so a non-zero tag seen twice means no change in between).
DICT_VERSION_OFFSET: int = 3 * 8
OB_TYPE_OFFSET: int = 8
MANAGED_DICT_FLAG: int = 1 << 4
MANAGED_DICT_OFFSET: int = -3 * 8
TYPE_VERSION_OFFSET: int = 384
# * PyCellObject.ob_ref, and PyFunctionObject's func_code / func_defaults / func_kwdefaults pointers.
CELL_CONTENTS_OFFSET: int = 16
FUNCTION_FIELD_OFFSETS: dict = {"__code__": 48, "__defaults__": 56, "__kwdefaults__": 64}
