"""A captured graph cut at DDP's gradient-bucket boundaries (the design of TorchDynamo's DDPOptimizer).

Why: a backend that compiles forward and backward as one unit (aot_eager, inductor) produces all of a
graph's parameter gradients at the end of its backward, so DDP's all-reduces could only start after the
whole backward. Cut into pieces, each ending where the parameters of one DDP bucket have all been used,
the backward of the last piece finishes the first bucket's gradients, whose all-reduce then runs while
autograd works through the earlier pieces.

How: the graph's nodes are walked in forward order; a node that uses a parameter of a bucket whose piece
comes later than the current one opens that piece (pieces only move forward, so every piece reads only
graph inputs and values of earlier pieces). Each piece becomes a GraphModule of its own, compiled by the
user's backend on its own example inputs (the graph's real inputs, and for values made by earlier pieces
zero-filled tensors of their metadata: nothing of the program runs at compile time, no random number is
drawn). The returned callable runs the pieces in order. Each cut is reported to explain() as a graph
break naming its DDP bucket.
"""
import torch
from torch import fx

SPLIT_REASONS = "_framejit_split_reasons"   # attribute of the compiled callable: one reason per cut


class BucketSplitBackend:
    """A backend that cuts each graph at the buckets of `ddp` (read at each compile: ddp_buckets) and
    compiles the pieces with `backend`."""

    def __init__(self, backend, buckets_of):
        self.backend = backend
        self.buckets_of = buckets_of      # () -> [[param, ...], ...] in all-reduce order
        self.__name__ = f"ddp_split({getattr(backend, '__name__', type(backend).__name__)})"

    def __call__(self, gm, example_inputs):
        return split_and_compile(gm, example_inputs, self.buckets_of(), self.backend)


def piece_of_nodes(gm, example_inputs, buckets):
    """{node: piece index} for the graph's computing nodes, and the bucket that opened each piece."""
    bucket_of = {id(p): b for b, params in enumerate(buckets) for p in params}
    last = len(buckets) - 1
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    opens = {}                                 # placeholder -> the piece a use of it needs
    for node, value in zip(placeholders, example_inputs):
        b = bucket_of.get(id(value))
        if b is not None:
            opens[node] = last - b             # the last bucket's parameters are used first
    piece, pieces, opened_by = 0, {}, {0: None}
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        wanted = max((opens[i] for i in node.all_input_nodes if i in opens), default=piece)
        if wanted > piece:
            piece = wanted
            opened_by[piece] = last - piece
        pieces[node] = piece
    used = sorted(set(pieces.values()))
    renumber = {p: i for i, p in enumerate(used)}
    return {n: renumber[p] for n, p in pieces.items()}, [opened_by.get(p) for p in used]


def split_and_compile(gm, example_inputs, buckets, backend):
    pieces, opened_by = piece_of_nodes(gm, example_inputs, buckets)
    if len(opened_by) <= 1:
        return backend(gm, example_inputs)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    output = next(n for n in gm.graph.nodes if n.op == "output")
    real = dict(zip(placeholders, example_inputs))
    count = len(opened_by)
    members = [[n for n in gm.graph.nodes if pieces.get(n) == i] for i in range(count)]
    needed_later = {}                          # node -> used outside its piece (later piece or output)
    for node in gm.graph.nodes:
        for used in node.all_input_nodes:
            if used in pieces and (node is output or pieces.get(node) != pieces[used]):
                needed_later[used] = True
    compiled = []
    for i, nodes in enumerate(members):
        inputs = []
        for n in nodes:
            for used in n.all_input_nodes:
                if pieces.get(used) != i and used not in inputs:
                    inputs.append(used)
        outputs = [n for n in nodes if n in needed_later]
        piece_gm = _piece_module(gm, nodes, inputs, outputs)
        examples = [real[n] if n in real else _stand_in(n.meta.get("example_value")) for n in inputs]
        compiled.append((backend(piece_gm, examples), inputs, outputs))
    runner = _make_runner(placeholders, compiled, output.args[0])
    setattr(runner, SPLIT_REASONS, [_reason(opened_by[i], i, count, buckets) for i in range(1, count)])
    return runner


def _reason(bucket, piece, count, buckets):
    size = sum(p.numel() * p.element_size() for p in buckets[bucket])
    return (f"DDP bucket {bucket} ({len(buckets[bucket])} parameters, {size} bytes): graph split for "
            f"DistributedDataParallel gradient bucket {bucket} (piece {piece + 1} of {count}), so its "
            "all-reduce overlaps the backward of the pieces before it")


def _piece_module(gm, nodes, inputs, outputs):
    graph = fx.Graph()
    env = {}
    for n in inputs:
        env[n] = graph.placeholder(n.name)
        env[n].meta = dict(n.meta)
    for n in nodes:
        env[n] = graph.node_copy(n, lambda x: env[x])
    graph.output(tuple(env[n] for n in outputs))
    return fx.GraphModule(gm, graph)


def _stand_in(fake):
    """A real tensor of `fake`'s metadata, zero-filled."""
    if not isinstance(fake, torch.Tensor):
        return fake
    size, stride = tuple(fake.shape), tuple(fake.stride())
    extent = 1 + sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    out = torch.zeros(extent, dtype=fake.dtype, device=fake.device).as_strided(size, stride)
    if fake.requires_grad:
        out.requires_grad_(True)
    return out


def _make_runner(placeholders, compiled, graph_outputs):
    """The callable standing for the whole graph: pieces in order, values passed by position."""
    slot = {n: i for i, n in enumerate(placeholders)}
    for _, _, outputs in compiled:
        for n in outputs:
            slot[n] = len(slot)
    steps = [(fn, tuple(slot[n] for n in inputs), tuple(slot[n] for n in outputs)) for fn, inputs, outputs in compiled]
    result = tuple(slot[n] if isinstance(n, fx.Node) else None for n in graph_outputs)
    consts = tuple(n for n in graph_outputs)
    size = len(slot)
    nplaceholders = len(placeholders)

    def run_pieces(*args):
        values = list(args) + [None] * (size - nplaceholders)
        for fn, ins, outs in steps:
            got = fn(*[values[i] for i in ins])
            for i, v in zip(outs, got):
                values[i] = v
        return tuple(values[i] if i is not None else c for i, c in zip(result, consts))
    return run_pieces
