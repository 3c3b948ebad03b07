"""The inductor backend: torch._inductor's compile_fx (C++/OpenMP kernels on CPU) behind the shared
pipeline (backends/pipeline.py: state regions, overlapping writes, multi-output views, None gradients).

`compile_inductor` is the one entry point: the graph, its example inputs and an options dict (inductor
config patches, handed to compile_fx as they are; None for its defaults).
"""
from .pipeline import INDUCTOR_PASSES, compile_through


def compile_inductor(gm, example_inputs, options=None):
    from torch._inductor.compile_fx import compile_fx

    def compiler(graph, inputs):
        if options:
            return compile_fx(graph, inputs, config_patches=dict(options))
        return compile_fx(graph, inputs)
    return compile_through(INDUCTOR_PASSES, compiler, gm, example_inputs)
