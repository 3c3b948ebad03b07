"""A graph cut where grad mode, inference mode or autocast switches: AOT autograd only where grad is on
and autocast is off.

Why this exists: AOT autograd (aot_eager, inductor) turns a whole graph into one autograd.Function,
traced with grad mode on. A graph with a `no_grad` or `inference_mode` block inside does not fit that
mould, and each way it differs from eager is a wrong result or worse:

* a view made under no_grad comes back with a grad_fn, and backward through it fills the base's .grad;
* a parameter written in place under no_grad gets a zero gradient instead of None;
* a view made and written under no_grad is refused by the joint trace;
* the trace runs `_enter_inference_mode` for real inside its own dispatch modes, and when it fails the
  inference-mode guard, still alive in the traceback, later restores the thread-local dispatch state of
  the middle of the trace (inference mode stays on, then torch asserts).

Autocast does not fit either. AOT autograd traces the casts autocast inserts into its forward, but its
backward is traced under the autocast state of compile time (functorch's `backward_pass_autocast`),
where eager's backward runs under the state of whoever calls `backward()` (gradients differed by 1e-2
in bfloat16); its runtime wrapper turns autocast off around the compiled code, so an `_enter_autocast`
node traced into it has no effect (a block after a no_grad block came out float32), and the handle an
enter node returns cannot cross into a traced region at all ("argument of type _UnmanagedAutocast").

So such a graph is cut into regions at its state switches. A region where grad is on and autocast is
off (the state at entry and every `_enter_autocast` / `_exit_autocast` node followed) is compiled by
the given compiler (one Function each); a region where grad is off, inference mode is on or autocast
is on runs as the fx code it is: eager's own ops in eager's own mode, which is exactly what eager would
do there (autocast's casts and their backward included). A `requires_grad_` node runs so too (the new
leaf it makes cannot come out of a traced Function). Under inductor (`COMPILING_NO_GRAD`) a region
where only grad is off is compiled too, with grad off (AOT autograd's inference path: no Function, no
backward, nothing of the above applies), so a graph run under no_grad keeps its kernels; aot_eager runs
such regions as fx code. The switches themselves run between the
regions, in order; when a region raises, open inference-mode and autocast handles are closed (innermost
first) and grad mode is left as eager's with-blocks leave it (the `UNWIND_GRAD` mark of the last switch run).
"""
import torch
import torch.fx as fx
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

from ..in_place import written_values as writes_of
from ..same_graphs import storage_key as _storage_key
from .dead_tensors import handed_out, is_dead_tensor
from ...random_draws import node_may_draw

_set_grad_enabled = torch._C._set_grad_enabled
_enter_inference_mode = torch.autograd.grad_mode._enter_inference_mode
_exit_inference_mode = torch.autograd.grad_mode._exit_inference_mode
_enter_autocast = torch.amp.autocast_mode._enter_autocast
_exit_autocast = torch.amp.autocast_mode._exit_autocast
# a graph closing an autocast block at a graph break first holds one count of autocast's nesting, so the
# close keeps the cast cache (translate/values/managers/state_managers.py close_open_autocast)
_hold_autocast_cache = torch.autocast_increment_nesting
# reseeding the global generator (translate/lookasides/random_seeding.py): run for real between regions,
# so the random ops of the regions before and after draw from the streams eager's do
RNG_SWITCHES = frozenset({torch.random.manual_seed, torch.random.seed, torch.random.set_rng_state})
# a record_function block (translate/lookasides/profiler_blocks.py): its enter and exit run for real between
# regions, so a running profiler records the range around the compiled code as eagerly. Inside a region
# they broke inductor (its post-grad pass erases them, but AOT autograd had made the enter's handle an
# output: "Tried to erase Node _record_function_enter_new", and the frame ran as Python: SGD.step)
_enter_record_function = torch.ops.profiler._record_function_enter_new
_exit_record_function = torch.ops.profiler._record_function_exit._RecordFunction
PROFILER_SWITCHES = frozenset({_enter_record_function, _enter_record_function.default, _exit_record_function})
SWITCHES = frozenset({_set_grad_enabled, _enter_inference_mode, _exit_inference_mode, _enter_autocast,
                      _exit_autocast, _hold_autocast_cache}) | RNG_SWITCHES | PROFILER_SWITCHES
# the switches that open a block, and the one that closes each (their handles are closed on an error)
_CLOSERS = {_enter_inference_mode: _exit_inference_mode, _enter_autocast: _exit_autocast,
            _enter_record_function: _exit_record_function, _enter_record_function.default: _exit_record_function}
# Other switches mark themselves (the translator's kernel-flag blocks, translate/lookasides/backend_flags.py,
# which this layer does not import): `fn.framejit_state_switch` is the closer of the block fn opens, or
# True for a closer or a switch that opens nothing.
MARK = "framejit_state_switch"


def is_switch(target):
    return target in SWITCHES or getattr(target, MARK, None) is not None


def _closer(target):
    marked = getattr(target, MARK, None)
    return _CLOSERS.get(target) or (marked if callable(marked) else None)


def _closes(target):
    return target in (_exit_inference_mode, _exit_autocast, _exit_record_function) or \
        getattr(target, MARK, None) is True
AUTOCAST_DEVICES = ("cpu", "cuda")
# node.meta key: the grad mode a raise after this grad-mode switch leaves, None: as it is (the translator's
# translate/values/managers/raise_unwinding.py sets it; this layer does not import translate/)
UNWIND_GRAD = "framejit_unwind_grad"
_GRAD_SWITCHES = frozenset({_set_grad_enabled, _enter_inference_mode, _exit_inference_mode})


class StateRegions:
    """The pass, compiling no-grad regions or not (see the module doc)."""

    def __init__(self, compile_no_grad):
        self.compile_no_grad = compile_no_grad

    def apply(self, gm, example_inputs, compile_rest):
        """`gm` cut into regions when grad is off or autocast on somewhere in it, or it has independent
        parts (each compiled region goes through `compile_rest`, the others run as fx code); else
        `compile_rest(gm, example_inputs)`."""
        grad, autocast = torch.is_grad_enabled(), autocast_now()
        if needs_regions(gm, grad, autocast, self.compile_no_grad):
            return compile_by_regions(gm, grad, compile_rest, autocast, self.compile_no_grad)
        return compile_rest(gm, example_inputs)


apply = StateRegions(compile_no_grad=False).apply        # aot_eager's
COMPILING_NO_GRAD = StateRegions(compile_no_grad=True)   # inductor's


def autocast_now():
    """{device: autocast enabled} for the devices a graph's autocast blocks may name, as they are now."""
    return {device: torch.is_autocast_enabled(device) for device in AUTOCAST_DEVICES}


def needs_regions(gm, grad_at_entry, autocast_at_entry=None, compile_no_grad=False):
    """Must `gm` be compiled region by region: grad off (unless `compile_no_grad` and only grad is off,
    throughout) or autocast on somewhere, or independent parts (see `independent_parts`)?"""
    groups = regions(gm.graph, grad_at_entry, autocast_at_entry, compile_no_grad)
    return [kind for kind, _ in groups] not in (["grad"], ["no_grad"]) or len(independent_parts(groups)) > 1


def regions(graph, grad_at_entry, autocast_at_entry=None, split_no_grad=False):
    """The graph's compute nodes in order, grouped: ("switch", [node]) for each state switch, else
    ("grad", nodes) or ("plain", nodes) for a maximal run under one mode (with `split_no_grad`,
    "no_grad" for a run where only grad is off). `autocast_at_entry`: {device: enabled} when the graph
    starts (None: off everywhere)."""
    grad, inference = grad_at_entry, []
    autocast = dict(autocast_at_entry or {})
    autocast_blocks = []                      # (enter node, device, the enabled flag it replaced)
    eager_written = _inputs_given_history(graph)
    groups = []
    for node in graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        if node.op == "call_function" and is_switch(node.target):
            groups.append(("switch", [node]))
            if node.target is _set_grad_enabled:
                grad = bool(node.args[0])
            elif node.target is _enter_inference_mode:
                inference.append(node)
            elif node.target is _exit_inference_mode:
                if inference:
                    inference.pop()
            elif node.target is _hold_autocast_cache or node.target in RNG_SWITCHES or \
                    node.target in PROFILER_SWITCHES or node.target not in SWITCHES:
                pass                          # (no grad or autocast state of its own)
            elif node.target is _enter_autocast:
                device, enabled = _autocast_block(node)
                autocast_blocks.append((node, device, autocast.get(device, False)))
                autocast[device] = enabled
            else:
                opened = next((i for i in range(len(autocast_blocks) - 1, -1, -1)
                               if autocast_blocks[i][0] is node.args[0]), None)
                if opened is None:            # a block this graph did not open: state unknown, assume on
                    autocast["?"] = True
                else:
                    _, device, before = autocast_blocks.pop(opened)
                    autocast[device] = before
            continue
        plain_ops = not inference and not any(autocast.values()) and not _storage_keys(node) & eager_written \
            and not _sets_requires_grad(node)
        kind = "grad" if grad and plain_ops else "no_grad" if split_no_grad and plain_ops else "plain"
        if not groups or groups[-1][0] != kind:
            groups.append((kind, []))
        groups[-1][1].append(node)
    return groups


def _sets_requires_grad(node):
    """`t.requires_grad_(...)`: it makes t an autograd leaf of its own, which a traced Function cannot hand
    back (`x.clone().requires_grad_()` came out of AOT autograd not requiring grad), so it runs as eager's
    own op, between the regions before and after it."""
    return (node.op == "call_method" and node.target == "requires_grad_") or \
        (node.op == "call_function" and node.target is torch.Tensor.requires_grad_)


def _inputs_given_history(graph):
    """Storage keys of the graph's inputs that a node writes in place with a value requiring grad. The
    nodes on them (the write and the views it writes through) run as eager's own ops ("plain"): the
    input then hangs from that op's backward (`SubBackward0`, which autograd's errors name and which
    checks the versions it saved) as eagerly, where AOT autograd would copy the new value in
    (`CopyBackwards`)."""
    inputs_on = set().union(*[_storage_keys(n) for n in graph.nodes if n.op == "placeholder"]) - {None}
    keys = set()
    for node in graph.nodes:
        fake = node.meta.get("example_value")
        if isinstance(fake, torch.Tensor) and fake.requires_grad:
            for value in writes_of(node):
                keys |= _storage_keys(value) & inputs_on
    return keys


def _autocast_block(node):
    """(device, enabled) of an `_enter_autocast(device, dtype, enabled, cache_enabled)` node; an
    argument that is not a constant counts as enabled (the region then runs as its fx code)."""
    args = list(node.args) + [None] * 4
    device, enabled = args[0], args[2]
    device = device if isinstance(device, str) else "?"
    return device, enabled if isinstance(enabled, bool) else True


def independent_parts(groups):
    """`groups` with each grad region split into the parts that share no computed value (connected
    through inputs only). One Function per part, as eager has one autograd history per part: a backward
    or autograd.grad through one part (which frees what that part saved) leaves the others' saved values
    alone. The parts run one after another (in the order of their first nodes), so what must keep its
    order does: a node on a storage written in place after its first write joins that writer's part, a
    part reading it before the write runs before the writer's (else the two are one part), and the ops
    that draw random numbers are one part. A region where a written storage cannot be told stays whole."""
    out = []
    for kind, nodes in groups:
        order = _order_constraints(nodes) if kind == "grad" and len(nodes) > 1 else None
        if order is None:
            out.append((kind, nodes))
            continue
        joins, before = order
        part_of = {}
        before = list(before)
        for node in nodes:
            part_of[node] = node
            inside = [u for u in node.all_input_nodes if u in part_of]
            if _requires_grad(node) or "example_value" not in node.meta or writes_of(node) or \
                    _storage_keys(node) & set().union(*[_storage_keys(u) for u in inside]) - {None}:
                linked = inside                 # (a view stays with its base, a write with what it writes)
            else:                    # no autograd history flows through it (a `full_like(t)`, a mask) and it
                linked = []          # writes nothing: it may sit in another part, run after what it reads
                before += [(u, node) for u in inside]
            for other in linked + joins.get(node, []):
                _join(part_of, node, other)
        _join_gradless_parts(part_of, nodes)
        position = {n: i for i, n in enumerate(nodes)}
        while True:                  # a part reading a storage before its write runs first, or joins
            first = {}
            for node in nodes:
                first.setdefault(_root(part_of, node), position[node])
            late = [(r, w) for r, w in before if first[_root(part_of, r)] > first[_root(part_of, w)]]
            if not late:
                break
            for reader, writer in late:
                _join(part_of, reader, writer)
        parts = {}
        for node in nodes:
            parts.setdefault(_root(part_of, node), []).append(node)
        for part in parts.values():
            out += [(kind, stage) for stage in _stages(part, set(nodes))]
    return out


def _stages(part, region):
    """`part` cut after each value requiring grad that it hands out of the region and also reads itself:
    one Function per stage, in order. One Function saves what the gradients of all its outputs need and
    checks and frees all of it in any backward through any of them, where eager's backward through `t3`
    reaches t3's own history only (`t4 = t3 * (t3 * g)` live across a break, `g` written after it: the
    backward through t3 raised "modified by an inplace operation", fuzz seed 533128). When it is cut, each
    stage is cut again into the pieces that share no value computed in it (`_connected_pieces`). A part
    that draws random numbers stays whole, and so does one whose pieces would run the nodes on a storage
    it writes in place in another order than the graph's (the order of the parts is kept by
    `independent_parts`)."""
    if len(part) < 2 or any(node_may_draw(n) for n in part):
        return [part]
    inside = set(part)
    stage = {}
    for node in part:
        stage[node] = max([stage[u] + (1 if _requires_grad(u) and any(x not in region for x in u.users) else 0)
                           for u in node.all_input_nodes if u in inside] or [0])
    stages = {}
    for node in part:
        stages.setdefault(stage[node], []).append(node)
    if len(stages) == 1:
        return [part]
    pieces = [piece for k in sorted(stages) for piece in _connected_pieces(stages[k])]
    return pieces if _keeps_write_order(part, pieces) else [part]


def _keeps_write_order(part, pieces):
    """Do `pieces`, run one after another, run the nodes of `part` on a storage it writes in place (the
    writes, and what reads or views it) in the graph's order? False when a written storage cannot be told."""
    written = set()
    for node in part:
        for value in writes_of(node):
            written |= _storage_keys(value)
    if None in written:
        return False
    if not written:
        return True
    position = {node: i for i, node in enumerate(part)}
    on_written = [position[node] for piece in pieces for node in piece
                  if written & set().union(*[_storage_keys(v) for v in [node] + list(node.all_input_nodes)])]
    return on_written == sorted(on_written)


def _connected_pieces(stage):
    """`stage` split into the pieces that share no value computed in it, in the order of their first
    nodes: one Function each (the pieces where nothing requires grad are one piece). A stage can hold
    chains only a later stage connects (`t1 = lerp(w, e)` cut off beside `w.pow(2).sum()`, added to a
    product of t1 after the cut); as one Function, a first backward through the pow freed what a second
    backward through t1 needs, where eager's lerp saved nothing (fuzz seed 710248; that lerp alone then
    runs as eager's op: passes/nothing_saved.py)."""
    piece_of = {node: node for node in stage}
    for node in stage:
        for used in node.all_input_nodes:
            if used in piece_of:
                _join(piece_of, used, node)
    gradless = [node for node in stage if not any(_requires_grad(n) for n in stage
                                                  if _root(piece_of, n) is _root(piece_of, node))]
    for node in gradless[1:]:
        _join(piece_of, gradless[0], node)
    pieces = {}
    for node in stage:
        pieces.setdefault(_root(piece_of, node), []).append(node)
    return list(pieces.values())


def _join_gradless_parts(part_of, nodes):
    """Parts where nothing requires grad have no autograd history to keep apart: they join the first
    node's part instead of costing a Function each on every call (an `arange` of positions)."""
    with_grad = {_root(part_of, node) for node in nodes if _requires_grad(node)}
    for node in nodes:
        if _root(part_of, node) not in with_grad:
            _join(part_of, nodes[0], node)


def _requires_grad(node):
    """Does a tensor node's example value (or one of a tuple's) require grad?"""
    fake = node.meta.get("example_value")
    return any(isinstance(f, torch.Tensor) and f.requires_grad
               for f in (fake if isinstance(fake, (tuple, list)) else [fake]))


def _root(part_of, node):
    while part_of[node] is not node:
        node = part_of[node]
    return node


def _join(part_of, a, b):
    a, b = _root(part_of, a), _root(part_of, b)
    if a is not b:
        part_of[b] = a


def _order_constraints(nodes):
    """(joins, before) for `independent_parts`: joins {node: [earlier node it must share a part with]},
    before [(reader, writer)]: a node on a written storage before the storage's first write, and that
    write; None when a written storage cannot be told."""
    first_writer = {}                   # storage key (or "random") -> the first node writing it (drawing)
    for node in nodes:
        for value in writes_of(node):
            keys = _storage_keys(value)
            if not keys or None in keys:
                return None
            for key in keys:
                first_writer.setdefault(key, node)
        if node_may_draw(node):
            first_writer.setdefault("random", node)
    position = {n: i for i, n in enumerate(nodes)}
    joins, before = {}, []
    for node in nodes:
        on = set()
        for value in [node] + list(node.all_input_nodes):
            on |= _storage_keys(value) & first_writer.keys()
        if node_may_draw(node):
            on.add("random")
        for key in on:
            writer = first_writer[key]
            if position[node] < position[writer]:
                before.append((node, writer))
            elif writer is not node:
                joins.setdefault(node, []).append(writer)
    return joins, before


def _storage_keys(value):
    """Storage keys of the tensors a graph value is (a tensor, or a tuple or list of them) by its
    example value; {None} when it has none to tell by, set() when it holds no tensor."""
    fake = value.meta.get("example_value") if isinstance(value, fx.Node) else None
    if fake is None:
        return {None}
    fakes = fake if isinstance(fake, (tuple, list)) else [fake]
    return {_storage_key(f) for f in fakes if isinstance(f, torch.Tensor)}


def _subgraph(gm, nodes, written_before=frozenset()):
    """A GraphModule computing `nodes` from the values they read outside themselves; returns it with
    those outside values (its inputs, in order) and the values it hands on (its outputs, in order).
    `written_before`: storage keys of the values nodes before these write in place."""
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
        _set_grad_fn_at_entry(env[used].meta, used, written_before)
    for node in nodes:
        env[node] = graph.node_copy(node, lambda a: env[a])
    outputs = [n for n in nodes if any(user not in inside for user in n.users) or is_dead_tensor(n)]
    graph.output(tuple(handed_out(graph, env[n]) if is_dead_tensor(n) else env[n] for n in outputs))
    return fx.GraphModule(gm, graph), inputs, outputs



def _written_storages(nodes):
    """Storage keys of what `nodes` write in place; None in the set when one of them cannot be told."""
    keys = set()
    for node in nodes:
        for written in writes_of(node):
            fake = written.meta.get("example_value") if isinstance(written, fx.Node) else None
            keys.add(_storage_key(fake) if isinstance(fake, torch.Tensor) else None)
    return keys


def _set_grad_fn_at_entry(meta, used, written_before):
    """A region's input keeps the autograd identity it had when the region starts ("grad_fn_at_entry",
    read by none_grads.py to give eager's None gradients): a graph input's from the graph's entry, a value
    an earlier region made from when it was made; unknown (the key dropped) when an earlier region wrote
    its storage in place after that."""
    at_entry = meta.get("grad_fn_at_entry") if used.op == "placeholder" else meta.get("grad_fn_made")
    fake = meta.get("example_value")
    key = _storage_key(fake) if isinstance(fake, torch.Tensor) else None
    if at_entry is None or key is None or key in written_before or None in written_before:
        meta.pop("grad_fn_at_entry", None)
    else:
        meta["grad_fn_at_entry"] = at_entry


def compile_by_regions(gm, grad_at_entry, compile_region, autocast_at_entry=None, compile_no_grad=False):
    """A callable running `gm` region by region (see the module doc); `compile_region(sub_gm, fakes)`
    compiles a region where grad is on and autocast off, and with `compile_no_grad` one where only grad
    is off (fakes: its inputs' example values from the conversion); it is called in that state."""
    steps = []
    written = set()                       # storages the regions so far write in place
    for kind, nodes in independent_parts(regions(gm.graph, grad_at_entry, autocast_at_entry, compile_no_grad)):
        if kind == "switch":
            steps.append((None, nodes[0], None))
            continue
        sub, inputs, outputs = _subgraph(gm, nodes, frozenset(written))
        written |= _written_storages(nodes)
        fakes = [n.meta.get("example_value") for n in inputs]
        run = sub
        if kind in ("grad", "no_grad") and all(f is not None for f in fakes) and not _reads_unbacked(fakes):
            with torch.set_grad_enabled(kind == "grad"), _autocast_off():    # the state it runs in
                run = compile_region(sub, fakes)
        steps.append((run, inputs, outputs))
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    result = next(n for n in gm.graph.nodes if n.op == "output").args[0]

    def run_regions(*args):
        env = dict(zip(placeholders, args))
        grad_mode = torch.is_grad_enabled()
        unwind_grad = None
        handles = []
        try:
            for run, inputs, outputs in steps:
                if run is None:
                    node = inputs
                    if node.target in _GRAD_SWITCHES:      # unmarked (not the translator's): as at the start
                        unwind_grad = node.meta.get(UNWIND_GRAD, grad_mode)
                    value = node.target(*fx.node.map_arg(node.args, env.__getitem__),
                                        **fx.node.map_arg(node.kwargs, env.__getitem__))
                    env[node] = value
                    closer = _closer(node.target)
                    if closer is not None:
                        handles.append((closer, value))
                    elif handles and _closes(node.target):
                        handles.pop()
                    continue
                env.update(zip(outputs, run(*[env[n] for n in inputs])))
            return fx.node.map_arg(result, env.__getitem__)
        except BaseException:
            for close, handle in reversed(handles):
                close(handle)
            if unwind_grad is not None:
                _set_grad_enabled(unwind_grad)
            raise
    return run_regions


def _reads_unbacked(fakes):
    """Does a region take a value with a data-dependent (unbacked) symbol an earlier region made: an
    `.item()` number, a dynamic float read as `.item()` of its tensor (translate/graph/float_inputs.py), a
    `nonzero` size? A tracing compiler cannot take it: AOT autograd's pass that turns float symbols into
    tensors finds no definition of the symbol in the region ("KeyError: zuf0"), inductor none of the
    size ("KeyError: u0"). Such a region runs as its fx code: eager's ops in eager's mode."""
    return any(free_unbacked_symbols(f) for f in fakes
               if isinstance(f, (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool)))


class _autocast_off:
    """Autocast off on every device while a region is compiled (a tracing compiler traces the casts
    of the autocast state it is called in)."""

    def __enter__(self):
        self.before = [(device, torch.is_autocast_enabled(device)) for device in AUTOCAST_DEVICES]
        for device, _ in self.before:
            torch.set_autocast_enabled(device, False)

    def __exit__(self, *exc):
        for device, enabled in self.before:
            torch.set_autocast_enabled(device, enabled)
