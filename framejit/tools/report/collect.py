"""Gather what the HTML report shows, from the compile cache and the metrics store, as plain data.

Why this exists: the page (tools/report/html.py) should only format. Everything it needs about each converted
frame -- its source, its cache entries (graph, guards, generated entry source), graph breaks,
recompile reasons, where its conversion time went -- is collected here into small dataclasses, so
the rendering never touches live framejit state.
"""
import dataclasses
import inspect
import linecache
from dataclasses import dataclass, field

from ...runtime import cache
from ...convert import resume
from ...observe.metrics import metrics
from ...observe.safe_text import guard_descriptions, safely

GRAPH_OPS = ("call_function", "call_method", "call_module")


@dataclass
class GraphNode:
    name: str
    op: str              # placeholder | call_function | call_method | call_module | get_attr | output
    label: str           # what it computes, short
    inputs: list         # names of the nodes it reads


@dataclass
class GraphInfo:
    code: str            # the GraphModule's generated Python
    nodes: list          # GraphNode, in graph order
    op_count: int


@dataclass
class EntryInfo:
    kind: str            # entry | eager
    reason: str | None
    guards: list
    breaks: list         # convert.BreakInfo
    graph: GraphInfo | None
    transformed_source: str | None
    recompile_reason: str | None
    record_path: str | None = None


@dataclass
class FrameInfo:
    anchor: str
    name: str
    filename: str
    firstlineno: int
    source_lines: list   # [(lineno, text)] of the original function
    origin: str | None   # for a resume function: the name of the function it continues
    entries: list = field(default_factory=list)
    eager_reason: str | None = None
    recompile_reasons: list = field(default_factory=list)
    conversions: int = 0

    @property
    def break_lines(self):
        """Line numbers (in the original source) where a graph break happened."""
        out = set()
        for e in self.entries:
            for b in e.breaks:
                out.update(_lines_in(b.where))
        return out


@dataclass
class TimeRow:
    """Conversion time of one frame, split into exclusive parts that add up to the total."""
    frame_key: str
    conversions: int
    parts: dict          # part name -> seconds (exclusive), in TIME_PARTS order
    total: float


# Exclusive parts: fake propagation happens inside translate, guard building inside codegen.
TIME_PARTS = ("bytecode_analysis", "translate (symbolic)", "fake_propagation", "backend_compile", "codegen",
              "guard_build", "setup & other")


@dataclass
class ReportData:
    frames: list
    times: list          # TimeRow, slowest first
    metrics: list        # CompilationMetrics

    @property
    def graph_count(self):
        return sum(1 for f in self.frames for e in f.entries if e.graph is not None)

    @property
    def break_count(self):
        return sum(len(e.breaks) for f in self.frames for e in f.entries)

    @property
    def recompile_count(self):
        return sum(len(f.recompile_reasons) for f in self.frames)

    @property
    def total_seconds(self):
        return sum(r.total for r in self.times)


def collect():
    """A ReportData snapshot of every frame framejit has converted in this process."""
    frames = []
    for dead in list(cache.DEAD_FRAMES):          # compiled functions that died (their source read now)
        frames.append(dataclasses.replace(dead, source_lines=_source_lines_at(dead.filename, dead.firstlineno)))
    for code, state in cache.all_states():
        if not state.results and not state.recompile_reasons and state.eager_reason is None:
            continue
        frames.append(frame_info(code, state))
    frames.sort(key=lambda f: (f.filename, f.firstlineno, f.origin is not None, f.name))
    for i, f in enumerate(frames):
        f.anchor = f"frame-{i}"
    entries = metrics()
    return ReportData(frames, _times(entries), entries)


def frame_info(code, state, with_source=True):
    """The report's plain-data view of one cache state (without its source lines: None)."""
    orig_code, _ = resume.original_position(code, 0)
    origin = orig_code.co_qualname if orig_code is not code else None
    info = FrameInfo(anchor="", name=code.co_qualname, filename=orig_code.co_filename,
                     firstlineno=orig_code.co_firstlineno,
                     source_lines=_source_lines(orig_code) if with_source else None, origin=origin,
                     eager_reason=state.eager_reason, recompile_reasons=list(state.recompile_reasons),
                     conversions=state.conversions)
    for result in list(state.results):
        info.entries.append(EntryInfo(
            kind=result.kind, reason=result.reason,
            guards=guard_descriptions(result.guards),
            breaks=list(result.breaks), graph=_graph(result.graph, result.op_count),
            transformed_source=result.source_text, recompile_reason=getattr(result, "recompile_reason", None),
            record_path=str(getattr(result, "record_path", None) or "") or None))
    return info


def _source_lines_at(filename, firstlineno):
    """The lines of the block starting at `firstlineno` in `filename` (what inspect.getsourcelines reads,
    without the module search that needs the code object)."""
    lines = linecache.getlines(filename)
    if not lines or firstlineno > len(lines):
        return []
    try:
        block = inspect.getblock(lines[firstlineno - 1:])
    except Exception:
        block = lines[firstlineno - 1:firstlineno]
    return [(firstlineno + i, text.rstrip("\n")) for i, text in enumerate(block)]


def _source_lines(code):
    try:
        lines, start = inspect.getsourcelines(code)
    except (OSError, TypeError):
        lines = [linecache.getline(code.co_filename, code.co_firstlineno)]
        start = code.co_firstlineno
        if not lines[0]:
            return []
    return [(start + i, text.rstrip("\n")) for i, text in enumerate(lines)]


def _graph(gm, op_count):
    if gm is None:
        return None
    nodes = []
    for n in gm.graph.nodes:
        inputs = [a.name for a in n.all_input_nodes]
        nodes.append(GraphNode(n.name, n.op, safely(lambda: _node_label(n), "the target"), inputs))
    return GraphInfo(gm.code.strip(), nodes, op_count)


def _node_label(n):
    if n.op == "placeholder":
        return n.meta.get("source", n.target) if isinstance(n.meta.get("source"), str) else str(n.target)
    if n.op == "output":
        return "output"
    if n.op == "call_method":
        return f".{n.target}()"
    if n.op == "get_attr":
        return f"self.{n.target}"
    t = n.target
    name = getattr(t, "__name__", None) or str(t)
    module = getattr(t, "__module__", None) or ""
    if module.startswith("torch") and not name.startswith("torch"):
        short = module.replace("torch._C._nn", "F").replace("torch.nn.functional", "F").replace("torch._C", "torch")
        return f"{short.split('.')[-1] if short != 'torch' else 'torch'}.{name}"
    if module in ("_operator", "operator"):
        return f"operator.{name}"
    return name


def _lines_in(where):
    out = []
    for part in (where or "").split("line ")[1:]:
        digits = part.split(",")[0].split()[0] if part else ""
        if digits.isdigit():
            out.append(int(digits))
    return out


def _times(entries):
    rows = {}
    for m in entries:
        p = m.phase_times
        total = m.entire_frame_compile_time_s or sum(p.get(x, 0.0) for x in ("bytecode_analysis", "translate",
                                                                              "backend_compile", "codegen"))
        parts = {
            "bytecode_analysis": p.get("bytecode_analysis", 0.0),
            "translate (symbolic)": max(p.get("translate", 0.0) - p.get("fake_propagation", 0.0), 0.0),
            "fake_propagation": p.get("fake_propagation", 0.0),
            "backend_compile": p.get("backend_compile", 0.0),
            "codegen": max(p.get("codegen", 0.0) - p.get("guard_build", 0.0), 0.0),
            "guard_build": p.get("guard_build", 0.0),
        }
        parts["setup & other"] = max(total - sum(parts.values()), 0.0)
        row = rows.get(m.frame_key)
        if row is None:
            rows[m.frame_key] = TimeRow(m.frame_key, 1, parts, total)
        else:
            row.conversions += 1
            row.total += total
            for k, v in parts.items():
                row.parts[k] += v
    return sorted(rows.values(), key=lambda r: -r.total)


cache.DEAD_FRAME_INFO[0] = frame_info      # dying cache states are summed up by frame_info (runtime/cache.py)
