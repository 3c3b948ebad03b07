"""A graph cut where grad mode or inference mode switches: AOT autograd only where grad is on.

Why this exists: AOT autograd (aot_eager, inductor) turns a whole graph into one autograd.Function,
traced with grad mode on. A graph with a `no_grad` or `inference_mode` block inside does not fit that
mould, and each way it differs from eager is a wrong result or worse:

* a view made under no_grad comes back with a grad_fn, and backward through it fills the base's .grad;
* a parameter written in place under no_grad gets a zero gradient instead of None;
* a view made and written under no_grad is refused by the joint trace;
* the trace runs `_enter_inference_mode` for real inside its own dispatch modes, and when it fails the
  inference-mode guard, still alive in the traceback, later restores the thread-local dispatch state of
  the middle of the trace (inference mode stays on, then torch asserts).

So such a graph is cut into regions at its state switches. A region where grad is on is compiled by the
given compiler (one Function each); a region where grad is off or inference mode is on runs as the fx
code it is: eager's own ops in eager's own mode, which is exactly what eager would do there, and there
is no backward to compile. The switches themselves run between the regions, in order; when a region
raises, open inference-mode handles are closed and grad mode is put back, as the with-blocks would.
"""
import torch
import torch.fx as fx

from .in_place import writes_in_place

_set_grad_enabled = torch._C._set_grad_enabled
_enter_inference_mode = torch.autograd.grad_mode._enter_inference_mode
_exit_inference_mode = torch.autograd.grad_mode._exit_inference_mode
SWITCHES = frozenset({_set_grad_enabled, _enter_inference_mode, _exit_inference_mode})


def needs_regions(gm, grad_at_entry):
    """Must `gm` be compiled region by region: grad off somewhere, or independent parts (see
    `independent_parts`)?"""
    groups = regions(gm.graph, grad_at_entry)
    return [kind for kind, _ in groups] != ["grad"] or len(independent_parts(groups)) > 1


def regions(graph, grad_at_entry):
    """The graph's compute nodes in order, grouped: ("switch", [node]) for each state switch, else
    ("grad", nodes) or ("plain", nodes) for a maximal run under one mode."""
    grad, inference = grad_at_entry, []
    groups = []
    for node in graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node.op == "call_function" and node.target in SWITCHES:
            groups.append(("switch", [node]))
            if node.target is _set_grad_enabled:
                grad = bool(node.args[0])
            elif node.target is _enter_inference_mode:
                inference.append(node)
            elif inference:
                inference.pop()
            continue
        kind = "grad" if grad and not inference else "plain"
        if not groups or groups[-1][0] != kind:
            groups.append((kind, []))
        groups[-1][1].append(node)
    return groups


def independent_parts(groups):
    """`groups` with each grad region split into the parts that share no computed value (connected
    through inputs only), when nothing in it writes in place. One Function per part, as eager has one
    autograd history per part: a backward or autograd.grad through one part (which frees what that part
    saved) leaves the others' saved values alone."""
    out = []
    for kind, nodes in groups:
        if kind != "grad" or len(nodes) < 2 or any(writes_in_place(n) for n in nodes):
            out.append((kind, nodes))
            continue
        part_of = {}
        parts = []
        for node in nodes:
            joined = {part_of[u] for u in node.all_input_nodes if u in part_of}
            if not joined:
                parts.append([node])
                part_of[node] = len(parts) - 1
                continue
            keep = min(joined)
            for other in sorted(joined - {keep}):
                for moved in parts[other]:
                    part_of[moved] = keep
                parts[keep] += parts[other]
                parts[other] = []
            parts[keep].append(node)
            part_of[node] = keep
        order = {n: i for i, n in enumerate(nodes)}
        out += [(kind, sorted(part, key=order.__getitem__)) for part in parts if part]
    return out


def _subgraph(gm, nodes):
    """A GraphModule computing `nodes` from the values they read outside themselves; returns it with
    those outside values (its inputs, in order) and the values it hands on (its outputs, in order)."""
    inside = set(nodes)
    inputs = []
    for node in nodes:
        for used in node.all_input_nodes:
            if used not in inside and used not in inputs:
                inputs.append(used)
    graph = fx.Graph()
    env = {}
    for used in inputs:
        env[used] = graph.placeholder(used.name)
        env[used].meta = dict(used.meta)
    for node in nodes:
        env[node] = graph.node_copy(node, lambda a: env[a])
    outputs = [n for n in nodes if any(user not in inside for user in n.users) or _dead_tensor(n)]
    graph.output(tuple(env[n] for n in outputs))
    return fx.GraphModule(gm, graph), inputs, outputs


def with_dead_tensors_out(gm):
    """(gm, None) when every tensor the graph computes is read; else a copy of gm that also returns the
    dead ones after its results, and the number of its results (see `_dead_tensor`)."""
    dead = [n for n in gm.graph.nodes if _dead_tensor(n)]
    if not dead:
        return gm, None
    graph, copies = fx.Graph(), {}
    results = graph.graph_copy(gm.graph, copies)
    graph.output(tuple(results) + tuple(copies[n] for n in dead))
    return fx.GraphModule(gm, graph), len(results)


def _dead_tensor(node):
    """A tensor nothing reads: handed out anyway, so no compiler drops it (a dead random op still draws
    its numbers, as eagerly)."""
    return not node.users and node.op == "call_function" and \
        isinstance(node.meta.get("example_value"), torch.Tensor)


def compile_by_regions(gm, grad_at_entry, compile_region):
    """A callable running `gm` region by region (see the module doc); `compile_region(sub_gm, fakes)`
    compiles a region where grad is on (fakes: its inputs' example values from the conversion)."""
    steps = []
    for kind, nodes in independent_parts(regions(gm.graph, grad_at_entry)):
        if kind == "switch":
            steps.append((None, nodes[0], None))
            continue
        sub, inputs, outputs = _subgraph(gm, nodes)
        fakes = [n.meta.get("example_value") for n in inputs]
        run = sub
        if kind == "grad" and all(f is not None for f in fakes):
            with torch.enable_grad():               # the mode it runs in, whatever the graph starts in
                run = compile_region(sub, fakes)
        steps.append((run, inputs, outputs))
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    result = next(n for n in gm.graph.nodes if n.op == "output").args[0]

    def run_regions(*args):
        env = dict(zip(placeholders, args))
        grad_mode = torch.is_grad_enabled()
        handles = []
        try:
            for run, inputs, outputs in steps:
                if run is None:
                    node = inputs
                    value = node.target(*fx.node.map_arg(node.args, env.__getitem__),
                                        **fx.node.map_arg(node.kwargs, env.__getitem__))
                    env[node] = value
                    if node.target is _enter_inference_mode:
                        handles.append(value)
                    elif node.target is _exit_inference_mode and handles:
                        handles.pop()
                    continue
                env.update(zip(outputs, run(*[env[n] for n in inputs])))
            return fx.node.map_arg(result, env.__getitem__)
        except BaseException:
            for handle in reversed(handles):
                _exit_inference_mode(handle)
            _set_grad_enabled(grad_mode)
            raise
    return run_regions
