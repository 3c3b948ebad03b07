"""Split a frame at its graph break: the graph up to the break, a break function that runs the breaking
instruction as Python, and a compiled resume function per way on (convert/resume.py), the entry calling
them in turn; or, when the break decision (convert/break_decision.py) says no, the frame as plain Python
(with a callee that breaks still called through its compiled wrapper, convert/callees.py).
"""
import dis

from . import resume
from .break_decision import SPLIT_POPS, TRANSIENT_KINDS, USER_ERROR_KINDS, kind_of, why_not_splittable
from .callees import CompiledCallee, callee_position
from .graph_entry import emit_entry
from .results import BreakInfo, ConvertResult
from ..errors import Unsupported
from ..translate.values.managers.state_managers import close_open_autocast
from ..translate.translator import format_position
from ..translate.values.base import NULL, IteratorValue, SeqValue
from ..translate.values.numbers.drawn_seeds import DrawnSeedValue
from ..translate.values.functions.cells import EMPTY


# How many stack items each splittable instruction consumes (NULL positions below stay put).
def _popped(inst, jump):
    op, arg = inst.opname, inst.arg or 0
    if op == "CALL":
        return arg + 2
    if op == "CALL_FUNCTION_EX":
        return 4 if arg & 1 else 3
    if op.startswith("POP_JUMP"):
        return 1
    if op in ("JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"):
        return 0 if jump else 1
    return SPLIT_POPS.get(op)



def finish_break(fn, ctx, tx, gb, opts, inner_kind=None):
    code = fn.__code__
    snap = tx.snapshot
    inst = tx.instructions[snap.index]
    info = BreakInfo(gb.kind, gb.reason, gb.where or format_position(code, inst), code.co_qualname, gb.hint)
    if opts.fullgraph:
        raise Unsupported(f"{gb.reason} (fullgraph=True)\n{info.where}")
    if kind_of(gb, inner_kind) in TRANSIENT_KINDS:
        # the eager run removes the cause: break and resume functions made now would serve this call only
        # (the next one converts the whole frame again), so the frame runs as Python, split or not
        return ConvertResult("once", reason=f"{gb.reason}; a break this call's eager run removes",
                             breaks=[info])
    why_not = why_not_splittable(code, tx, inst, snap)
    if why_not is not None:
        kind = "once" if gb.kind in USER_ERROR_KINDS or kind_of(gb, inner_kind) in TRANSIENT_KINDS else "eager"
        routed = _routed_plain_function(fn, ctx, tx, inst, snap, opts, inner_kind) if kind == "eager" else None
        if routed is not None:
            why_not += "; the call itself goes through the callee's compiled wrapper"
        return ConvertResult(kind, reason=f"{gb.reason}; {why_not}", breaks=[info], replacement=routed)
    ctx.graph.rollback(snap.graph_mark)
    ctx.side_effects.rollback(snap.effects_mark)
    close_open_autocast(tx, snap.stack)          # the break function re-enters them for real

    stack = list(snap.stack)
    # The callee has a break inside: call it through its compiled wrapper, so it keeps its graphs. Not
    # for recursion past the inline depth: each level would be one more conversion of the same code.
    if snap.index in ctx.break_at and inner_kind != "recursion":
        at = callee_position(inst, stack)
        if at is not None and stack[at] is not NULL:
            stack[at] = CompiledCallee(stack[at], opts.callee_wrappers)
    nulls = [v is NULL for v in stack]
    live = _live_locals(code, tx, snap)
    odd = [n for n in live if not n.isidentifier()]
    if odd:          # e.g. pytest's assertion-rewriting temporaries: resume functions take locals by name
        return ConvertResult("eager", reason=f"{gb.reason}; local variable {odd[0]!r} is not a Python identifier, so "
                             "the function runs as plain Python", breaks=[info])
    local_values = [snap.cells[n] if n in snap.cells else snap.locals.get(n) for n in live]

    orig_code, _ = resume.original_position(code, snap.index)
    offset = snap.index - resume.original_position(code, snap.index)[1] if orig_code is not code else 0

    def orig_index(i):
        return i - offset

    successors = []
    if inst.opname == "RAISE_VARARGS":
        pass
    elif inst.opname.startswith(("POP_JUMP", "JUMP_IF")):
        for jump, idx in ((False, snap.index + 1), (True, tx.index[inst.target])):
            successors.append((jump, idx))
    else:
        successors.append((None, snap.index + 1))

    resume_tails = []
    for jump, idx in successors:
        popped = _popped(inst, bool(jump))
        depth_after = len(stack) + dis.stack_effect(dis.opmap[inst.opname], inst.arg, jump=bool(jump)) \
            if inst.opname != "CALL" else len(stack) - inst.arg - 1
        keep = len(stack) - popped
        nulls_after = nulls[:keep] + [False] * (depth_after - keep)
        if any(nulls_after[1:]):
            return ConvertResult("eager", reason=f"{gb.reason}; the break is in the middle of a nested call, so the "
                                 "function runs as plain Python", breaks=[info])
        iter_slots = _loop_iterators(stack, keep)
        if iter_slots is None:
            return ConvertResult("eager", reason=f"{gb.reason}; the breaking instruction takes a loop's iterator, so "
                                 "the function runs as plain Python", breaks=[info])
        tail = resume.plain_tail(tx.instructions, idx, live) if inst.exn is None else None
        if tail is not None:            # `return f(x)`: the break function returns, no resume function
            resume_tails.append((jump, tail, nulls_after))
            continue
        with ctx.phase("codegen"):
            fn_resume = resume.make_resume_function(orig_code, fn.__globals__, orig_index(idx),
                                                    nulls_after, live, opts.wrap, opts.key, iter_slots,
                                                    _drawn_numbers(live, local_values, stack[:keep]))
        resume_tails.append((jump, fn_resume, nulls_after))

    with ctx.phase("codegen"):
        if inst.exn is not None:         # a call inside a try block: its handlers stay in force
            break_fn = resume.make_break_in_try_function(orig_code, fn.__globals__, orig_index(snap.index),
                                                         nulls, live, resume_tails[0])
        else:
            break_fn = resume.make_break_function(orig_code, fn.__globals__, _break_instructions(tx, snap),
                                                  nulls, live, resume_tails)

    # a for loop's iterator crosses the break as a tuple of the items it has left (the resume prologue
    # makes it an iterator again) when it is on the stack only, so no other reference sees the difference;
    # one a local also holds, or one from outside, crosses as the iterator it is (IteratorValue.rebuild)
    held = {id(v) for v in local_values if isinstance(v, IteratorValue)}
    stack = [SeqValue(tuple, v.items[v.pos:]) if isinstance(v, IteratorValue) and id(v) not in held and
             v.source is None and not getattr(v, "crosses_as_itself", False) else v for v in stack]
    values = [v for v in stack if v is not NULL] + [v for v in local_values if v is not None]

    def call_break(rb):
        rb.ns.env["__fj_break"] = break_fn
        args = ["__fj_cl"] if code.co_freevars else []      # the break function runs over the caller's cells
        args += [rb.expr(v) if v is not None else n for n, v in zip(live, local_values)]
        args += [rb.expr(v) for v in stack if v is not NULL]      # after the locals (resume._argnames)
        return f"return __fj_break({', '.join(args)})"

    return emit_entry(fn, ctx, values, opts, [info], call_break)


def _drawn_numbers(live, local_values, kept_stack):
    """The resume function's argument names holding a number `torch.seed()` drew in the graph before
    the break: a new number every call, so the resume function takes it as a dynamic int from its first
    conversion (a constant there made the second call convert it again)."""
    names = [n for n, v in zip(live, local_values) if isinstance(v, DrawnSeedValue)]
    slots = [v for v in kept_stack if v is not NULL]
    return tuple(names + [f"__fj_s{i}" for i, v in enumerate(slots) if isinstance(v, DrawnSeedValue)])


def _routed_plain_function(fn, ctx, tx, inst, snap, opts, inner_kind):
    """When the frame must run as plain Python because of a callee that breaks, a copy of it whose call
    of that callee goes through the callee's compiled wrapper (as a break function would), so the callee
    keeps its graphs, e.g. each layer of a model whose layer loop cannot be split. None if the call's
    stack layout is not certain."""
    if snap.index not in ctx.break_at or inner_kind == "recursion" or opts.callee_wrappers is None:
        return None
    at = callee_position(inst, snap.stack)
    layout = resume.callable_layout(tx.instructions, snap.index)
    if at is None or snap.stack[at] is NULL or layout is None:
        return None
    if resume.original_position(fn.__code__, snap.index)[0] is not fn.__code__:
        return None                         # a resume function: its own code is what runs
    return resume.make_routed_function(fn, snap.index, len(snap.stack) - 1 - at, opts.callee_wrappers, layout)


def _loop_iterators(stack, popped_below):
    """Stack positions of for-loop iterators (IteratorValues), or None when one of them is popped by the
    breaking instruction (it would get the passed items instead of an iterator) or appears twice."""
    slots = [i for i, v in enumerate(stack) if isinstance(v, IteratorValue)]
    if any(i >= popped_below for i in slots) or len({id(stack[i]) for i in slots}) != len(slots):
        return None
    return tuple(slots)


def _live_locals(code, tx, snap):
    """Names the resume function takes: locals with a value, and cell variables holding one (passed by
    value; the resume function makes its own cells, see _why_not_splittable)."""
    out = []
    cells_only = tuple(c for c in code.co_cellvars if c not in code.co_varnames)
    for name in code.co_varnames + cells_only:
        if name.startswith("__fj_"):          # a resume function's stack-slot arguments: dead after its prologue
            continue
        if name in snap.cells:
            if snap.cells[name] is not EMPTY:
                out.append(name)
        elif name in snap.locals or (name in tx.frame_args and name not in tx.deleted):
            out.append(name)
    return out


def _break_instructions(tx, snap):
    inst = tx.instructions[snap.index]
    out = []
    if inst.opname == "CALL":
        from ..bytecode import make
        if snap.kw_names:
            out.append(make("KW_NAMES", snap.kw_names))
        out.append(make("PRECALL", inst.arg))
        for x in out:
            x.positions = inst.positions
    out.append(inst)
    return out
