"""The number `torch.seed()` returns inside a graph: drawn at run time by the seed node itself.

Why this exists: `s = torch.seed()` picks a fresh nondeterministic seed, sets it and returns it. The
seed node runs at its place in the graph (translate/lookasides/random_seeding.py), so its number exists
only when the graph runs: no constant can stand for it (torch.compile bakes the number of its trace in,
and every call returns that one), and no symbol either (nothing about it is known or guarded). So the
value is the node's own output, handed back by the graph: returning it, storing it in a global or an
attribute, or passing it across a graph break gives the number that call drew, as eagerly. Any other
use (arithmetic, a branch, a tensor op taking it) is a graph break, the Value protocol's default.
"""
from ..base import Value


class DrawnSeedValue(Value):
    """The int a `torch.seed()` node of the graph returns (a graph output, convert/codegen.py)."""
    __slots__ = ("node",)

    def __init__(self, node):
        super().__init__(None)
        self.node = node

    def python_type(self):
        return int

    def rebuild_parts(self):
        return []                      # a graph output (convert/codegen.py)

    def __repr__(self):
        return f"DrawnSeedValue({self.node.name})"
