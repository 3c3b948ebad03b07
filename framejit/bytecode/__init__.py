"""framejit's own CPython 3.11 bytecode layer: decode a code object into mutable
Instruction objects and assemble an edited list back into a code object.

Written in-house rather than using the `bytecode` package: framejit needs instruction
*identity* to survive edits (resume functions jump into the middle of copied code by
holding references), capture time matters (one linear pass, table lookups, no
intermediate label/block objects), and it avoids an external dependency that lags
new CPython releases.  Version-specific knowledge lives only in py311.py.
"""

from .assemble import AssemblyError, assemble
from .decode import decode
from .instruction import (ExceptionTarget, Instruction, copy_instructions,
                          format_instructions, make)
from .py311 import (JUMP_OPNAMES, RETURN_OPNAMES, is_backward_jump,
                    is_conditional_jump, is_jump, is_unconditional_jump)

__all__ = [
    "AssemblyError", "ExceptionTarget", "Instruction", "JUMP_OPNAMES", "RETURN_OPNAMES",
    "assemble", "copy_instructions", "decode", "format_instructions", "is_backward_jump",
    "is_conditional_jump", "is_jump", "is_unconditional_jump", "make",
]
