"""SubgraphBuilder: a function body traced into a graph of its own (torch.cond branches, checkpointed
functions), to become an argument of one node of the frame's graph.

Why this exists: higher-order calls take Python callables. To keep them in the frame's graph, the
callable is traced -- by the same translator, with `ctx.graph` swapped for one of these -- into a small
GraphModule whose placeholders are the call's tensor operands followed by every outside tensor the body
used (the frame's intermediate values its closure reads, parameters, globals): those are *lifted*, i.e.
become extra operands the outer node passes in. It shares the conversion's FakeTensorMode and op memo,
so fake tensors flow between the two graphs; an outside tensor reached through a Source is made an input
of the outer builder, and lifted when an op here uses it (nested subgraphs lift through each level).
"""
import torch
import torch.fx as fx

from .builder import GraphBuilder
from ..values.base import DictValue, SeqValue, TensorValue
from ..values.dicts.identity_hashed_keys import has_tensor_keys
from ...errors import GraphBreak


class SubgraphBuilder(GraphBuilder):
    def __init__(self, outer):           # (GraphBuilder.__init__ would make a new FakeTensorMode)
        # everything the conversion shares (fake mode, symbolic sizes, memo, module-order events...) is
        # the outer builder's; what belongs to one graph is set anew below
        self.__dict__.update(vars(outer))
        self.outer = outer
        self.phase = outer.phase
        self.graph = fx.Graph()
        self.fake_mode = outer.fake_mode
        self.shapes = outer.shapes           # the outer conversion's symbolic sizes (or None)
        self.inputs = []
        self.input_by_id = {}
        self.input_storages = outer.input_storages
        self.created = []
        self.current_stack_trace = None
        self.op_memo = outer.op_memo
        self.operands = []               # outer TensorValues, in placeholder order
        self._placeholders = {}          # outer node -> this graph's TensorValue for it

    def placeholder(self, outer_value):
        """This graph's stand-in for an outer tensor (an operand, or a lifted outside tensor)."""
        known = self._placeholders.get(outer_value.node)
        if known is not None and known.cls is outer_value.cls:
            return known
        if known is not None:                  # the same tensor as another class (as_subclass)
            value = TensorValue(known.node, known.fake)
            value.cls = outer_value.cls
            return value
        last = next((n for n in reversed(self.graph.nodes) if n.op == "placeholder"), None)
        if last is not None:
            ctx = self.graph.inserting_after(last)
        else:
            ctx = self.graph.inserting_before(next(iter(self.graph.nodes), None))
        with ctx:
            node = self.graph.placeholder(f"arg{len(self.operands)}")
        node.meta["example_value"] = outer_value.fake
        value = TensorValue(node, outer_value.fake)
        value.cls = outer_value.cls           # a tensor subclass's ops in the body dispatch as outside
        self._placeholders[outer_value.node] = value
        self.operands.append(outer_value)
        return value

    def lift(self, value):
        if isinstance(value, TensorValue) and value.node.graph is not self.graph:
            return self.placeholder(value)
        if isinstance(value, SeqValue) and any(isinstance(i, (TensorValue, SeqValue, DictValue)) for i in value.items):
            return SeqValue(value.kind, [self.lift(i) for i in value.items])
        if isinstance(value, DictValue) and has_tensor_keys(value.items):
            raise GraphBreak("higher-order call", "a dict keyed by tensors passed into a traced body")
        if isinstance(value, DictValue) and any(isinstance(i, (TensorValue, SeqValue, DictValue))
                                                for i in value.items.values()):
            return DictValue({k: self.lift(v) for k, v in value.items.items()}, kind=value.kind)
        return value

    def add_input(self, tensor, source):
        # the outer graph's Value: the conversion caches wrapped Sources (ctx.wrap), and the same Source
        # read after this body is traced must not find this graph's placeholder; used here, it is lifted
        return self.outer.add_input(tensor, source)

    def _record(self, op, target, args, kwargs):
        return super()._record(op, target, tuple(self.lift(a) for a in args),
                               {k: self.lift(v) for k, v in kwargs.items()})

    def finish_module(self, outputs):
        """The GraphModule returning `outputs` (this graph's TensorValues or outside ones, lifted)."""
        nodes = [self.lift(v).node for v in outputs]
        self.graph.output(tuple(nodes))
        gm = fx.GraphModule(torch.nn.Module(), self.graph)
        gm.graph.lint()
        return gm
