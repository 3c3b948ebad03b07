"""Convert one frame: translate, restart at a callee that breaks, then finish the outcome.

`convert_frame` is the slow path behind every cache miss. It binds the call's arguments, runs the
Translator over the function's code (restarting once per inlined call that breaks, so that call is
made through a compiled wrapper instead; and when a restart removes a break's cause: a lazy module
materialized, inputs sharing memory, a float decided on), then hands the result on: a frame that
returns to convert/graph_entry.py (compile the graph, generate the entry), a frame that breaks to
convert/break_split.py (split it there, or run it as plain Python, as convert/break_decision.py decides).
The result is a ConvertResult (convert/results.py).
Internal failures (a bug in framejit or a backend error) write an execution record and fall back to
eager with a warning; they never reach the user's program as framejit's exception.
"""
import inspect

from .break_split import finish_break
from .graph_entry import finish_return
from .results import UNOBSERVED, ConvertResult
from ..backends.registry import runs_graph_as_is
from ..errors import GraphBreak
from ..translate.graph import module_order
from ..translate.graph.builder import StaticInputsNeeded
from ..translate.lookasides.lazy_modules import LazyModuleMaterialized
from ..translate.context import ConversionContext
from ..translate.source import ClosureSource, LocalSource
from ..translate.translator import Translator
from ..shapes.policy import ShapePolicy
from ..shapes.symbols import ShapeContext

NON_FRAME_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE


def bind_frame_args(fn, signature, args, kwargs):
    ba = signature.bind(*args, **kwargs)
    ba.apply_defaults()
    return dict(ba.arguments)


def convert_frame(fn, signature, args, kwargs, opts, observation=UNOBSERVED):
    code = fn.__code__
    if code.co_flags & NON_FRAME_FLAGS:
        return ConvertResult("eager", reason="generator and coroutine functions run as plain Python")
    try:
        bound = bind_frame_args(fn, signature, args, kwargs)
    except TypeError as e:
        return ConvertResult("once", reason=f"the arguments do not bind: {e}")
    break_at = {}            # root call index -> what broke inside that callee, in words
    inner_kinds = {}         # root call index -> kind of the break found inside the callee
    policy = ShapePolicy(opts.config.dynamic, opts.shape_memory, floats=runs_graph_as_is(opts.backend))
    capture = opts.config.capture_data_dependent     # unbacked symbols need a ShapeEnv even with no dynamic input
    symbolic = capture or policy.wants_symbols(bound.values())
    restarts = []            # why each attempt started again, for the error when there are too many

    def restarted(reason):
        observation.note_restart(reason)
        restarts.append(reason)
    float_restarts = 0
    attempts = 0
    while attempts < 8:
        attempts += 1
        ctx = ConversionContext(opts.config, fn.__globals__, dict(break_at), observation, policy,
                                ShapeContext(capture) if symbolic else None)
        nparams = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
        ctx.frame_params = code.co_varnames[:nparams] + (("__fj_cl",) if code.co_freevars else ())
        star = code.co_argcount + code.co_kwonlyargcount
        if code.co_flags & 0x04:        # *args: always a tuple
            ctx.certain_types[LocalSource(code.co_varnames[star])] = tuple
        if code.co_flags & 0x08:        # **kwargs: a dict CPython makes for each call, aliasing nothing
            kwargs_source = LocalSource(code.co_varnames[star + bool(code.co_flags & 0x04)])
            ctx.identity.fresh.add(kwargs_source)
            ctx.certain_types[kwargs_source] = dict
        closure = tuple(ctx.real_cell(cell, ClosureSource(i, name))
                        for i, (cell, name) in enumerate(zip(fn.__closure__ or (), code.co_freevars)))
        with ctx.phase("bytecode_analysis"):
            instructions = ctx.decode(code)
        tx = Translator(ctx, code, instructions, fn.__globals__, args=bound, closure=closure)
        try:
            with ctx.phase("translate"):
                rv = tx.run()
        except GraphBreak as gb:
            if isinstance(gb, LazyModuleMaterialized):     # its cause is gone for good: not counted
                attempts -= 1
                restarted(gb.reason)
                continue
            if isinstance(gb, StaticInputsNeeded):     # inputs sharing memory: static fakes (graph/builder.py)
                for name in gb.names:
                    opts.shape_memory.note_static_tensor(name)
                restarted(gb.reason)
                continue
            if _decided_on_a_float(ctx, gb):        # a float passed as a tensor must be a constant after all
                float_restarts += 1
                # the second time, every float of the attempt stays static: a loop deciding on the items of
                # a list of floats (`[v > 0 for v in t.tolist()]`) would otherwise restart once per item
                symbols = gb.symbols if float_restarts == 1 else ctx.graph.shapes.float_symbols
                for sym in symbols:
                    opts.shape_memory.note_static_number(ctx.graph.shapes.float_symbols[sym])
                restarted(f"{gb.reason}: the float stays static")
                continue
            index = tx.snapshot.index
            inst = tx.instructions[index]
            if gb.inlined and inst.opname in ("CALL", "CALL_FUNCTION_EX") and index not in break_at:
                break_at[index] = _inner_reason(gb)
                inner_kinds[index] = gb.kind
                restarted(f"{gb.reason} (inside the call at line {tx.line_of(inst)} of {code.co_qualname})")
                continue
            return _told(ctx, fn, bound, finish_break(fn, ctx, tx, gb, opts, inner_kinds.get(index)))
        return _told(ctx, fn, bound, finish_return(fn, ctx, rv, opts))
    raise RuntimeError(f"framejit: too many restarts while converting {code.co_qualname}: " + "; ".join(restarts))


def _decided_on_a_float(ctx, gb):
    """Did the frame decide on the value of a float passed as a tensor (graph/float_inputs.py)?"""
    shapes = ctx.graph.shapes
    symbols = getattr(gb, "symbols", None)
    return bool(symbols) and shapes is not None and bool(shapes.float_symbols) and symbols <= shapes.float_symbols.keys()


def _told(ctx, fn, bound, result):
    """The execution-order listener, if any, hears the attempt that made the outcome (module_order.py)."""
    if ctx.graph.order_events is not None:
        module_order.commit(ctx.graph, fn, bound, result.kind)
    return result


def _inner_reason(gb):
    """A callee's own break, for the caller's reason: what broke and where (file and line)."""
    where = (gb.where or "").strip().splitlines()
    return f"{gb.reason}, {where[0].strip()}" if where else gb.reason
