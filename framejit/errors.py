"""Exceptions framejit raises or uses internally.

`Unsupported` is public: it is raised only under fullgraph=True (or when a user asks for it) and names
the construct and the user's source line. `GraphBreak` is internal: the translator raises it where it
cannot continue symbolically; the converter turns it into a graph break or an eager fallback.
"""


class Unsupported(Exception):
    """A construct framejit cannot put into a graph (raised under fullgraph=True)."""


# The words of a break at a call whose callee broke inside (translate/translator.py writes them around the
# callee's own reason and line; observe/break_warnings.py reads them back to warn once per root cause).
CALLEE_BREAK_PREFIX = "the called function has a graph break inside ("
CALLEE_BREAK_SUFFIX = "); it is called through a compiled wrapper"


class GraphBreak(Exception):
    """Internal: the translator cannot continue at the current instruction.

    kind: a short stable category ("call", "data-dependent branch", "opcode", ...) for counting;
    reason: plain words; where: the user's source line with a caret (filled in by the translator).
    """

    def __init__(self, kind, reason, hint=None):
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.hint = hint
        self.where = None          # filled by the translator: formatted source line with a caret
        self.instruction = None    # the root frame's instruction where the break happened
        self.inlined = False       # True if raised inside an inlined call


class BackendError(RuntimeError):
    """A backend failed to compile a graph; the graph is attached as `.graph_module`."""

    def __init__(self, message, graph_module=None):
        super().__init__(message)
        self.graph_module = graph_module
