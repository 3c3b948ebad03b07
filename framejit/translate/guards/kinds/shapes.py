"""SHAPES: the facts a conversion's symbolic sizes rely on (their ranges and relations), one guard
without a source whose words, text and miss explanation are framejit/shapes/guard_text.py's.
"""
from .guard_kind import GuardKind, register


class Shapes(GuardKind):
    name = "SHAPES"

    def describe(self, g):
        from ....shapes.guard_text import describe
        return "shape guards: " + "; ".join(describe(g.expected))

    def render(self, g, e, bind):
        from ....shapes.guard_text import render
        return render(g.expected)

    def explain_miss(self, g, env):
        from ....shapes.guard_text import explain_miss
        return explain_miss(g.expected, env)


SHAPES = register(Shapes)
