"""Calling inductor so that its own on-disk caches (FX graph cache, AOTAutograd cache) can hit.

Why this exists (issue 24): inductor's caches key a compiled graph on the graph's code, its inputs'
metadata and the *shape environment's* facts, which they read from the TracingContext torch.compile
sets around every backend call. framejit called `compile_fx` with real example inputs and no
TracingContext, so both caches bypassed every graph ("No shape env"): every process, even the same
program started again, lowered and C++-compiled every graph anew, and framejit's warm start was slower
than torch.compile's.

`compile_with_caches` runs `compile_fx` inside a TracingContext over a fresh FakeTensorMode with a
ShapeEnv, and hands it fake copies of the example inputs with *static* shapes (AOT autograd would give
real inputs fresh size symbols under a ShapeEnv: dynamic kernels framejit never asked for). Graphs whose
inputs are not all plain dense tensors (Python numbers, symbolic sizes, subclasses) keep the old call:
their specialization would change, so they stay uncached rather than compiled differently.
"""
import torch


def _plain_tensor(x):
    return type(x) in (torch.Tensor, torch.nn.Parameter) and x.layout is torch.strided and not x.is_nested


def can_use_caches(example_inputs):
    """Are all graph inputs plain dense tensors (so static fake copies stand for them exactly)?"""
    return all(_plain_tensor(x) for x in example_inputs)


def compile_with_caches(compile_fx, gm, example_inputs):
    """`compile_fx(gm, example_inputs)`, inside the TracingContext inductor's caches need to hit."""
    if not can_use_caches(example_inputs):
        return compile_fx(gm, example_inputs)
    from torch._guards import TracingContext, tracing
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    fake_mode = FakeTensorMode(shape_env=ShapeEnv())
    with fake_mode:
        fakes = [fake_mode.from_tensor(x, static_shapes=True) for x in example_inputs]
    with tracing(TracingContext(fake_mode)):
        return compile_fx(gm, fakes)
