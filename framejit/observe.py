"""After each conversion: one CompilationMetrics entry and a log line for recompiles.

Runs only on the slow path (conversion), never on a cache hit.
"""
import logging

from .metrics import CompilationMetrics, metrics_store

log = logging.getLogger("framejit")


def record_conversion(fn, state, result, elapsed):
    code = fn.__code__
    m = CompilationMetrics.for_code(code)
    m.cache_size = len(state.entries)
    m.entire_frame_compile_time_s = elapsed
    if result.guards is not None:
        m.guard_count = len(result.guards)
    if result.graph is not None:
        nodes = list(result.graph.graph.nodes)
        m.graph_node_count = len(nodes)
        m.graph_input_count = sum(1 for n in nodes if n.op == "placeholder")
        m.graph_op_count = result.op_count
    m.has_installed_code = result.kind == "entry"
    if result.kind != "entry":
        m.fail_type = "eager fallback" if result.kind == "eager" else "run once eagerly"
        m.fail_reason = result.reason
    if state.recompile_reasons and state.conversions > 1:
        m.recompile_reason = state.recompile_reasons[-1]
        log.info(state.recompile_reasons[-1])
    metrics_store().add(m)
