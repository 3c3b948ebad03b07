"""The forward execution order of a model's modules and parameters (what FSDP needs to prefetch).

`execution_order(model, *args, config=None, **kwargs) -> ExecutionInfo`:

* `module_forward_order`: every module call in order, the root first, repeats kept;
* `module_to_param_usage_infos`: per module, in order, `ParamUsage(module, [(name, param), ...])` groups:
  a called submodule with all its parameters, or the module itself with the parameters one op of its
  forward reads directly (named by their path from the root); a leaf module (torch.nn's own, as fx
  treats them) gets one group of all its parameters;
* `param_forward_order`: each parameter at its first use; unused ones are absent.

With a `TracingConfig`, the given torch.fx tracer traces the model and its `call_module` and
`create_proxy` are watched (the same answers as torch.distributed.fsdp's own tracer). Without one, the
order is read from framejit's own capture (graph/module_order.py): the model runs once, compiled with a
backend that runs the graphs as they are, with every module's forward compiled for the occasion (its
instance attribute, put back afterwards), so a module that runs at a graph break is captured by its own
conversion; a conversion's events are replayed each time its graph runs, so a module called again hits
the cache and is still heard. Python control flow is followed as it runs, so models fx cannot trace
work. That run is real: its random numbers are drawn from a forked generator and the buffers it updates
are put back. Not seen this way: ops of a forward that runs as plain Python as a whole (a root whose
layer loop holds a graph break: its layers are heard, its own ops between them are not), and a second
call of a module whose conversion made no graph.
"""
import contextlib
import dataclasses
import importlib
import types
from typing import Any, NamedTuple

import torch

from ..translate.graph import module_order


@dataclasses.dataclass
class TracingConfig:
    """A torch.fx tracer (HF's HFTracer, or torch.fx.Tracer()) and its `concrete_args`."""
    tracer: torch.fx.Tracer = dataclasses.field(default_factory=torch.fx.Tracer)
    concrete_args: dict[str, Any] | None = None


class ParamUsage(NamedTuple):
    module: torch.nn.Module
    named_params: list


class ExecutionInfo:
    def __init__(self, root):
        self.module_forward_order = [root]
        self.module_to_param_usage_infos = {root: []}
        self.param_forward_order = []


class _Recorder:
    """Builds an ExecutionInfo from module entries, exits and parameter uses, in order."""

    def __init__(self, root):
        self.info = ExecutionInfo(root)
        self.current = root
        self.visited = set()
        self.name_of = {p: name for name, p in root.named_parameters()}

    def enter(self, module):
        info = self.info
        info.module_forward_order.append(module)
        named = list(module.named_parameters())
        if named:
            info.module_to_param_usage_infos.setdefault(self.current, []).append(ParamUsage(module, named))
        previous, self.current = self.current, module
        info.module_to_param_usage_infos[module] = []
        return previous

    def exit(self, previous):
        self.current = previous

    def use(self, named):
        """One op of the current module read these (name, parameter) pairs."""
        if not named:
            return
        self.info.module_to_param_usage_infos.setdefault(self.current, []).append(ParamUsage(self.current, named))
        for _, p in named:
            if p not in self.visited:
                self.visited.add(p)
                self.info.param_forward_order.append(p)

    def leaf(self):
        """The current module is a leaf: all its parameters take part as one group."""
        self.use(list(self.current.named_parameters()))


def execution_order(model, *args, config=None, **kwargs):
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"execution_order expects an nn.Module, got {type(model).__name__}")
    if config is not None and not isinstance(config, TracingConfig):
        raise TypeError(f"config must be a framejit.distributed.TracingConfig or None, got {type(config).__name__}")
    if config is not None:
        return _traced(model, config)
    return _captured(model, args, kwargs)


# ---- through a torch.fx tracer -------------------------------------------------------------------

def _traced(model, config):
    tracer = config.tracer
    recorder = _Recorder(model)
    call_module, create_proxy = tracer.call_module, tracer.create_proxy
    by_name = dict(model.named_parameters())

    def watched_call_module(module, forward, args, kwargs):
        previous = recorder.enter(module)
        try:
            return call_module(module, forward, args, kwargs)
        finally:
            recorder.exit(previous)

    def watched_create_proxy(kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        proxy = create_proxy(kind, target, args, kwargs, name, type_expr, proxy_factory_fn)
        if kind in ("call_function", "call_method") and args is not None:
            recorder.use([(a.node.target, by_name[a.node.target]) for a in args
                          if isinstance(a, torch.fx.Proxy) and a.node.target in by_name])
        elif kind == "call_module":
            recorder.leaf()
        return proxy

    own = {k: vars(tracer)[k] for k in ("call_module", "create_proxy") if k in vars(tracer)}
    tracer.call_module, tracer.create_proxy = watched_call_module, watched_create_proxy
    try:
        tracer.trace(model, config.concrete_args)
    finally:
        del tracer.call_module, tracer.create_proxy     # the tracer as it was: its class's methods,
        vars(tracer).update(own)                       # or instance attributes it had of its own
    return recorder.info


# ---- from framejit's capture ---------------------------------------------------------------------

def _is_leaf(module):
    """torch.fx.Tracer's default leaves: torch.nn's own modules (not Sequential)."""
    name = type(module).__module__
    return (name.startswith("torch.nn") or name.startswith("torch.ao.nn")) and \
        not isinstance(module, torch.nn.Sequential)


class _CaptureListener:
    """Hears each conversion's events (graph/module_order.py) and replays them into a _Recorder each time
    the conversion's graph runs (a cached entry running again is a module called again), or once at once
    for a conversion without a graph."""

    def __init__(self, root):
        self.root = root
        self.recorder = _Recorder(root)
        self.parent = {child: parent for parent in root.modules() for child in parent.children()}
        self.pending = None           # the graph callable the conversion under way compiled

    def backend(self, gm, example_inputs):
        graph = _ReplayingGraph(gm.forward)
        self.pending = graph
        return graph

    def commit(self, builder, fn, arguments, outcome):
        graph, self.pending = self.pending, None
        if outcome != "entry":
            return                    # the frame runs as plain Python: its modules are heard one by one
        module = self._forward_of(fn, arguments)
        own = module if module is not None and module is not self.root else None
        alive = set(builder.graph.nodes)
        param_of = {node: tensor for _, tensor, node in builder.inputs}
        events = [(kind, what, [param_of[n] for n in used if n in param_of] if kind == "use" else None)
                  for kind, what, used in builder.order_events if kind != "use" or what in alive]

        def replay():
            self._replay(own, events)
        if graph is not None:
            graph.replay = replay
        else:
            replay()

    def _replay(self, own, events):
        recorder = self.recorder
        saved = recorder.current
        if own is not None:           # a module called at a graph break, converted on its own
            recorder.current = self._caller(own)
            recorder.enter(own)
        stack = []
        leaf_depth = 1 if own is not None and _is_leaf(own) else 0   # inside a leaf: its calls and ops are its own
        if leaf_depth:
            recorder.leaf()
        for kind, what, params in events:
            if kind == "enter":
                if leaf_depth:
                    leaf_depth += 1
                    continue
                stack.append(recorder.enter(what))
                if _is_leaf(what):
                    recorder.leaf()
                    leaf_depth = 1
            elif kind == "exit":
                if leaf_depth > 1:
                    leaf_depth -= 1
                    continue
                leaf_depth = 0
                if stack:
                    recorder.exit(stack.pop())
            elif not leaf_depth:
                recorder.use([(recorder.name_of.get(p, ""), p) for p in params])
        recorder.current = saved


    def _forward_of(self, fn, arguments):
        """The module whose forward `fn` is (a module called at a graph break converts on its own)."""
        values = list(arguments.values())
        if not values or not isinstance(values[0], torch.nn.Module):
            return None
        forward = getattr(type(values[0]), "forward", None)
        return values[0] if getattr(forward, "__code__", None) is fn.__code__ else None

    def _caller(self, module):
        """Who called a module heard on its own: its closest ancestor in the module tree that has been
        called (a ModuleList is never called), else the root."""
        called = self.recorder.info.module_to_param_usage_infos
        parent = self.parent.get(module)
        while parent is not None and parent not in called:
            parent = self.parent.get(parent)
        return parent if parent is not None else self.root


class _ReplayingGraph:
    """A graph run as it is, telling the listener its conversion's events each time it runs."""

    def __init__(self, forward):
        self.forward = forward
        self.replay = None

    def __call__(self, *args):
        if self.replay is not None:
            self.replay()
        return self.forward(*args)


def _captured(model, args, kwargs):
    framejit = importlib.import_module("framejit")    # the public surface, looked up at run time

    listener = _CaptureListener(model)
    previous_listener = module_order.LISTENER[0]
    module_order.LISTENER[0] = listener
    try:
        with _temporary_forwards(model, framejit, listener.backend), _buffers_put_back(model), \
                torch.random.fork_rng(devices=[]):
            model(*args, **kwargs)
    finally:
        module_order.LISTENER[0] = previous_listener
    return listener.recorder.info


@contextlib.contextmanager
def _temporary_forwards(model, framejit, backend):
    """Every module's forward compiled with `backend` as its instance attribute while the order is read;
    each module's own __dict__ as it was afterwards."""
    before = []
    for module in {id(m): m for m in model.modules()}.values():
        had = module.__dict__.get("forward", _ABSENT)
        if had is not _ABSENT and not getattr(had, "_framejit_inplace", False):
            continue                  # the user's own instance forward: called as it is
        forward = type(module).forward
        if not isinstance(forward, types.FunctionType) and getattr(forward, "_framejit_fn", None) is None:
            continue
        before.append((module, had))
        module.forward = types.MethodType(framejit.compile(getattr(forward, "_framejit_fn", forward), backend=backend),
                                          module)
    try:
        yield
    finally:
        for module, had in before:
            if had is _ABSENT:
                del module.forward
            else:
                module.forward = had


_ABSENT = object()


@contextlib.contextmanager
def _buffers_put_back(model):
    saved = [(b, b.detach().clone()) for b in model.buffers()]
    try:
        yield
    finally:
        with torch.no_grad():
            for buffer, value in saved:
                if buffer.shape == value.shape:
                    buffer.copy_(value)
