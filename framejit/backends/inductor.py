"""The inductor backend: torch._inductor's compile_fx (C++/OpenMP kernels on CPU) behind the shared
pipeline (backends/pipeline.py: state regions, overlapping writes, multi-output views, None gradients).

`compile_inductor` is the one entry point: the graph, its example inputs and an options dict (inductor
config patches, handed to compile_fx as they are; None for its defaults).

Repeated blocks (passes/repeated_blocks.py: N identical layers lowered and compiled once) are opt-in:
`FRAMEJIT_REPEATED_BLOCKS=1`, or `compile_inductor(..., repeated_blocks=True)`. They shorten the cold first
call (GPT-2 4 layers 11.1 -> 6.2 s CPU) but cost per call: bench/repeated_blocks.py, side by side in one
process, CPU time per call on/off: GPT-2 inference 1.045, a GPT-2 training step 1.19 (docs/architecture.md).
"""
import os

import torch

from . import inductor_aoti
from .compile_behind import compiling
from .inductor_caches import compile_with_caches
from .passes import repeated_blocks as cut_repeated_blocks
from .pipeline import INDUCTOR_PASSES, compile_through
from .same_graphs import SharedCompiles
from .stand_ins import real_stand_ins

# inductor's own settings that framejit's exactness needs (options given to compile_inductor win):
# random ops call torch's own kernels on the default generator, drawing eager's numbers (inductor's
# generated random kernels draw other numbers from a seed of their own)
EXACT = {"fallback_random": True}
REPEATED_BLOCKS_ENV = "FRAMEJIT_REPEATED_BLOCKS"


def compile_inductor(gm, example_inputs, options=None, repeated_blocks=None):
    patches = {**EXACT, **(options or {})}

    def compile_patched(graph, inputs):
        # imported here: a graph loaded as a stored library (inductor_aoti.py) never imports inductor
        from torch._inductor import compile_fx as inductor_compile, config

        def inner(*args, **kwargs):
            # also the backward's compile, which AOT autograd runs at the first backward, outside this call:
            # under the lock and the patches there too (inductor's own `config_patches` would enter its patch
            # before the lock, and a compile behind (compile_behind.py) could restore it under this one)
            with compiling(), config.patch(patches):
                return inductor_compile.compile_fx_inner(*args, **kwargs)
        with compiling(), config.patch(patches):      # inductor's configuration is the process's
            return inductor_compile.compile_fx(graph, inputs, inner_compile=inner)

    def compiler(graph, inputs):          # inductor's own caches can hit (backends/inductor_caches.py)
        # a piece or region the passes cut has only its inputs' fakes: real stand-ins make it cacheable
        stand_ins = real_stand_ins(graph, inputs)
        return compile_with_caches(compile_patched, graph, inputs if stand_ins is None else stand_ins,
                                   options=patches)
    # the pieces of repeated blocks (passes/repeated_blocks.py) are compiled once per structure
    if repeated_blocks is None:
        repeated_blocks = repeated_blocks_wanted()
    passes = inductor_passes(repeated_blocks)
    with inductor_aoti.options_for_graphs(patches):      # a library's key holds them (inductor_aoti.py)
        return compile_through(passes, SharedCompiles(compiler), gm, example_inputs)


def inductor_passes(repeated_blocks):
    """The pipeline's inductor passes, without the repeated-blocks cut unless asked for (stored libraries
    are decided by their own pass, in the list either way)."""
    return INDUCTOR_PASSES if repeated_blocks else tuple(p for p in INDUCTOR_PASSES if p is not cut_repeated_blocks)


def repeated_blocks_wanted():
    """Is the repeated-blocks pass asked for (FRAMEJIT_REPEATED_BLOCKS=1; off by default: see the module doc)?
    Read once per backend call, never per call of a compiled graph."""
    return os.environ.get(REPEATED_BLOCKS_ENV, "0").strip().lower() in ("1", "true", "yes", "on")
