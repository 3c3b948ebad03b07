"""A graph whose only work is switching grad mode runs as one line of Python instead.

Why this exists: a frame that breaks inside a `with torch.no_grad():` block (or a function decorated
with @torch.no_grad() & co whose body breaks: torch's `decorate_context` wrapper then becomes a frame
of its own) leaves graphs holding nothing but the block's grad-mode switches -- the enter before the
break, the exit in the resume function. Compiling and calling them costs a backend compile and a
graph call each, and counts two graphs torch.compile does not make. Such a graph is replaced by the
one switch it amounts to (the last mode it sets), called in the entry where the graph call would be.
"""
import torch

_set_grad_enabled = torch._C._set_grad_enabled


def grad_switch_only(gm, outputs):
    """The grad mode a graph with no outputs leaves set, when setting it is all its nodes do; else None."""
    if outputs:
        return None
    mode = None
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node.op != "call_function" or node.target is not _set_grad_enabled or node.kwargs or \
                len(node.args) != 1 or type(node.args[0]) is not bool:
            return None
        mode = node.args[0]
    return mode


def grad_switch_line(ns, mode):
    """The entry's line doing the graph's work."""
    return f"{ns.bind(_set_grad_enabled)}({mode})"
