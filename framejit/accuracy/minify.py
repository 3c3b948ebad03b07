"""Shrink a graph whose compiled answer differs from its fx code to the smallest set of nodes that still
differs (delta debugging over fx nodes).

Every node's eager value is computed once (the graph run by fx's Interpreter on cloned inputs, RNG
preserved). A candidate is a subset of the graph's compute nodes: it becomes a graph of its own whose
placeholders are the values its nodes read from outside the subset (fed with those eager values) and
whose outputs are all its nodes' tensors. The candidate "fails" when the backend compiles it and the
compiled run differs from the candidate's own fx code (`compare.first_difference`). `ddmin` (Zeller's
delta debugging) then removes chunks of nodes, halving the chunk size, until no single node can be
dropped: the answer is a 1-minimal failing set, for a backend that gets one op wrong that op alone.

A subset that needs a value holding tensors inside a container (a tuple from `split`) from outside is not
tried (it counts as passing); the search stops after `max_tests` compilations and answers with the
smallest failing set found so far.
"""
from __future__ import annotations

import dataclasses

import torch
from torch import fx

from .compare import first_difference
from .inputs import clone_inputs, preserve_rng_state

COMPUTE_OPS = ("call_function", "call_method", "call_module")


@dataclasses.dataclass
class MinifiedGraph:
    """The smallest failing subgraph found: its nodes (of the original graph), the subgraph as a
    GraphModule, its example inputs (eager values), the difference it shows, and how many tests ran."""
    nodes: list
    graph_module: fx.GraphModule
    inputs: list
    difference: str
    tests: int

    def describe(self):
        lines = [f"{len(self.nodes)} node(s) of the graph still differ on their own ({self.tests} tests):"]
        for node in self.nodes:
            lines.append(f"  {describe_node(node)}")
        lines.append(f"  difference: {self.difference}")
        return "\n".join(lines)


def describe_node(node):
    """'relu = torch.relu(add)  (File "f.py", line 12, in f)' for a node, with its source line when known."""
    text = f"{node.name} = {target_name(node.target)}({', '.join(str(a) for a in node.args)})"
    where = _source_line(node)
    return f"{text}  ({where})" if where else text


def target_name(target):
    """A node target as a person reads it: torch.relu, operator.add, aten.add.Tensor, a method's name."""
    if isinstance(target, str):
        return f".{target}"
    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return str(target)
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or repr(target)
    if name.startswith("_VariableFunctionsClass."):
        return f"torch.{target.__name__}"           # torch.relu and the other torch.* builtins
    module = getattr(target, "__module__", None) or getattr(getattr(target, "__self__", None), "__name__", None)
    module = {"_operator": "operator", "torch._C._nn": "torch._C._nn"}.get(module, module)
    return f"{module}.{name}" if module else name


def _source_line(node):
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    lines = [ln.strip() for ln in trace.strip().splitlines() if ln.strip().startswith("File ")]
    return lines[-1] if lines else trace.strip().splitlines()[-1].strip()


def minify(gm, inputs, backend, *, max_tests=200, compare=first_difference):
    """The smallest failing subgraph of `gm` (a MinifiedGraph) under `backend` (a framejit backend,
    `backend(GraphModule, example_inputs) -> callable`) for the real `inputs`, or None when the whole
    graph, rebuilt node by node, does not fail (the difference lies outside the nodes)."""
    values = _eager_values(gm, inputs)
    nodes = [n for n in gm.graph.nodes if n.op in COMPUTE_OPS]
    search = _Search(values, backend, compare, max_tests)
    if search.failure(nodes) is None:
        return None
    found = ddmin(nodes, lambda subset: search.failure(subset) is not None, lambda: search.tests >= max_tests)
    sub_gm, sub_inputs = _subgraph(found, values)
    return MinifiedGraph(found, sub_gm, sub_inputs, search.failure(found), search.tests)


def ddmin(items, fails, exhausted=lambda: False):
    """Zeller's ddmin: a 1-minimal sublist of `items` (order kept) for which `fails(sublist)` is true,
    given that `fails(items)` is."""
    n = 2
    while len(items) >= 2 and not exhausted():
        chunk = -(-len(items) // n)
        parts = [items[i:i + chunk] for i in range(0, len(items), chunk)]
        reduced = False
        for part in parts:
            if fails(part):
                items, n, reduced = part, 2, True
                break
        if not reduced and len(parts) > 2:
            for i in range(len(parts)):
                rest = [x for j, part in enumerate(parts) if j != i for x in part]
                if fails(rest):
                    items, n, reduced = rest, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(items):
                break
            n = min(len(items), 2 * n)
        if exhausted():
            break
    return items


class _Search:
    def __init__(self, values, backend, compare, max_tests):
        self.values = values
        self.backend = backend
        self.compare = compare
        self.max_tests = max_tests
        self.tests = 0
        self.seen = {}

    def failure(self, subset):
        key = tuple(n.name for n in subset)
        if key not in self.seen:
            self.seen[key] = self._run(subset)
        return self.seen[key]

    def _run(self, subset):
        built = _subgraph(subset, self.values)
        if built is None:
            return None
        sub_gm, sub_inputs = built
        self.tests += 1
        try:
            with preserve_rng_state():
                expected = sub_gm(*clone_inputs(sub_inputs))
            compiled = self.backend(sub_gm, clone_inputs(sub_inputs))
            with preserve_rng_state():
                actual = compiled(*clone_inputs(sub_inputs))
        except Exception:
            return None          # another failure than the one looked for
        return self.compare(expected, actual)


def _eager_values(gm, inputs):
    """{node: its value} for every node of gm run on cloned inputs."""
    runner = fx.Interpreter(gm, garbage_collect_values=False)
    grad_mode = torch.is_grad_enabled()
    with preserve_rng_state():
        try:
            runner.run(*clone_inputs(list(inputs)))
        finally:
            torch._C._set_grad_enabled(grad_mode)
    return dict(runner.env)


def _holds_tensor(value):
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_tensor(v) for v in value.values())
    return False


def _subgraph(subset, values):
    """(GraphModule computing `subset` from placeholders, its inputs), or None when a value it reads from
    outside cannot be a placeholder (a container holding tensors)."""
    inside = set(subset)
    graph = fx.Graph()
    mapped, inputs, placeholders = {}, [], {}

    def outside(node):
        if node in placeholders:
            return placeholders[node]
        value = values.get(node)
        if isinstance(value, torch.Tensor):
            placeholders[node] = graph.placeholder(f"in_{node.name}")
            inputs.append(value)
            return placeholders[node]
        if _holds_tensor(value):
            raise _NotAPlaceholder
        placeholders[node] = value          # a number, a size, a dtype: a constant of the subgraph
        return value

    try:
        for node in subset:
            mapped[node] = graph.node_copy(node, lambda n: mapped[n] if n in inside else outside(n))
    except _NotAPlaceholder:
        return None
    outs = [mapped[n] for n in subset if isinstance(values.get(n), torch.Tensor)]
    if not outs:
        return None
    graph.output(tuple(outs))
    root = subset[0].graph.owning_module if subset else None
    gm = fx.GraphModule(root if root is not None else torch.nn.Module(), graph)
    return gm, inputs


class _NotAPlaceholder(Exception):
    pass
