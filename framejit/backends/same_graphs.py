"""When two graphs compile to the same thing: a structural key, and a compiler that compiles each key once.

Why this exists (issues 23 and 24): a model that loops over N identical layers is one graph with the
layer unrolled N times. backends/passes/repeated_blocks.py cuts such a graph into pieces, one per layer;
the pieces of identical layers are the same computation on other tensors (each layer's parameters are
graph inputs of its piece), so one compiled piece serves them all. `structure_key(gm, inputs)` says when
that holds: the same nodes in the same order (targets, constant arguments with their types, which node
feeds which), outputs, and inputs with the same metadata (type, dtype, device, shape, strides, storage
offset, requires_grad, leaf or not, which inputs share storage), compiled in the same grad and autocast
state. It is None when the graph holds something it cannot compare by value (an object argument, a
module attribute read), and such a graph is always compiled on its own.

`SharedCompiles(compiler)` is a compiler that hands back the callable it made for an earlier graph of the
same key. One lives for one backend call (one conversion graph): a compiled piece is never shared
across conversions, whose inputs are guarded separately.
"""
import torch
import torch.fx as fx


class _NoKey(Exception):
    pass


def _constant(value):
    """A hashable stand-in for a constant argument, equal only for equal values of the same type
    (1, 1.0 and True differ; 0.0 and -0.0 differ)."""
    kind = type(value)
    if value is None or kind in (bool, int, str, torch.dtype, torch.device, torch.memory_format, torch.layout):
        return (kind, value)
    if kind is float:
        return (kind, repr(value))
    if kind in (tuple, list):
        return (kind, tuple(_constant(v) for v in value))
    if kind is dict:
        return (kind, tuple((_constant(k), _constant(v)) for k, v in value.items()))
    if kind is slice:
        return (kind, _constant(value.start), _constant(value.stop), _constant(value.step))
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return (kind, str(value))
    if value is Ellipsis:
        return (kind,)
    raise _NoKey(kind.__name__)


def _argument(value, index_of):
    if isinstance(value, fx.Node):
        return ("node", index_of[value])
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_argument(v, index_of) for v in value))
    if isinstance(value, dict):
        return (dict, tuple((k, _argument(v, index_of)) for k, v in value.items()))
    return _constant(value)


def _target(gm, node):
    if node.op in ("get_attr", "call_module"):
        return ("object", id(gm.get_submodule(node.target) if node.op == "call_module"
                             else _attribute(gm, node.target)))
    try:
        hash(node.target)
    except TypeError:
        raise _NoKey("unhashable target") from None
    return node.target


def _attribute(gm, dotted):
    value = gm
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def storage_key(value):
    """Which storage a (fake) tensor is on, or None when that cannot be told."""
    try:
        return value.untyped_storage()._cdata
    except (RuntimeError, NotImplementedError, AttributeError):
        return None


def _input(value, storages):
    if isinstance(value, torch.Tensor):
        if type(value) not in (torch.Tensor, torch.nn.Parameter) and not _is_fake(value):
            raise _NoKey(type(value).__name__)
        storage = storage_key(value)
        if storage is None:
            raise _NoKey("a tensor without a storage")
        shared = storages.setdefault(storage, len(storages))
        return ("tensor", value.dtype, value.device, value.layout, tuple(str(s) for s in value.shape),
                tuple(str(s) for s in value.stride()), str(value.storage_offset()), value.requires_grad,
                value.grad_fn is None, shared)
    return ("value", _constant(value))


def _is_fake(value):
    from torch._subclasses.fake_tensor import FakeTensor
    return isinstance(value, FakeTensor)


def _state():
    return (torch.is_grad_enabled(), torch.is_inference_mode_enabled(),
            tuple(torch.is_autocast_enabled(d) for d in ("cpu", "cuda")))


def structure_key(gm, example_inputs):
    """A hashable key equal for two graphs that compile to the same callable (see the module doc), or None."""
    try:
        storages = {}
        inputs = tuple(_input(x, storages) for x in example_inputs)
        index_of = {}
        nodes = []
        for i, node in enumerate(gm.graph.nodes):
            index_of[node] = i
            nodes.append((node.op, _target(gm, node) if node.op != "placeholder" else None,
                          _argument(node.args, index_of) if node.op != "placeholder" else None,
                          _argument(node.kwargs, index_of) if node.op != "placeholder" else None))
        key = (inputs, tuple(nodes), _state())
        hash(key)
        return key
    except (_NoKey, TypeError, KeyError, AttributeError):
        return None


class SharedCompiles:
    """`compiler(gm, example_inputs)`, once per structure key (see the module doc); `compiles` counts
    the calls that reached `compiler`."""

    def __init__(self, compiler):
        self.compiler = compiler
        self.made = {}
        self.compiles = 0

    def __call__(self, gm, example_inputs):
        key = structure_key(gm, example_inputs)
        if key is not None and key in self.made:
            return self.made[key]
        self.compiles += 1
        compiled = self.compiler(gm, example_inputs)
        if key is not None:
            self.made[key] = compiled
        return compiled
