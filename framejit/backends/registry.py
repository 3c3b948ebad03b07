"""The backend registry: the built-in backends' names (eager, aot_eager, inductor) plus CompileCounter.

This module only registers: what aot_eager and inductor do is backends/pipeline.py and its passes.

A backend is checked where it is given (framejit.compile, register_backend, CompileCounter): it must be
callable with the two arguments framejit passes, so a wrong one fails there, naming the signature,
instead of on the first call, deep inside a conversion. What it returns is checked when it is called
(convert/frame.py): a backend returning None or a non-callable is a BackendError naming the backend.
"""
import difflib
import inspect

BACKEND_SIGNATURE = "backend(gm: torch.fx.GraphModule, example_inputs: list) -> callable"
BACKENDS = {}
# framejit's own names: registering another backend under one of them would silently change every
# framejit.compile(fn) (backend="eager" is the default)
_OWN_NAMES = frozenset({"eager", "aot_eager", "inductor", "profile"})


def _describe(obj):
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return name if isinstance(name, str) else type(obj).__name__


def check_backend(fn, what="backend", by_name=True):
    """Raise TypeError unless `fn` can be called as BACKEND_SIGNATURE (`what` names the argument;
    `by_name`: a registered name would have done too)."""
    if not callable(fn):
        expected = f"a registered backend name or a callable {BACKEND_SIGNATURE}" if by_name else \
            f"a callable {BACKEND_SIGNATURE}"
        raise TypeError(f"{what} must be {expected}; got {type(fn).__name__} {fn!r:.80}")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):           # a callable Python cannot describe (C code): trust it
        return
    try:
        signature.bind(None, [])
    except TypeError:
        if any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
            return                            # (a static __call__ reads one argument short; torch passes keywords)
        raise TypeError(f"{what} must be callable as {BACKEND_SIGNATURE}; {_describe(fn)}{signature} "
                        "cannot take those two arguments") from None


def register_backend(name, fn=None):
    """Register `fn(gm, example_inputs) -> callable` under `name` (usable as a decorator)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"backend name must be a non-empty string, got {name!r}")

    def register(f):
        check_backend(f, f"backend {name!r}", by_name=False)
        if name in _OWN_NAMES and name in BACKENDS and BACKENDS[name] is not f:
            raise ValueError(f"backend name {name!r} is one of framejit's own backends; register yours under "
                             "another name")
        BACKENDS[name] = f
        return f
    return register(fn) if fn is not None else register


def lookup_backend(backend):
    if isinstance(backend, str):
        fn = BACKENDS.get(backend)
        if fn is None:
            from ..dynamo_reads import registry_backend
            fn = registry_backend(backend)    # a name in torch's registry (torch._dynamo.list_backends(None))
            if fn is not None:
                return fn
            close = difflib.get_close_matches(backend, BACKENDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown backend {backend!r}{hint}; known backends: {', '.join(sorted(BACKENDS))}")
        return fn
    check_backend(backend)
    return backend


@register_backend("eager")
def eager(gm, example_inputs):
    """Run the GraphModule's generated forward directly (no nn.Module __call__ overhead)."""
    return gm.forward


@register_backend("aot_eager")
def aot_eager(gm, example_inputs):
    """AOT autograd (forward and backward traced ahead of time) with the eager compiler, held to eager
    semantics by the shared pipeline (backends/pipeline.py, backends/aot.py)."""
    from .aot import compile_aot
    from .pipeline import AOT_EAGER_PASSES, compile_through
    return compile_through(AOT_EAGER_PASSES, compile_aot, gm, example_inputs)


@register_backend("inductor")
def inductor(gm, example_inputs, config_patches=None):
    """torch._inductor's compile_fx behind the shared pipeline (backends/inductor.py); `config_patches`:
    torch.compile's mode/options (framejit/torch_compile_args.py)."""
    from .inductor import compile_inductor
    return compile_inductor(gm, example_inputs, config_patches)


def runs_graph_as_is(backend):
    """Does `backend` run the GraphModule as it is (eager, or a CompileCounter over eager)? Such a graph
    may take a Python float as a symbolic input; a tracing backend (AOT autograd) cannot: its pass that
    turns symbolic floats into tensors asks its caller to restart the trace, which only torch.compile does."""
    if isinstance(backend, str):
        backend = BACKENDS.get(backend)
    if isinstance(backend, CompileCounter):
        return runs_graph_as_is(backend.inner)
    return backend is eager


class CompileCounter:
    """A backend that counts the graphs it receives and keeps them (for tests and quick checks)."""

    def __init__(self, inner="eager"):
        lookup_backend(inner)             # a name must be registered, a callable must take (gm, inputs)
        self.inner = inner
        self.frame_count = 0
        self.op_count = 0
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.frame_count += 1
        self.op_count += sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))
        self.graphs.append(gm)
        return lookup_backend(self.inner)(gm, example_inputs)

    def clear(self):
        self.frame_count = 0
        self.op_count = 0
        self.graphs = []
