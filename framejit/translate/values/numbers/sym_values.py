"""SymValue: a Python number the graph computes from symbolic sizes (framejit/shapes/).

Under dynamic shapes `x.shape[1]` is not a constant: it is a SymInt of the conversion's ShapeEnv,
read at run time by a graph node (`aten.sym_size(x, 1)`). Arithmetic and comparisons on it record
graph nodes too (`operator.mul`, `operator.gt`), so a size computed in Python reaches a view or a
factory as a graph value. Where Python must know the value (the truth of `n > 16` deciding a branch,
`range(n)`, an index into a list), asking the SymInt records the guard that keeps the answer true
(ShapeEnv.evaluate_expr): `truth` and `as_python` answer from the example and the entry guards it.
"""
import torch
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

from ....errors import GraphBreak
from ..base import Value

SYM_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)
_PYTHON_TYPES = {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}


class SymValue(Value):
    __slots__ = ("node", "sym")

    def __init__(self, node, sym, source=None):
        super().__init__(source)
        self.node = node
        self.sym = sym

    def python_type(self):
        return _PYTHON_TYPES[type(self.sym)]

    def truth(self, tx):
        try:
            return bool(self.sym)
        except GuardOnDataDependentSymNode as e:
            raise data_dependent_break(e, "a branch on a value computed from tensor data")

    def as_python(self):
        """The value as a real Python number, guarded (this entry holds only while it stays so). A value
        read from tensor data (an unbacked symbol: `.item()`, `nonzero()`'s length) has no value at
        translation: asking for it is a graph break."""
        try:
            return _PYTHON_TYPES[type(self.sym)](self.sym)
        except GuardOnDataDependentSymNode as e:
            raise data_dependent_break(e, "a Python value computed from tensor data")

    def __repr__(self):
        return f"SymValue({self.node.name}: {self.sym})"


def data_dependent_break(error, what):
    """The graph break for a decision on an unbacked symbol (Config.capture_data_dependent)."""
    first = str(error).splitlines()[0] if str(error) else type(error).__name__
    gb = GraphBreak("data-dependent branch", f"{what} is needed in Python ({first})")
    gb.symbols = unbacked_symbols_of(error)
    return gb


def unbacked_symbols_of(error):
    """The symbols a GuardOnDataDependentSymNode could not decide on (convert/frame.py restarts with
    floats static when they are all floats passed as tensors)."""
    cond = getattr(error, "cond", None)
    return frozenset(getattr(cond, "free_symbols", ()) or ())


class SliceValue(Value):
    """`a:b:c` with a symbolic bound (`x[:n.item()]`, `x[:x.shape[0] // 2]`): graph ops take it as it is
    (fx and the fakes get slices of nodes and SymInts); Python asks its bounds' values (guarded)."""
    __slots__ = ("parts",)

    def __init__(self, parts):
        super().__init__(None)
        self.parts = parts              # [start, stop, step] Values

    def python_type(self):
        return slice

    def as_python(self):
        from ..protocol import as_python
        return slice(*[as_python(p) for p in self.parts])

    def __repr__(self):
        return f"SliceValue({self.parts!r})"


def constant_of(sym):
    """The Python number a SymInt/SymFloat/SymBool stands for when it is a constant, else None."""
    node = sym.node
    if isinstance(sym, torch.SymInt):
        return node.maybe_as_int()
    if isinstance(sym, torch.SymFloat):
        return node.maybe_as_float()
    return node.maybe_as_bool()


def has_symbolic_sizes(fake):
    return any(type(d) is not int and constant_of(d) is None for d in fake.shape)


def symbolic_metadata(tx, t, name, args=()):
    """`t.shape`, `t.size(...)`, `t.numel()`, `t.stride(...)`, `len(t)` of a TensorValue whose fake has
    symbolic sizes, as graph values (SymValues where a size is symbolic); None when `t` has none (the
    caller folds the constant as before) or for other names."""
    fake = t.fake
    if not has_symbolic_sizes(fake):
        return None
    graph = tx.ctx.graph
    dims = None
    if args:
        first = args[0]
        dims = getattr(first, "value", None)
        if not isinstance(dims, int) or isinstance(dims, bool) or len(args) > 1:
            return None
        dims = dims % max(fake.ndim, 1)
    if name in ("shape", "size"):
        if dims is not None:
            return graph.size_of(t, dims)
        from ..base import SeqValue
        return SeqValue(torch.Size, [graph.size_of(t, i) for i in range(fake.ndim)])
    if name == "len":
        return graph.size_of(t, 0)
    if name in ("numel", "nelement"):
        from ..base import Const
        return graph.call_function(torch.ops.aten.sym_numel.default, (t,), {}) if not args else None
    if name == "stride":
        from ..base import Const, SeqValue
        if dims is not None:
            return graph.call_function(torch.ops.aten.sym_stride.int, (t, Const(dims)), {})
        return SeqValue(tuple, [graph.call_function(torch.ops.aten.sym_stride.int, (t, Const(i)), {})
                                for i in range(fake.ndim)])
    return None
