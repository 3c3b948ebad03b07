"""The break decision: can a frame that breaks be split at the breaking instruction (a break function
running it as Python, then compiled resume functions, convert/break_split.py), or must it run as plain
Python, and for this call only or from now on?

A split needs every live value to be rebuilt as a real object (`_rebuildable`), the break outside loops
(but a for loop over a known sequence), outside except clauses and try/with blocks (but a call inside a
try), at an instruction the split knows how many stack items it takes (SPLIT_POPS), and no inner
function holding the frame's cells.
"""
import torch

from ..translate.values.managers.state_managers import ExitValue
from ..translate.values.functions.cells import EMPTY
from ..translate.values.base import NULL, IteratorValue, MethodValue, SeqValue

USER_ERROR_KINDS = {"constant op raised", "bad call", "key error", "index error", "value error", "name error",
                    "unbound local", "attribute error", "StopIteration", "constant call raised", "raise",
                    "op raised"}
# Breaks whose cause the eager run itself removes (a lazy module's first call materializes its parameters):
# the frame, splittable or not, runs as plain Python for this call only, and the next call converts again.
TRANSIENT_KINDS = {"lazy module"}

SPLIT_POPS = {"BINARY_SUBSCR": 2, "STORE_SUBSCR": 3, "DELETE_SUBSCR": 2, "STORE_ATTR": 2, "LOAD_ATTR": 1,
              "BINARY_OP": 2, "COMPARE_OP": 2, "CONTAINS_OP": 2, "UNARY_NEGATIVE": 1, "UNARY_POSITIVE": 1,
              "UNARY_INVERT": 1, "UNARY_NOT": 1, "UNPACK_SEQUENCE": 1, "UNPACK_EX": 1, "GET_ITER": 1,
              "RAISE_VARARGS": None}



def kind_of(gb, inner_kind):
    """The kind of the break that decided: the callee's own when the call broke because of it."""
    return inner_kind if gb.kind == "call" and inner_kind is not None else gb.kind


_CALLED_AT_ONCE = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>"})


def why_not_splittable(code, tx, inst, snap):
    if code.co_cellvars and tx.closures_made - _CALLED_AT_ONCE:
        # a function made over the frame's cells may still hold them after the break; comprehensions
        # are called at once and dropped, so the resume function may make fresh cells
        return "the function has variables captured by inner functions, so it runs as plain Python"
    if snap.handling:
        # a resume function starts outside any handler: a bare `raise`, sys.exc_info(), the __context__
        # of an exception raised there would not see the exception being handled
        return ("the break is inside an except clause (or a finally block an exception reached), so the "
                "function runs as plain Python")
    if inst.exn is not None and (inst.opname not in ("CALL", "CALL_FUNCTION_EX") or
                                 any(_is_with_exit(v) for v in snap.stack)):
        return "the break is inside a try or with block, so the function runs as plain Python"
    if inst.opname not in SPLIT_POPS and not inst.opname.startswith(("CALL", "POP_JUMP", "JUMP_IF")):
        return f"framejit cannot split the graph at {inst.opname}, so the function runs as plain Python"
    i = snap.index
    for j, other in enumerate(tx.instructions):
        t = other.target
        if t is not None and j > i and "BACKWARD" in other.opname and tx.index[t] <= i:
            # a for loop over a known sequence resumes in a graph: its iterator goes to the resume
            # function as the items left (break_split.py's _loop_iterators); a while loop, or a for loop inside a try
            # block (whose handler would iterate the passed items in the break function), does not
            # (the loop's iterator is on the stack: any other kind than IteratorValue cannot be rebuilt).
            # A callee that breaks (a model's layer) keeps the loop plain Python with the call routed to
            # the callee's wrapper: its graphs are shared by every iteration, where a split loop needs a
            # resume entry per iteration and runs the layers past the recompile limit without graphs.
            if t.opname != "FOR_ITER" or inst.exn is not None or i in tx.ctx.break_at:
                return "the break is inside a loop, so the function runs as plain Python"
    for v in snap.stack:
        if getattr(v, "crosses_as_itself", False):       # (a dict's reverse iterator: read live, rebuilt)
            if not _rebuildable(v):
                return f"a value on the stack ({type(v).__name__}) cannot be rebuilt, so the function runs as plain Python"
            continue
        if isinstance(v, IteratorValue) and _iterates_a_tensor(v):
            # its length is the tensor's (often data-dependent: nonzero rows, MoE experts hit): a resume
            # entry per position and per length would only add tiny graphs
            return "the break is inside a loop over a tensor's rows, so the function runs as plain Python"
        if isinstance(v, IteratorValue) and v.source is None and _rebuildable(SeqValue(tuple, v.items[v.pos:])):
            continue
        if v is not NULL and not _rebuildable(v):
            return f"a value on the stack ({type(v).__name__}) cannot be rebuilt, so the function runs as plain Python"
    for n, v in list(snap.locals.items()) + [(n, v) for n, v in snap.cells.items() if v is not EMPTY]:
        if not _rebuildable(v):
            return f"local {n!r} ({type(v).__name__}) cannot be rebuilt, so the function runs as plain Python"
    return None


def _iterates_a_tensor(it):
    """Are the iterator's items the rows of a tensor (Tensor.__iter__: getitem of one unbind node)?"""
    for v in it.items:
        node = getattr(v, "node", None)
        if node is not None and node.op == "call_function" and node.args and \
                getattr(node.args[0], "target", None) is torch.unbind:
            return True
    return False


def _is_with_exit(v):
    """The __exit__ a with-block keeps on the stack, when the block cannot be split: a Python manager's
    (its __enter__ ran during translation only) or a torch state manager's other than grad mode and
    autocast (ctx_managers.ExitValue.rebuild re-enters those blocks for real)."""
    if isinstance(v, ExitValue):
        return not v.splittable()
    return isinstance(v, MethodValue) and v.name == "__exit__"

def _rebuildable(v, visiting=None):
    """Can codegen rebuild v (and everything it contains) as a real object? Cycles are fine."""
    if v is None:                      # a slot with no value
        return False
    parts = v.rebuild_parts()          # the same answer codegen walks (values/base.py: Value.rebuild_parts)
    if not parts:
        return parts is not None
    visiting = set() if visiting is None else visiting
    if id(v) in visiting:
        return True
    visiting.add(id(v))
    return all(_rebuildable(p, visiting) for p in parts)
