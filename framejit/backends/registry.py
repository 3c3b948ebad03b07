"""The backend registry and the built-in backends (eager, aot_eager, inductor) plus CompileCounter."""
import torch

BACKENDS = {}


def register_backend(name, fn=None):
    """Register `fn(gm, example_inputs) -> callable` under `name` (usable as a decorator)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"backend name must be a non-empty string, got {name!r}")

    def register(f):
        if not callable(f):
            raise TypeError(f"backend {name!r} must be callable, got {type(f).__name__}")
        BACKENDS[name] = f
        return f
    return register(fn) if fn is not None else register


def lookup_backend(backend):
    if isinstance(backend, str):
        fn = BACKENDS.get(backend)
        if fn is None:
            raise ValueError(f"unknown backend {backend!r}; known backends: {', '.join(sorted(BACKENDS))}")
        return fn
    if callable(backend):
        return backend
    raise TypeError(f"backend must be a registered name or a callable (gm, example_inputs) -> callable, "
                    f"got {type(backend).__name__}")


@register_backend("eager")
def eager(gm, example_inputs):
    """Run the GraphModule's generated forward directly (no nn.Module __call__ overhead)."""
    return gm.forward


@register_backend("aot_eager")
def aot_eager(gm, example_inputs):
    """AOT autograd (forward and backward traced ahead of time) with the eager compiler, held to eager
    semantics: random numbers, in-place updates of inputs, None gradients (backends/aot.py)."""
    from .aot import aot_eager as compile_aot_eager
    return compile_aot_eager(gm, example_inputs)


@register_backend("inductor")
def inductor(gm, example_inputs):
    """torch._inductor's compile_fx (generates C++/OpenMP kernels on CPU); input gradients eager leaves
    None stay None (backends/aot.py)."""
    from torch._inductor.compile_fx import compile_fx
    from .aot import keep_none_grads
    return keep_none_grads(gm, compile_fx(gm, example_inputs))    # AOT autograd underneath, too


class CompileCounter:
    """A backend that counts the graphs it receives and keeps them (for tests and quick checks)."""

    def __init__(self, inner="eager"):
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
