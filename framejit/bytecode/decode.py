"""Code object -> list of Instruction.

Runs once per captured frame, so it is one linear pass over co_code with table
lookups; all knowledge of the 3.11 encoding comes from py311.
"""

import dis
import types

from . import py311
from .instruction import ExceptionTarget, Instruction

_ARG_KIND = py311.ARG_KIND
_CACHE_COUNT = py311.CACHE_COUNT
_OPNAMES = py311.OPNAMES
_HAVE_ARGUMENT = py311.HAVE_ARGUMENT
_EXTENDED_ARG = py311.EXTENDED_ARG
_COMPARE_OPS = py311.COMPARE_OPS
_KIND_CONST = py311.KIND_CONST
_KIND_NAME = py311.KIND_NAME
_KIND_GLOBAL = py311.KIND_GLOBAL
_KIND_LOCAL = py311.KIND_LOCAL
_KIND_DEREF = py311.KIND_DEREF
_KIND_COMPARE = py311.KIND_COMPARE
_KIND_JUMP = py311.KIND_JUMP
_KIND_NONE = py311.KIND_NONE
_jump_target_offset = py311.jump_target_offset
_make_positions = dis.Positions._make


def decode(code: types.CodeType) -> list[Instruction]:
    """Instructions of `code` with no CACHE entries and EXTENDED_ARG folded into the
    instruction it prefixes; jump targets and exception handlers are references to
    the Instruction objects; positions come from co_positions()."""
    raw = code.co_code
    consts = code.co_consts
    names = code.co_names
    varnames = code.co_varnames
    localsplus = py311.localsplus_names(varnames, code.co_cellvars, code.co_freevars)
    unit_positions = list(code.co_positions())
    positions_cache: dict = {}

    instrs: list[Instruction] = []
    by_offset: dict[int, Instruction] = {}
    jumps: list[tuple[Instruction, int]] = []
    last_line = None
    ext = 0
    start = -1
    i = 0
    n = len(raw)
    while i < n:
        op = raw[i]
        if op == _EXTENDED_ARG:
            if start < 0:
                start = i
            ext = (ext | raw[i + 1]) << 8
            i += 2
            continue
        if start < 0:
            start = i
        kind = _ARG_KIND[op]
        push_null = False
        if kind == _KIND_NONE:
            arg = argval = None
        else:
            arg = ext | raw[i + 1]
            if kind == _KIND_CONST:
                argval = consts[arg]
            elif kind == _KIND_NAME:
                argval = names[arg]
            elif kind == _KIND_GLOBAL:
                argval = names[arg >> 1]
                push_null = bool(arg & 1)
            elif kind == _KIND_LOCAL:
                argval = varnames[arg]
            elif kind == _KIND_DEREF:
                argval = localsplus[arg]
            elif kind == _KIND_COMPARE:
                argval = _COMPARE_OPS[arg]
            elif kind == _KIND_JUMP:
                argval = _jump_target_offset(op, i, arg)
            else:
                argval = arg
        pos_tuple = unit_positions[start >> 1]
        positions = positions_cache.get(pos_tuple)
        if positions is None:
            positions = positions_cache[pos_tuple] = _make_positions(pos_tuple)
        line = pos_tuple[0]
        if line is not None and line != last_line:
            starts_line = last_line = line
        else:
            starts_line = None
        ins = Instruction(_OPNAMES[op], arg, argval, None, positions, starts_line,
                          start, None, push_null)
        instrs.append(ins)
        by_offset[start] = ins
        if kind == _KIND_JUMP:
            jumps.append((ins, argval))
        ext = 0
        start = -1
        i += 2 + 2 * _CACHE_COUNT[op]

    for ins, dest in jumps:
        target = by_offset.get(dest)
        if target is None:
            raise ValueError(f"{code.co_name}: jump at {ins.offset} lands on {dest}, "
                             "which is not an instruction boundary")
        ins.target = target

    table = code.co_exceptiontable
    if table:
        _attach_handlers(code, instrs, by_offset, py311.parse_exception_table(table))
    return instrs


def _attach_handlers(code, instrs, by_offset, entries) -> None:
    """Set `exn` on each instruction from the (sorted, non-overlapping) table."""
    k = 0
    for start, end, target_offset, depth, lasti in sorted(entries):
        handler = by_offset.get(target_offset)
        if handler is None:
            raise ValueError(f"{code.co_name}: exception handler at {target_offset} "
                             "is not an instruction boundary")
        exn = ExceptionTarget(handler, depth, lasti)
        while k < len(instrs) and instrs[k].offset < start:
            k += 1
        while k < len(instrs) and instrs[k].offset < end:
            instrs[k].exn = exn
            k += 1
