"""A graph that calls N identical blocks (transformer layers, residual blocks) cut into pieces, one per
block, so that the backend compiles each distinct block once.

Why this exists (issue 23's "12 identical blocks", issue 24's cold start): `framejit.compile(model)` on a
model whose forward loops over its layers gives one graph with the layer unrolled N times, and inductor
lowers and C++-compiles the same layer N times. Here the graph is cut at the blocks' edges and each
piece goes through the rest of the pipeline on its own; the backend's compiler is a
`same_graphs.SharedCompiles`, so the pieces of identical blocks (each block's parameters are inputs of
its piece) share one compiled callable. The conversion, its graph count and its break count are
unchanged: this happens inside one backend call. Autograd crosses the pieces as it crosses the regions
of state_regions.py (one Function per piece), which is what regional compilation does. It runs only
when asked for (FRAMEJIT_REPEATED_BLOCKS=1, backends/inductor.py): the pieces cost per call.

Where a block is: the translator marks every node made inside an inlined module call with the calls it
is in (`node.meta["framejit_module_calls"]`, outermost first, each `(call number, module class)`;
translate/lookasides/modules.py). A block is one such call whose nodes are a contiguous run of the graph.
Blocks of the same class whose pieces have the same `structure_key` are one block, repeated; the
outermost repeated blocks are cut out (a layer, not the Linear inside it), and only blocks of at least
MIN_BLOCK_OPS ops (smaller ones would lose more fusion and per-call time at their edges than they save).

A block is left in place, when unsure, if it: switches grad mode, inference mode, autocast or the random
generator (state switches; the region pass before this one has already cut at those); writes in place
into memory it did not allocate itself (BatchNorm's running statistics, an input's `add_`); or returns
a tensor on the storage of one of its inputs (a view of an input). A graph with sizes read from data
(unbacked symbols) is not cut. Random ops stay in order (inductor
runs with `fallback_random`: torch's own kernels, one draw after another), so they may be inside.
"""
import torch.fx as fx

from .. import inductor_aoti
from ..in_place import written_values
from ..same_graphs import storage_key, structure_key
from .state_regions import _subgraph, _written_storages, is_switch

MODULE_CALLS = "framejit_module_calls"
MIN_BLOCK_OPS = 5


def apply(gm, example_inputs, compile_rest):
    """The pass: `gm` cut into pieces when it holds repeated blocks (see the module doc), else the rest.
    A graph whose library is built now (FRAMEJIT_CACHE_AOTI=1, stored_libraries.py) stays whole."""
    pieces = None if inductor_aoti.builds_library_now(gm, example_inputs) else plan(gm)
    if pieces is None:
        return compile_rest(gm, example_inputs)
    return compile_pieces(gm, pieces, compile_rest)


def _compute_nodes(gm):
    return [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")]


def _calls(nodes):
    """{call: [positions of its nodes]} for every module call some node is in, and {call: depth}."""
    positions, depth = {}, {}
    for i, node in enumerate(nodes):
        for d, call in enumerate(node.meta.get(MODULE_CALLS, ())):
            positions.setdefault(call, []).append(i)
            depth[call] = d
    return positions, depth


def _block_piece(gm, nodes):
    """(piece GraphModule, its inputs' example values) for `nodes`, or None when it must stay in place."""
    if any(n.op == "call_function" and is_switch(n.target) for n in nodes):
        return None
    sub, inputs, outputs = _subgraph(gm, nodes)
    fakes = [n.meta.get("example_value") for n in inputs]
    if any(f is None for f in fakes):
        return None
    made_inside = {storage_key(n.meta.get("example_value")) for n in nodes
                   if hasattr(n.meta.get("example_value"), "untyped_storage")}
    outside = {storage_key(f) for f in fakes if hasattr(f, "untyped_storage")}
    for node in nodes:
        for written in written_values(node):
            fake = written.meta.get("example_value") if isinstance(written, fx.Node) else None
            key = storage_key(fake) if hasattr(fake, "untyped_storage") else None
            if key is None or key in outside or key not in made_inside:
                return None
    for node in outputs:
        fake = node.meta.get("example_value")
        if hasattr(fake, "untyped_storage") and storage_key(fake) in outside:
            return None
    return sub, fakes


def plan(gm):
    """The graph's compute nodes as pieces in order, [("block" | "rest", nodes)], with at least two
    blocks of one structure; None when there are no repeated blocks."""
    nodes = _compute_nodes(gm)
    if any("unbacked_bindings" in n.meta for n in nodes):
        return None                                 # sizes read from data: kept in one graph, as before
    positions, depth = _calls(nodes)
    taken = [False] * len(nodes)
    blocks = []                                     # (first position, last position)
    for level in sorted(set(depth.values())):
        groups = {}
        for call, where in positions.items():
            if depth[call] != level or len(where) < MIN_BLOCK_OPS or where[-1] - where[0] + 1 != len(where):
                continue
            if any(taken[i] for i in where):
                continue
            piece = _block_piece(gm, [nodes[i] for i in where])
            key = structure_key(*piece) if piece is not None else None
            if key is not None:
                groups.setdefault((call[1], key), []).append(where)
        for group in groups.values():
            if len(group) < 2:
                continue
            for where in group:
                for i in where:
                    taken[i] = True
                blocks.append((where[0], where[-1]))
    if not blocks:
        return None
    pieces, at = [], 0
    for first, last in sorted(blocks):
        if first > at:
            pieces.append(("rest", nodes[at:first]))
        pieces.append(("block", nodes[first:last + 1]))
        at = last + 1
    if at < len(nodes):
        pieces.append(("rest", nodes[at:]))
    return pieces


def compile_pieces(gm, pieces, compile_piece):
    """A callable running `gm` piece by piece, each piece compiled by `compile_piece(sub_gm, fakes)`."""
    steps = []
    written = set()                       # storages the pieces so far write in place (state_regions.py)
    for _, nodes in pieces:
        sub, inputs, outputs = _subgraph(gm, nodes, frozenset(written))
        written |= _written_storages(nodes)
        fakes = [n.meta.get("example_value") for n in inputs]
        run = compile_piece(sub, fakes) if all(f is not None for f in fakes) else sub
        steps.append((run, inputs, outputs))
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    result = next(n for n in gm.graph.nodes if n.op == "output").args[0]
    return _piece_runner(placeholders, steps, result)


def _piece_runner(placeholders, steps, result):
    """run_pieces(*args): the steps in order over a list of slots, each value let go after its last
    use (as eager frees a layer's activations once the next layer has read them)."""
    slot = {n: i for i, n in enumerate(placeholders)}
    for _, _, outputs in steps:
        for node in outputs:
            slot.setdefault(node, len(slot))
    returned = set()
    fx.node.map_arg(result, returned.add)
    last_use = {}
    for i, (_, inputs, _) in enumerate(steps):
        for node in inputs:
            last_use[node] = i
    plan = [(run, [slot[n] for n in inputs], [slot[n] for n in outputs],
             [slot[n] for n, at in last_use.items() if at == i and n not in returned])
            for i, (run, inputs, outputs) in enumerate(steps)]
    size, result_slot = len(slot), slot.__getitem__

    def run_pieces(*args):
        env = [*args, *[None] * (size - len(args))]
        for run, ins, outs, frees in plan:
            for i, value in zip(outs, run(*[env[i] for i in ins])):
                env[i] = value
            for i in frees:
                env[i] = None
        return fx.node.map_arg(result, lambda n: env[result_slot(n)])
    return run_pieces
