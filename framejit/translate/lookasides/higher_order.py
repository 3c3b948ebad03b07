"""Higher-order calls kept in the graph: torch.cond and non-reentrant torch.utils.checkpoint.checkpoint.

Why this exists: both take Python callables, which an fx node cannot hold as code to translate later.
Each callable is traced into a GraphModule of its own (graph/subgraph.py: its operands and every outside
tensor it reads become placeholders), and the frame's graph gets one node: a small named function
holding the GraphModule(s) that calls the real operator on them at run time --
  cond:        torch.ops.higher_order.cond(pred, true_gm, false_gm, operands + lifted) -- the operator
               torch.cond calls under a compiler (torch.cond itself would start torch.compile);
               autograd through it is torch's (CondAutogradOp), so are backends that retrace it.
               A constant predicate (a Python bool or number) just calls the branch it picks.
  checkpoint:  torch.utils.checkpoint.checkpoint(gm, *tensors, use_reentrant=False, ...) -- the real
               checkpoint, so its recomputation in backward, its RNG stash (dropout recomputes the same
               mask and the global generator ends as eagerly) and its gradients are torch's own.
The node's output metadata comes from running that function on fake tensors. A body with side effects
(print is a break, stores are refused) or one that is not traceable makes the call a graph break (the
call then runs as Python at run time, exactly as eagerly). Reentrant checkpoint (use_reentrant=True or
not given) stays a break: it detaches its arguments, and lifting the closure's tensors to arguments would
change which outputs require grad.
"""
import torch
import torch.utils.checkpoint

from ...errors import GraphBreak
from ..graph.subgraph import SubgraphBuilder
from ..values.base import Const, SeqValue, TensorValue
from ..dispatch import lookaside
from . import frame_state

_cond_op = torch.ops.higher_order.cond
_checkpoint = torch.utils.checkpoint.checkpoint


def trace_subgraph(tx, fn, args, kwargs, what):
    """(GraphModule, outer operand Values, output structure) of fn(*args, **kwargs) traced on its own:
    tensor args become the first placeholders; the output is a tensor or a flat tuple/list of them."""
    outer = tx.ctx.graph
    sub = SubgraphBuilder(outer)
    inner_args = [sub.placeholder(a) if isinstance(a, TensorValue) else a for a in args]
    effects_before = len(tx.ctx.side_effects.effects)
    state_before = frame_state.snapshot(tx, [fn, *args, *kwargs.values()])
    tx.ctx.graph = sub
    try:
        out = tx.call(fn, inner_args, dict(kwargs))
    except GraphBreak as e:
        gb = GraphBreak(e.kind, f"{what}: {e.reason}")
        gb.inlined = True           # restart and break at the call, keeping nothing the trace read
        raise gb from e
    finally:
        tx.ctx.graph = outer
    if len(tx.ctx.side_effects.effects) != effects_before:
        gb = GraphBreak("higher-order op", f"{what} has side effects "
                        f"({tx.ctx.side_effects.effects[effects_before].kind} store)")
        gb.inlined = True
        raise gb
    if frame_state.changed(state_before) is not None:
        gb = GraphBreak("higher-order op", f"{what} changes a value of the calling frame")
        gb.inlined = True
        raise gb
    if isinstance(out, TensorValue):
        outputs, structure = [out], None
    elif isinstance(out, SeqValue) and out.kind in (tuple, list) and out.items and \
            all(isinstance(i, TensorValue) for i in out.items):
        outputs, structure = list(out.items), out.kind
    else:
        raise GraphBreak("higher-order op", f"{what} returns {out!r}, not a tensor or a tuple/list of tensors")
    if any(o.cls is not None for o in outputs):
        raise GraphBreak("higher-order op", f"{what} returns a tensor subclass instance")
    gm = sub.finish_module(outputs)
    return gm, sub.operands, structure


def _restructure(result, structure):
    items = result.items if isinstance(result, SeqValue) else [result]
    return items[0] if structure is None else SeqValue(structure, list(items))


def _named(fn, name):
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = "framejit.higher_order"
    return fn


# ---- torch.cond -------------------------------------------------------------------------------------

def _cond(tx, args, kwargs):
    names = ("pred", "true_fn", "false_fn", "operands")
    if len(args) > 4 or set(kwargs) - set(names[len(args):]):
        raise GraphBreak("bad call", "torch.cond() with unexpected arguments")
    bound = dict(zip(names, args), **kwargs)
    if not {"pred", "true_fn", "false_fn"} <= set(bound):
        raise GraphBreak("bad call", "torch.cond() missing arguments")
    pred, true_fn, false_fn = bound["pred"], bound["true_fn"], bound["false_fn"]
    operands = bound.get("operands", SeqValue(tuple, []))
    if not (isinstance(operands, SeqValue) and operands.kind in (tuple, list)) or \
            not all(isinstance(o, TensorValue) for o in operands.items):
        raise GraphBreak("higher-order op", "torch.cond() operands other than a flat tuple/list of tensors")
    ops = list(operands.items)
    if isinstance(pred, Const) and type(pred.value) in (bool, int, float):
        return tx.call(true_fn if pred.value else false_fn, ops, {})
    if not isinstance(pred, TensorValue):
        raise GraphBreak("higher-order op", f"torch.cond() with predicate {pred!r}")
    if pred.fake.numel() != 1:
        raise GraphBreak("higher-order op", "RuntimeError: torch.cond() predicate is not a one-element tensor")
    true_gm, true_ops, true_structure = trace_subgraph(tx, true_fn, ops, {}, "torch.cond's true_fn")
    false_gm, false_ops, false_structure = trace_subgraph(tx, false_fn, ops, {}, "torch.cond's false_fn")
    if true_structure is not false_structure and (true_structure is None or false_structure is None):
        raise GraphBreak("higher-order op", "torch.cond() branches return different structures")
    # both branches take the same operands: the call's, then what either branch lifted
    merged = list(true_ops)
    for v in false_ops:
        if all(v.node is not m.node for m in merged):
            merged.append(v)
    true_gm = _taking(true_gm, true_ops, merged)
    false_gm = _taking(false_gm, false_ops, merged)

    def cond_call(pred, *tensors):
        return _cond_op(pred, true_gm, false_gm, tuple(tensors))

    target = _named(cond_call, "cond")
    result = tx.ctx.graph.call_function(target, (pred, *merged), {})
    return _restructure(result, true_structure)


def _taking(gm, own, merged):
    """gm taking `merged` positionally (its own placeholders are `own`, a prefix-ordered subset)."""
    if [v.node for v in own] == [v.node for v in merged]:
        return gm
    index = [next(i for i, m in enumerate(merged) if m.node is v.node) for v in own]

    def reordered(*tensors):
        return gm(*[tensors[i] for i in index])
    return _named(reordered, "branch")


# ---- torch.utils.checkpoint.checkpoint ------------------------------------------------------------------

_CHECKPOINT_OPTIONS = {"use_reentrant", "preserve_rng_state"}


def _checkpoint_call(tx, args, kwargs):
    if not args:
        raise GraphBreak("bad call", "checkpoint() without a function")
    options = {k: v for k, v in kwargs.items() if k in _CHECKPOINT_OPTIONS}
    fn_kwargs = {k: v for k, v in kwargs.items() if k not in _CHECKPOINT_OPTIONS}
    if not all(isinstance(v, Const) for v in options.values()):
        raise GraphBreak("higher-order op", "checkpoint() options that are not constants")
    if options.get("use_reentrant", Const(None)).value is not False:
        raise GraphBreak("higher-order op", "reentrant checkpoint (use_reentrant=True or not given) runs as Python")
    if any(k in fn_kwargs for k in ("context_fn", "determinism_check", "debug")):
        raise GraphBreak("higher-order op", "checkpoint() with context_fn/determinism_check/debug")
    fn, fn_args = args[0], list(args[1:])
    if not all(isinstance(a, (TensorValue, Const)) for a in fn_args) or \
            not all(isinstance(v, Const) for v in fn_kwargs.values()):
        raise GraphBreak("higher-order op", "checkpoint() arguments other than tensors and constants")
    gm, operands, structure = trace_subgraph(tx, fn, fn_args, fn_kwargs, "the checkpointed function")
    preserve = options.get("preserve_rng_state", Const(True)).value

    def checkpointed(*tensors):
        return _checkpoint(gm, *tensors, use_reentrant=False, preserve_rng_state=preserve)

    target = _named(checkpointed, "checkpoint")
    result = tx.ctx.graph.call_function(target, tuple(operands), {})
    return _restructure(result, structure)


lookaside(torch.cond)(_cond)
lookaside(_cond_op)(_cond)
lookaside(_checkpoint)(_checkpoint_call)
