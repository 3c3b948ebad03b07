"""Symbolic numbers never become constants: a SymInt read off a fake tensor is a Python int at run time.

Under dynamic shapes the fakes' metadata is made of SymInt/SymFloat/SymBool (framejit/shapes/). Every
path that folds fake metadata into a constant (`x.shape` of a tensor whose symbols the ShapeEnv has
since pinned to a number, `x.numel()`, `x.is_contiguous()`, an ndarray's `shape`, a torch.Size an op
returned) would otherwise put the Sym object itself into a Const, and from there into the graph as a
literal, into generated code as a bound constant, across a break into a resume function or into a user
object: at run time a real op then gets a SymInt ("SymIntArrayRef expected to contain only concrete
integers"), and a comparison or a format gives a symbolic answer. `concrete` turns such a value into
the plain number it stands for: the number itself when the ShapeEnv already knows it, else the example's
number with the guard that keeps it true (specializing, as `int(n)` of a symbolic size does in eager
Python under torch's tracing). `holds_symbolic` is the check the boundaries make (convert/codegen.py,
graph finish) so that a leak the folding missed is a framejit failure (warning, record, plain Python),
never a run-time crash.
"""
import torch

SYM_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)
_PYTHON = {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}
# the value types worth a look: the Syms themselves and the sequences fake metadata comes in
SUSPECT_TYPES = frozenset((*SYM_TYPES, torch.Size, tuple, list))


def concrete(value):
    """`value` with every SymInt/SymFloat/SymBool in it (also inside tuples, lists, torch.Size) made the
    Python number it stands for (guarded when it was not yet fixed); other values unchanged."""
    kind = type(value)
    if kind in _PYTHON:
        return _PYTHON[kind](value)
    if kind is torch.Size or kind is tuple or kind is list:
        if not any(type(v) in SUSPECT_TYPES for v in value):
            return value
        items = [concrete(v) for v in value]
        return kind(items)
    return value


def holds_symbolic(value, depth=3):
    """Whether `value` is, or directly holds (tuple, list, torch.Size, dict values), a Sym object."""
    kind = type(value)
    if kind in _PYTHON:
        return True
    if depth and (kind is torch.Size or kind is tuple or kind is list):
        return any(holds_symbolic(v, depth - 1) for v in value)
    if depth and kind is dict:
        return any(holds_symbolic(v, depth - 1) for v in value.values())
    return False
