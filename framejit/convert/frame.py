"""Convert one frame: translate, compile the graph, generate the entry, or fall back to eager.

`convert_frame` is the slow path behind every cache miss. It binds the call's arguments, runs the
Translator over the function's code (restarting once per inlined call that breaks, so that call is
made through a compiled wrapper instead), hands the graph to the backend and generates the entry
function (convert/codegen.py) — either returning the result, or running the breaking instruction and calling
the compiled resume function (convert/resume.py).

Outcomes, as a ConvertResult:
  entry      a generated entry to add to the cache (graph and guards)
  eager      the frame runs as plain Python from now on (an unsupported construct that no split can
             isolate: a break inside a loop, try or with block, a generator...), with the reason
  once       run this call eagerly but do not cache (the call raises in Python, or its arguments do
             not bind): the next call converts again
Internal failures (a bug in framejit or a backend error) write an execution record and fall back to
eager with a warning; they never reach the user's program as framejit's exception.
"""
import contextlib
import dis
import inspect
import logging
import os
import warnings
import weakref

import torch

from . import codegen, raising_graphs, resume
from ..backends.registry import BACKEND_SIGNATURE, runs_graph_as_is
from ..distributed.ddp_split import SPLIT_REASONS
from .grad_switch_graphs import grad_switch_line, grad_switch_only
from .callees import CalleeWrappers, CompiledCallee, callee_position
from ..errors import BackendError, GraphBreak, Unsupported
from ..translate.graph import module_order
from ..translate.graph.builder import StaticInputsNeeded
from ..translate.lookasides.lazy_modules import LazyModuleMaterialized
from ..translate.guards.guard_set import GuardSet, is_instance_guard
from ..translate.guards import module_guards
from ..translate.guards.identity import guard_storage_sharing
from ..translate.guards.autocast import autocast_sensitive
from ..translate.context import ConversionContext, is_cpu_autocast_enabled
from ..translate.values.managers.state_managers import STATE_NODE_TARGETS, ExitValue, close_open_autocast
from ..translate.values.functions.cells import EMPTY
from ..translate.values.containers.input_lists import visible_items
from ..translate.source import ClosureSource, LocalSource
from ..translate.translator import Translator, format_position
from ..translate.values.base import NULL, Const, DictValue, IteratorValue, MethodValue, ObjectValue, SeqValue, SetValue, \
    TensorValue
from ..translate.values.numbers.sym_values import SymValue
from ..translate.values.dicts.identity_hashed_keys import IdentityKey
from ..shapes.memory import ShapeMemory
from ..shapes.policy import ShapePolicy
from ..shapes.symbols import ShapeContext

log = logging.getLogger("framejit")

NON_FRAME_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
USER_ERROR_KINDS = {"constant op raised", "bad call", "key error", "index error", "value error", "name error",
                    "unbound local", "attribute error", "StopIteration", "constant call raised", "raise",
                    "op raised"}
# Breaks whose cause the eager run itself removes (a lazy module's first call materializes its parameters):
# the frame, splittable or not, runs as plain Python for this call only, and the next call converts again.
TRANSIENT_KINDS = {"lazy module"}

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


SPLIT_POPS = {"BINARY_SUBSCR": 2, "STORE_SUBSCR": 3, "DELETE_SUBSCR": 2, "STORE_ATTR": 2, "LOAD_ATTR": 1,
              "BINARY_OP": 2, "COMPARE_OP": 2, "CONTAINS_OP": 2, "UNARY_NEGATIVE": 1, "UNARY_POSITIVE": 1,
              "UNARY_INVERT": 1, "UNARY_NOT": 1, "UNPACK_SEQUENCE": 1, "UNPACK_EX": 1, "GET_ITER": 1,
              "RAISE_VARARGS": None}


class BreakInfo:
    """One graph break, as explain() shows it."""

    def __init__(self, kind, reason, where, fn_name, hint=None):
        self.kind = kind
        self.reason = reason
        self.where = where
        self.fn_name = fn_name
        self.hint = hint

    @property
    def line(self):
        return self.where

    def __str__(self):
        text = f"{self.reason}\n{self.where}" if self.where else self.reason
        return text + (f"\n    hint: {self.hint}" if self.hint else "")

    def __repr__(self):
        return f"BreakInfo({self.kind!r}, {self.reason!r})"


class ConvertResult:
    def __init__(self, kind, entry=None, reason=None, guards=None, graph=None, source_text=None, breaks=(),
                 ns=None, op_count=0, replacement=None, dies_with=(), companion=None):
        self.kind = kind              # "entry" | "eager" | "once"
        self.companion = companion    # "entry": the shared entry over the same graph (instance_guards.py), or None
        self.dies_with = dies_with    # weak refs to the modules whose death ends the entry (guards.WeakIdentity)
        self.replacement = replacement  # "eager": what to run instead of fn (same semantics), or None
        self.entry = entry
        self.reason = reason
        self.guards = guards
        self.graph = graph
        self.source_text = source_text
        self.breaks = list(breaks)
        self.ns = ns
        self.op_count = op_count


class Options:
    """What a compiled function was compiled with: backend callable, config, fullgraph, and `wrap`,
    which compiles generated resume functions with the same options."""

    def __init__(self, backend, config, fullgraph, wrap, observer=None, shape_memory=None):
        self.shape_memory = shape_memory if shape_memory is not None else ShapeMemory()  # automatic dynamic
        self.backend = backend
        self.config = config
        self.fullgraph = fullgraph
        self.wrap = wrap
        self.observer = observer      # called with (code, ConvertResult, seconds) after each conversion
        self.key = (backend, fullgraph, config, observer)   # resume functions are cached per options
        self.callee_wrappers = CalleeWrappers(wrap)          # callees that break run compiled (convert/callees.py)


class Unobserved:
    """The observation a conversion reports to (observe/conversion.py's Observation hands its own), for
    a conversion nobody watches (replay_conversion): no recorder, phases not timed."""
    recorder = None

    def note_restart(self, reason):
        pass

    def program_effect(self, call):
        return call()

    def watch_state(self, call):
        """Nobody watches global torch state here: only framejit.compile's conversions (observed) make a
        torch call that changes it a graph break (translate/lookasides/state_calls.py)."""
        return call(), []

    def phase(self, name):
        return contextlib.nullcontext()


UNOBSERVED = Unobserved()


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
            return _told(ctx, fn, bound, _finish_break(fn, ctx, tx, gb, opts, inner_kinds.get(index)))
        return _told(ctx, fn, bound, _finish_return(fn, ctx, rv, opts))
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


# ---- a frame that returns ----------------------------------------------------------------------

def _finish_return(fn, ctx, rv, opts):
    return _emit_entry(fn, ctx, [rv], opts, (), lambda rb: f"return {rb.expr(rv)}")


def _emit_entry(fn, ctx, values, opts, breaks, last_line):
    """Compile the graph whose outputs are the tensors reachable from `values` and the side effects,
    and generate the entry: graph call, side-effect replay, then `last_line(rebuilder)`."""
    effects = ctx.side_effects.effects
    live = list(values) + [e.value for e in effects] + [e.target for e in effects if e.kind == "value_attr"]
    outputs = codegen.tensors_in(live)
    compiled, gm, grad_switch = _compile_graph(ctx, outputs, opts)
    cuts = getattr(compiled, SPLIT_REASONS, ())        # a backend that cut the graph (distributed/ddp_split.py)
    if cuts:
        breaks = list(breaks) + [BreakInfo("ddp bucket", reason, "", fn.__qualname__) for reason in cuts]

    def body(ns, plan):
        rb = codegen.Rebuilder(ns, {v.node: i for i, v in enumerate(outputs)}, plan.cached_targets)
        for v in live:
            rb.count(v)
        lines = []
        if grad_switch is not None:
            lines.append(grad_switch_line(ns, grad_switch))
        if compiled is not None:
            ns.env["__fj_graph"] = compiled
            call = codegen.graph_call_source(plan.input_sources, len(outputs), plan.param_tuple)
            if raising_graphs.needs_handler(effects, len(ctx.graph.created)) or \
                    raising_graphs.ops_in_handled_region(ctx.handled_region_ops, ctx.graph.created):
                # effects happened before graph ops: a raising op must leave them visible (convert/raising_graphs.py)
                lines += raising_graphs.wrap_graph_call(call, gm, [s.expr() for s in plan.input_sources], fn,
                                                        codegen.call_arguments_source(fn.__code__), ns)
            else:
                lines.append(call)
        effect_lines = codegen.side_effect_lines(effects, rb)
        last = last_line(rb)
        return lines + rb.prelude + effect_lines + [last]

    return _make_entry(fn, ctx, compiled, gm, body, opts, breaks=breaks)


def _compile_graph(ctx, outputs, opts):
    """(compiled graph, its GraphModule, None), or (None, None, mode) when switching grad mode to `mode`
    is all the graph would do (convert/grad_switch_graphs.py), or Nones when there is nothing to do."""
    if ctx.graph.op_count() == 0 and not outputs:
        return None, None, None
    ctx.guard_state(torch.is_grad_enabled)         # grad mode at entry shapes every graph
    ctx.guard_state(torch.get_default_dtype)       # and the default dtype: factories, int / int, int + 0.5
    gm, example_inputs = ctx.graph.finish(outputs)
    if not outputs and not _has_ops(gm):
        # the ops counted above were symbolic-number arithmetic whose only use was a guard (`i == 3` on a
        # dynamic int), which finish() dropped: nothing is left to compile or call
        return None, None, None
    grad_switch = grad_switch_only(gm, outputs)
    if grad_switch is not None:
        return None, None, grad_switch
    guard_storage_sharing(ctx.guards, [(source, tensor, node.meta.get("example_value"))
                                       for source, tensor, node in ctx.graph.inputs])
    if autocast_sensitive(gm.graph, STATE_NODE_TARGETS):
        ctx.guard_state(is_cpu_autocast_enabled)
    grad_mode = torch.is_grad_enabled()
    sets_grad_mode = any(n.op == "call_function" and n.target is torch._C._set_grad_enabled for n in gm.graph.nodes)
    try:
        with ctx.phase("backend_compile"):
            compiled = _call_backend(opts.backend, gm, example_inputs)
        if not callable(compiled):
            got = "None" if compiled is None else f"{type(compiled).__name__} {compiled!r:.60}"
            raise BackendError(f"backend {_backend_name(opts.backend)!r} returned {got}, not a callable: a backend "
                               f"is {BACKEND_SIGNATURE}, and framejit calls what it returns with the graph's "
                               "inputs", gm)
    except BackendError:
        raise
    except Exception as e:
        err = BackendError(f"backend {_backend_name(opts.backend)!r} failed: {type(e).__name__}: {e}", gm)
        raise err from e
    finally:
        # a backend that traces the graph (aot_eager, inductor) runs its grad-mode nodes for real, and a
        # resume function's graph that ends a no_grad block ends in another mode than it started in
        # (any other change of grad mode by a backend is left for observe/conversion.py to report)
        if sets_grad_mode:
            torch._C._set_grad_enabled(grad_mode)
    return compiled, gm, None


def _has_ops(gm):
    return any(n.op in ("call_function", "call_method", "call_module") for n in gm.graph.nodes)


def _backend_name(backend):
    return getattr(backend, "__name__", None) or type(backend).__name__


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def _call_backend(backend, gm, example_inputs):
    """backend(gm, example_inputs), keeping the warnings torch itself emits while compiling (anomaly-mode
    reports of a backward traced at compile time, deprecations inside torch) from the user: they are
    logged; warnings from the backend's own code are passed on."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = backend(gm, example_inputs)
    for w in caught:
        if w.filename.startswith(_TORCH_DIR):
            log.debug("warning while compiling a graph: %s: %s", w.category.__name__, w.message)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    return compiled


def _make_entry(fn, ctx, compiled, gm, body, opts, breaks):
    code = fn.__code__
    shapes = ctx.graph.shapes
    if shapes is not None and shapes.used:        # the symbols' ranges and relations (shapes/guard_text.py)
        ctx.guards.add("SHAPES", None, shapes)
    # the modules the frame receives are matched by id and held weakly: the entry goes when one dies
    instances = [g for g in ctx.guards.guards if is_instance_guard(g, ctx.frame_params)]
    try:
        with ctx.phase("codegen"):
            entry, text, ns = codegen.build_entry(code, fn.__globals__, bool(code.co_freevars),
                                                  lambda ns: _render_guards(ctx, ns, instances),
                                                  lambda ns: body(ns, module_guards.plan_for(ctx)))
            shared = _shared_entry(fn, ctx, gm, body, breaks)
    except GraphBreak as gb:
        return ConvertResult("eager", reason=f"the result cannot be rebuilt: {gb.reason}", breaks=breaks)
    dies_with = tuple(weakref.ref(g.expected) for g in instances)
    ctx.guards.weaken(instances)
    return ConvertResult("entry", entry=entry, guards=ctx.guards, graph=gm, source_text=text, breaks=breaks,
                         ns=ns, op_count=ctx.graph.op_count(), dies_with=dies_with, companion=shared)


def _shared_entry(fn, ctx, gm, body, breaks):
    """The entry over the same graph for every instance of the modules the frame receives, guarded by
    their type and structure instead of their identity (translate/guards/instance_guards.py), or None."""
    plan = module_guards.plan_for(ctx, shared=True)
    if plan is None:
        return None
    code = fn.__code__
    entry, text, ns = codegen.build_entry(code, fn.__globals__, bool(code.co_freevars),
                                          lambda ns: _render_guards(ctx, ns, shared=True), lambda ns: body(ns, plan))
    guards = GuardSet()
    guards.guards = plan.guards
    return ConvertResult("entry", entry=entry, guards=guards, graph=gm, source_text=text, breaks=breaks, ns=ns,
                         op_count=ctx.graph.op_count())


def _render_guards(ctx, ns, instances=(), shared=False):
    with ctx.phase("guard_build"):
        # module state behind one counter (translate/guards/module_guards.py)
        return module_guards.render(ctx, ns, instances, shared)


# ---- a frame that breaks ------------------------------------------------------------------------

def _finish_break(fn, ctx, tx, gb, opts, inner_kind=None):
    code = fn.__code__
    snap = tx.snapshot
    inst = tx.instructions[snap.index]
    info = BreakInfo(gb.kind, gb.reason, gb.where or format_position(code, inst), code.co_qualname, gb.hint)
    if opts.fullgraph:
        raise Unsupported(f"{gb.reason} (fullgraph=True)\n{info.where}")
    if _kind_of(gb, inner_kind) in TRANSIENT_KINDS:
        # the eager run removes the cause: break and resume functions made now would serve this call only
        # (the next one converts the whole frame again), so the frame runs as Python, split or not
        return ConvertResult("once", reason=f"{gb.reason}; a break this call's eager run removes",
                             breaks=[info])
    why_not = _why_not_splittable(code, tx, inst, snap)
    if why_not is not None:
        kind = "once" if gb.kind in USER_ERROR_KINDS or _kind_of(gb, inner_kind) in TRANSIENT_KINDS else "eager"
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
        with ctx.phase("codegen"):
            fn_resume = resume.make_resume_function(orig_code, fn.__globals__, orig_index(idx),
                                                    nulls_after, live, opts.wrap, opts.key, iter_slots)
        resume_tails.append((jump, fn_resume, nulls_after))

    with ctx.phase("codegen"):
        if inst.exn is not None:         # a call inside a try block: its handlers stay in force
            break_fn = resume.make_break_in_try_function(orig_code, fn.__globals__, orig_index(snap.index),
                                                         nulls, live, resume_tails[0])
        else:
            break_fn = resume.make_break_function(orig_code, fn.__globals__, _break_instructions(tx, snap),
                                                  nulls, live, resume_tails)

    # a for loop's iterator crosses the break as a tuple of the items it has left (the resume prologue
    # makes it an iterator again); it is on the stack only, so no other reference sees the difference
    stack = [SeqValue(tuple, v.items[v.pos:]) if isinstance(v, IteratorValue) else v for v in stack]
    values = [v for v in stack if v is not NULL] + [v for v in local_values if v is not None]

    def call_break(rb):
        rb.ns.env["__fj_break"] = break_fn
        args = ["__fj_cl"] if code.co_freevars else []      # the break function runs over the caller's cells
        args += [rb.expr(v) if v is not None else n for n, v in zip(live, local_values)]
        args += [rb.expr(v) for v in stack if v is not NULL]      # after the locals (resume._argnames)
        return f"return __fj_break({', '.join(args)})"

    return _emit_entry(fn, ctx, values, opts, [info], call_break)


def _kind_of(gb, inner_kind):
    """The kind of the break that decided: the callee's own when the call broke because of it."""
    return inner_kind if gb.kind == "call" and inner_kind is not None else gb.kind


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


_CALLED_AT_ONCE = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>"})


def _why_not_splittable(code, tx, inst, snap):
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
            # function as the items left (_loop_iterators); a while loop, or a for loop inside a try
            # block (whose handler would iterate the passed items in the break function), does not
            # (the loop's iterator is on the stack: any other kind than IteratorValue cannot be rebuilt).
            # A callee that breaks (a model's layer) keeps the loop plain Python with the call routed to
            # the callee's wrapper: its graphs are shared by every iteration, where a split loop needs a
            # resume entry per iteration and runs the layers past the recompile limit without graphs.
            if t.opname != "FOR_ITER" or inst.exn is not None or i in tx.ctx.break_at:
                return "the break is inside a loop, so the function runs as plain Python"
    for v in snap.stack:
        if isinstance(v, IteratorValue) and _iterates_a_tensor(v):
            # its length is the tensor's (often data-dependent: nonzero rows, MoE experts hit): a resume
            # entry per position and per length would only add tiny graphs
            return "the break is inside a loop over a tensor's rows, so the function runs as plain Python"
        if isinstance(v, IteratorValue) and _rebuildable(SeqValue(tuple, v.items[v.pos:])):
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


def _loop_iterators(stack, popped_below):
    """Stack positions of for-loop iterators (IteratorValues), or None when one of them is popped by the
    breaking instruction (it would get the passed items instead of an iterator) or appears twice."""
    slots = [i for i, v in enumerate(stack) if isinstance(v, IteratorValue)]
    if any(i >= popped_below for i in slots) or len({id(stack[i]) for i in slots}) != len(slots):
        return None
    return tuple(slots)


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
