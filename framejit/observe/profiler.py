"""The profiling backend: how many graphs, ops, graph breaks and recompiles a program causes, and why.

Why this exists: "is my model compiling into a few big graphs, or into many small ones with
breaks and recompiles?" should be one backend switch away:

    prof = framejit.CompileProfiler()          # wraps the eager backend by default
    model = framejit.compile(model, backend=prof)
    model(x); model(y)
    print(prof.report())

    framejit.compile(fn, backend="profile")    # one shared profiler; its report is printed at exit

A CompileProfiler is a backend (it counts each graph it is given, then hands it to `inner`), and it
also has `on_conversion(fn, result, metrics)`, which framejit calls after every conversion made with
it as the backend (observe/conversion.py): that is where breaks, eager fallbacks and recompile reasons come
from, since a backend only sees graphs.
"""
import atexit
import sys
import threading
from collections import Counter

from ..backends import lookup_backend, register_backend


class CompileProfiler:
    """A backend that counts graphs and ops and collects graph breaks and recompiles with reasons."""

    def __init__(self, inner="eager"):
        self.inner = inner
        self._lock = threading.Lock()
        self.clear()

    def clear(self):
        with self._lock:
            self.graph_count = 0
            self.op_count = 0
            self.ops_per_graph = []
            self.op_kinds = Counter()
            self.conversions = 0
            self.breaks = []            # (function, reason, where)
            self.recompiles = []        # reason lines
            self.eager_frames = []      # (function, reason)
            self.compile_seconds = 0.0

    # ---- the backend ----------------------------------------------------------------------------
    def __call__(self, gm, example_inputs):
        ops = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
        with self._lock:
            self.graph_count += 1
            self.op_count += len(ops)
            self.ops_per_graph.append(len(ops))
            self.op_kinds.update(_op_name(n) for n in ops)
        return lookup_backend(self.inner)(gm, example_inputs)

    # ---- called by framejit after each conversion -----------------------------------------------
    def on_conversion(self, fn, result, metrics):
        name = fn.__qualname__
        with self._lock:
            self.conversions += 1
            self.compile_seconds += metrics.entire_frame_compile_time_s or 0.0
            if metrics.recompile_reason:
                self.recompiles.append(metrics.recompile_reason)
            if result is None:
                return
            for info in result.breaks:
                self.breaks.append((name, info.reason, info.where or ""))
            if result.kind == "eager":
                self.eager_frames.append((name, result.reason or ""))

    # ---- the report -----------------------------------------------------------------------------
    def report(self):
        with self._lock:
            lines = ["framejit compile profile",
                     f"  conversions:      {self.conversions} ({self.compile_seconds * 1000:.1f} ms converting)",
                     f"  graphs:           {self.graph_count}",
                     f"  ops:              {self.op_count}"
                     + (f" (per graph: {', '.join(map(str, self.ops_per_graph))})" if self.ops_per_graph else ""),
                     f"  graph breaks:     {len(self.breaks)}",
                     f"  recompiles:       {len(self.recompiles)}",
                     f"  plain Python:     {len(self.eager_frames)} frame(s)"]
            if self.op_kinds:
                top = ", ".join(f"{k} x{n}" for k, n in self.op_kinds.most_common(10))
                lines.append(f"  most common ops:  {top}")
            if self.breaks:
                lines.append("Graph breaks (most frequent first):")
                for (fn, reason), n in Counter((f, r) for f, r, _ in self.breaks).most_common():
                    lines.append(f"  {n} x {fn}: {reason}")
                    where = next(w for f, r, w in self.breaks if (f, r) == (fn, reason))
                    lines.extend("      " + w for w in where.splitlines() if where)
            if self.recompiles:
                lines.append("Recompiles:")
                lines.extend(f"  - {r}" for r in self.recompiles)
            if self.eager_frames:
                lines.append("Frames running as plain Python:")
                lines.extend(f"  - {fn}: {reason}" for fn, reason in self.eager_frames)
        return "\n".join(lines) + "\n"

    __str__ = report

    def __repr__(self):
        return (f"CompileProfiler(graphs={self.graph_count}, ops={self.op_count}, breaks={len(self.breaks)}, "
                f"recompiles={len(self.recompiles)})")


def _op_name(node):
    t = node.target
    if isinstance(t, str):
        return f".{t}"
    return getattr(t, "__name__", None) or repr(t)


class _SharedProfiler(CompileProfiler):
    """backend="profile": one profiler for the process, printing its report at exit if it saw anything."""

    def __init__(self):
        super().__init__()
        self._registered = False

    def __call__(self, gm, example_inputs):
        self._print_at_exit()
        return super().__call__(gm, example_inputs)

    def on_conversion(self, fn, result, metrics):
        self._print_at_exit()
        super().on_conversion(fn, result, metrics)

    def _print_at_exit(self):
        if not self._registered:
            self._registered = True
            atexit.register(lambda: sys.stderr.write(self.report()) if self.conversions else None)


SHARED_PROFILER = register_backend("profile", _SharedProfiler())
