"""The inductor backend: torch._inductor's compile_fx (C++/OpenMP kernels on CPU) behind the shared
pipeline (backends/pipeline.py: state regions, overlapping writes, multi-output views, None gradients).

`compile_inductor` is the one entry point: the graph, its example inputs and an options dict (inductor
config patches, handed to compile_fx as they are; None for its defaults).
"""
import torch

from . import inductor_aoti
from .inductor_caches import compile_with_caches
from .pipeline import INDUCTOR_PASSES, compile_through
from .same_graphs import SharedCompiles

# inductor's own settings that framejit's exactness needs (options given to compile_inductor win):
# random ops call torch's own kernels on the default generator, drawing eager's numbers (inductor's
# generated random kernels draw other numbers from a seed of their own)
EXACT = {"fallback_random": True}


def compile_inductor(gm, example_inputs, options=None):
    patches = {**EXACT, **(options or {})}

    def compile_patched(graph, inputs):
        # imported here: a graph loaded as a stored library (inductor_aoti.py) never imports inductor
        from torch._inductor.compile_fx import compile_fx
        return compile_fx(graph, inputs, config_patches=patches)

    def compiler(graph, inputs):          # inductor's own caches can hit (backends/inductor_caches.py)
        return compile_with_caches(compile_patched, graph, inputs, options=patches)
    # the pieces of repeated blocks (passes/repeated_blocks.py) are compiled once per structure
    with inductor_aoti.options_for_graphs(patches):      # a library's key holds them (inductor_aoti.py)
        return compile_through(INDUCTOR_PASSES, SharedCompiles(compiler), gm, example_inputs)
