"""The mutable instruction objects the translator reads and writes.

An instruction list is plain Python: a jump's `target` and an exception handler's
`target` are references to other Instruction objects in the same list, so code can be
inserted, removed or reordered without recomputing offsets; assemble() turns the list
back into a code object.  Identity (not equality) is what links instructions, hence
``eq=False``.
"""

from dataclasses import dataclass
import dis
from typing import Any

from . import py311


@dataclass(eq=False)
class ExceptionTarget:
    """Where an exception raised by a covered instruction goes (one entry of
    co_exceptiontable, with the handler as an instruction reference)."""
    target: "Instruction"   # handler's first instruction
    depth: int              # stack depth to unwind to
    lasti: bool             # push the offset of the raising instruction

    def __repr__(self) -> str:
        return (f"ExceptionTarget(-> {_target_label(self.target)}, depth={self.depth}"
                f"{', lasti' if self.lasti else ''})")


@dataclass(eq=False)
class Instruction:
    """One instruction, EXTENDED_ARG folded in and CACHE entries dropped.

    `argval` is authoritative for assemble(): the local/cell/free/global/attribute
    name, the constant (LOAD_CONST; the names tuple for KW_NAMES), the comparison
    string for COMPARE_OP, or the integer arg for everything else.  `arg` is the raw
    arg as decoded and is recomputed by assemble().  For jumps `target` is the
    authoritative destination (argval holds the decoded byte offset, informational).
    `offset` is the byte offset of the first code unit (EXTENDED_ARG prefix included)
    in the code object this was decoded from; None for new instructions.
    """
    opname: str
    arg: int | None = None
    argval: Any = None
    target: "Instruction | None" = None
    positions: dis.Positions | None = None
    starts_line: int | None = None
    offset: int | None = None
    exn: ExceptionTarget | None = None
    push_null: bool = False

    @property
    def opcode(self) -> int:
        return py311.OPMAP[self.opname]

    @property
    def argrepr(self) -> str:
        """Short human-readable argument, as in a dis listing."""
        if self.target is not None:
            return "-> " + _target_label(self.target)
        kind = py311.ARG_KIND[py311.OPMAP[self.opname]]
        if kind == py311.KIND_NONE:
            return ""
        if kind == py311.KIND_GLOBAL:
            return ("NULL + " if self.push_null else "") + str(self.argval)
        if kind == py311.KIND_CONST:
            text = repr(self.argval)
            return text if len(text) <= 60 else text[:57] + "..."
        if kind == py311.KIND_BINARY_OP and isinstance(self.argval, int):
            return py311.BINARY_OP_SYMBOLS[self.argval]
        if self.argval is None and self.arg is not None:
            return str(self.arg)
        return str(self.argval)

    def __repr__(self) -> str:
        text = self.argrepr
        return f"{self.opname} {text}" if text else self.opname


def _target_label(target: "Instruction | None") -> str:
    if target is None:
        return "?"
    if target.offset is not None:
        return str(target.offset)
    return f"<new {target.opname}>"


def make(opname: str, argval: Any = None, *, target: Instruction | None = None,
         push_null: bool = False, positions: dis.Positions | None = None) -> Instruction:
    """A new instruction (offset None).  Checks the opcode exists and that argument
    presence matches it; the argument itself is resolved by assemble()."""
    op = py311.OPMAP.get(opname)
    if op is None or opname in ("CACHE", "EXTENDED_ARG"):
        raise ValueError(f"not an instruction framejit can emit: {opname!r}")
    kind = py311.ARG_KIND[op]
    if kind == py311.KIND_NONE and argval is not None:
        raise ValueError(f"{opname} takes no argument, got {argval!r}")
    if kind == py311.KIND_JUMP:
        if argval is not None:
            raise ValueError(f"{opname} takes its destination as target=, not argval")
    elif target is not None:
        raise ValueError(f"{opname} is not a jump; target= is not allowed")
    if push_null and kind != py311.KIND_GLOBAL:
        raise ValueError("push_null only applies to LOAD_GLOBAL")
    return Instruction(opname, None, argval, target, positions, None, None, None, push_null)


def copy_instructions(instrs: list[Instruction]) -> list[Instruction]:
    """Copies of the instructions with jump targets and exception targets re-pointed
    at the copies.  References to instructions outside the list are kept as they are.
    Instructions that shared an ExceptionTarget share its copy."""
    mapping: dict[int, Instruction] = {}
    out = []
    for ins in instrs:
        new = Instruction(ins.opname, ins.arg, ins.argval, ins.target, ins.positions,
                          ins.starts_line, ins.offset, ins.exn, ins.push_null)
        mapping[id(ins)] = new
        out.append(new)
    exn_copies: dict[int, ExceptionTarget] = {}
    for new in out:
        tgt = new.target
        if tgt is not None:
            new.target = mapping.get(id(tgt), tgt)
        exn = new.exn
        if exn is not None:
            copied = exn_copies.get(id(exn))
            if copied is None:
                copied = ExceptionTarget(mapping.get(id(exn.target), exn.target),
                                         exn.depth, exn.lasti)
                exn_copies[id(exn)] = copied
            new.exn = copied
    return out


def format_instructions(instrs: list[Instruction]) -> str:
    """A dis-like listing: source line where it changes, index, '>>' on jump and
    handler targets, opcode, argument, and the covering exception handler."""
    index = {id(ins): i for i, ins in enumerate(instrs)}
    targets = set()
    for ins in instrs:
        if ins.target is not None:
            targets.add(id(ins.target))
        if ins.exn is not None:
            targets.add(id(ins.exn.target))

    def label(ins):
        i = index.get(id(ins))
        return f"#{i}" if i is not None else "<outside>"

    lines = []
    last_line = None
    for i, ins in enumerate(instrs):
        line = ins.positions.lineno if ins.positions is not None else None
        line_col = ""
        if line is not None and line != last_line:
            line_col = str(line)
            last_line = line
            if i:
                lines.append("")
        mark = ">>" if id(ins) in targets else "  "
        if ins.target is not None:
            arg = f"-> {label(ins.target)}"
        else:
            arg = ins.argrepr
        handler = ""
        if ins.exn is not None:
            handler = (f"  [exc -> {label(ins.exn.target)} depth {ins.exn.depth}"
                       f"{' lasti' if ins.exn.lasti else ''}]")
        lines.append(f"{line_col:>6} {mark} {i:>4} {ins.opname:<30} {arg}{handler}".rstrip())
    return "\n".join(lines)
