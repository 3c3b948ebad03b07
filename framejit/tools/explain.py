"""explain(fn)(*args, **kwargs): compile and run once, then say what happened, in plain words.

It collects every conversion the call caused (the function itself and the resume functions after
each graph break) and reports graphs, ops per graph, graph breaks with the user's source line and a
caret, guards as readable strings, frames that run as plain Python and why, and the compile time.
"""
from ..backends import lookup_backend
from ..config import Config, check_settings
from ..observe.safe_text import guard_descriptions, safely


class ExplainOutput:
    def __init__(self):
        self.graphs = []
        self.ops_per_graph = []
        self.break_reasons = []
        self.guards = []
        self.eager_reasons = []
        self.compile_time = 0.0
        self.transformed_code = []
        self.recompile_reasons = []
        self.result = None

    @property
    def graph_count(self):
        return len(self.graphs)

    @property
    def graph_break_count(self):
        return len(self.break_reasons)

    def __str__(self):
        lines = [f"Graph count: {self.graph_count}", f"Graph break count: {self.graph_break_count}",
                 f"Op count: {sum(self.ops_per_graph)}", f"Compile time: {self.compile_time * 1000:.1f} ms"]
        if self.break_reasons:
            lines.append("Break reasons:")
            for i, b in enumerate(self.break_reasons, 1):
                lines.append(f"  {i}. {b.reason}")
                if b.where:
                    lines.extend("     " + l for l in b.where.splitlines())
        if self.recompile_reasons:
            lines.append("Recompiles:")
            lines.extend(f"  - {r}" for r in self.recompile_reasons)
        if self.eager_reasons:
            lines.append("Runs as plain Python:")
            lines.extend(f"  - {r}" for r in self.eager_reasons)
        for i, (g, n) in enumerate(zip(self.graphs, self.ops_per_graph), 1):
            lines.append(f"Graph {i} ({n} ops):")
            lines.extend("  " + l for l in g.code.strip().splitlines())
        if self.guards:
            lines.append("Guards:")
            lines.extend(f"  - {g}" for g in self.guards)
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn, *, backend="eager", **config_overrides):
    """Return a callable that runs `fn` once compiled and returns an ExplainOutput."""
    from ..runtime.compiled import _compile, check_compilable
    check_settings("framejit.explain", config_overrides, also=("backend",))
    check_compilable(fn, "framejit.explain")
    backend_fn = lookup_backend(backend)
    config = Config.from_env(**config_overrides)

    def run(*args, **kwargs):
        out = ExplainOutput()

        def observer(f, result, seconds):
            out.compile_time += seconds
            out.break_reasons.extend(result.breaks)
            if result.graph is not None:
                out.graphs.append(result.graph)
                out.ops_per_graph.append(result.op_count)
            out.guards.extend(guard_descriptions(result.guards))      # never raises (observe/safe_text.py)
            if result.kind != "entry" and result.reason:
                out.eager_reasons.append(safely(lambda: f"{f.__qualname__}: {result.reason}", "the reason"))
            if result.source_text:
                out.transformed_code.append(result.source_text)
            if getattr(result, "recompile_reason", None):
                out.recompile_reasons.append(result.recompile_reason)

        compiled = _compile(getattr(fn, "_framejit_fn", fn), backend_fn, False, config, observer)
        out.result = compiled(*args, **kwargs)
        return out

    return run
