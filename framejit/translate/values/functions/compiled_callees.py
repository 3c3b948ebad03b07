"""The callee a graph break calls, routed to its compiled wrapper (convert/callees.py's CalleeWrappers).

When a frame breaks at a call of a function or module that itself has a graph break inside, the code
run at the break calls `wrappers(callee)` instead of the plain callee, so the callee runs compiled too.
On the stack that callee is a CompiledCallee: it rebuilds as that call.
"""
from ..base import Value


class CompiledCallee(Value):
    """Stack value standing for `wrappers(callee)` in the code run at a graph break."""
    __slots__ = ("callee", "wrappers")

    def __init__(self, callee, wrappers):
        super().__init__(None)
        self.callee = callee
        self.wrappers = wrappers

    def rebuild_parts(self):
        return [self.callee]

    def rebuild(self, rb):
        return f"{rb.ns.bind(self.wrappers)}({rb.expr(self.callee)})"
