"""Assemble a frame's graph and entry: compile the graph with the backend, render the guards, generate
the entry function (convert/codegen.py) that calls the graph, replays the side effects and ends with
the frame's last line (its return, or the call of the break function, convert/break_split.py).

A frame whose modules are received as arguments gets a second, shared entry guarded by their type and
structure instead of their identity (translate/guards/instance_guards.py).
"""
import copy
import logging
import os
import warnings
import weakref

import torch

from . import codegen, raising_graphs
from ..accuracy.first_call import checked_graph
from .grad_switch_graphs import grad_switch_line, grad_switch_only
from .results import BreakInfo, ConvertResult
from ..backends import compile_behind, tiered
from ..backends.registry import BACKEND_SIGNATURE
from ..distributed.ddp_split import SPLIT_REASONS
from ..errors import BackendError, GraphBreak
from ..shapes.oblivious import compile_oblivious
from ..translate.guards.guard_set import GuardSet, is_instance_guard
from ..translate.guards import module_guards
from ..translate.guards.identity import guard_storage_sharing, guard_written_leaves
from ..translate.guards.autocast import autocast_sensitive
from ..translate.context import is_cpu_autocast_enabled
from ..translate.values.managers.state_managers import STATE_NODE_TARGETS
from ..translate.values.iterators.iterator_positions import advance_lines

log = logging.getLogger("framejit")


def finish_return(fn, ctx, rv, opts):
    return emit_entry(fn, ctx, [rv], opts, (), lambda rb: f"return {rb.expr(rv)}")


def emit_entry(fn, ctx, values, opts, breaks, last_line):
    """Compile the graph whose outputs are the tensors reachable from `values` and the side effects,
    and generate the entry: graph call, side-effect replay, then `last_line(rebuilder)`."""
    effects = ctx.side_effects.effects
    live = list(values) + [e.value for e in effects] + [e.target for e in effects if e.kind == "value_attr"]
    outputs = codegen.tensors_in(live)
    compiled, gm, grad_switch = _compile_graph(ctx, outputs, opts, fn.__qualname__)
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
        effect_lines = advance_lines(ctx.wrapped.values(), rb, before_effects=True) + \
            codegen.side_effect_lines(effects, rb) + advance_lines(ctx.wrapped.values(), rb)
        last = last_line(rb)
        return lines + rb.prelude + effect_lines + [last]

    return _make_entry(fn, ctx, compiled, gm, body, opts, breaks=breaks)


def _compile_graph(ctx, outputs, opts, name):
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
    inputs_after = [(source, tensor, node.meta.get("example_value")) for source, tensor, node in ctx.graph.inputs]
    guard_storage_sharing(ctx.guards, inputs_after)
    guard_written_leaves(ctx.guards, inputs_after)
    if autocast_sensitive(gm.graph, STATE_NODE_TARGETS):
        ctx.guard_state(is_cpu_autocast_enabled)
    grad_mode = torch.is_grad_enabled()
    sets_grad_mode = any(n.op == "call_function" and n.target is torch._C._set_grad_enabled for n in gm.graph.nodes)
    # the accuracy mode checks the compiled graph against the graph as it is now (a backend may rewrite it)
    reference = _reference_copy(gm) if opts.config.check_accuracy else None
    try:
        # a tiered conversion's graphs answer with their fx code while their library builds (backends/tiered.py)
        with ctx.phase("backend_compile"), tiered.asked(opts.config.tiered, behind=_behind_allowed(opts),
                                                        report=ctx.compiled_behind):
            compiled = compile_oblivious(ctx.graph.shapes, lambda: _call_backend(opts.backend, gm, example_inputs))
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
    if reference is not None:                     # framejit/accuracy/: its first call is checked against eager
        compiled = checked_graph(compiled, reference, lambda g, inputs: _call_backend(opts.backend, g, inputs),
                                 name=name, debug_dir=opts.config.debug_dir)
    return compiled, gm, None


def _behind_allowed(opts):
    """May this conversion's graphs compile behind their first call (backends/compile_behind.py)? Not where
    the first call must show the compiled graph (fullgraph's errors, the accuracy mode's check), nor under
    thread state a worker would not have."""
    return opts.config.compile_behind and not opts.fullgraph and not opts.config.check_accuracy and \
        compile_behind.plain_state()


def _reference_copy(gm):
    """The accuracy mode's copy of the graph as framejit made it, or None (then that graph is not checked:
    the mode must never cost the user a graph)."""
    try:
        return copy.deepcopy(gm)
    except Exception as e:
        log.warning("accuracy check skipped for a graph that cannot be copied (%s: %s)", type(e).__name__, e)
        return None


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
    result = ConvertResult("entry", entry=entry, guards=ctx.guards, graph=gm, source_text=text, breaks=breaks,
                           ns=ns, op_count=ctx.graph.op_count(), dies_with=dies_with, companion=shared)
    result.graph_input_sources = tuple(source for source, _, _ in ctx.graph.inputs)   # runtime/warm_start.py
    return result


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
