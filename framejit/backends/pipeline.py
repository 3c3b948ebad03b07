"""The one pipeline the tracing backends share: a list of passes, then a compiler.

Why this exists: aot_eager and inductor both trace the graph with AOT autograd, and both must be held
to eager semantics in the same ways (backends/passes/). Each backend is its list of passes and its
final compiler; `compile_through` chains them, handing every pass the rest of the chain as
`compile_rest` (the pass contract is in backends/passes/__init__.py).

To add a pass: write backends/passes/<name>.py with `apply(gm, example_inputs, compile_rest)`, and put
the module in the lists below where it belongs (passes listed earlier see the graph first and wrap what
the later ones return).
"""
from .passes import (dead_tensors, input_metadata, multi_output_views, mutations_outside, none_grads, nothing_saved, out_arguments,
                     output_strides, overlapping_writes, repeated_blocks, saved_written_inputs, state_regions,
                     stored_libraries, unreached_inputs)

AOT_EAGER_PASSES = (input_metadata, saved_written_inputs, out_arguments, state_regions, nothing_saved, overlapping_writes, multi_output_views,
                    unreached_inputs, dead_tensors, none_grads, mutations_outside)
# inductor compiles repeated blocks once (repeated_blocks.py; its compiler is a same_graphs.SharedCompiles);
# its decompositions can lay an output out otherwise than eager: output_strides.py restrides it
INDUCTOR_PASSES = (output_strides, input_metadata, saved_written_inputs, out_arguments, state_regions.COMPILING_NO_GRAD, nothing_saved,
                   stored_libraries, repeated_blocks, overlapping_writes,
                   multi_output_views, unreached_inputs, dead_tensors, none_grads)


def compile_through(passes, compiler, gm, example_inputs):
    """`compiler(gm, example_inputs)` behind `passes` (modules, or objects, with `apply`), first listed
    outermost."""
    def rest_from(i):
        if i == len(passes):
            return compiler
        apply, compile_rest = passes[i].apply, rest_from(i + 1)
        return lambda graph, inputs: apply(graph, inputs, compile_rest)
    return rest_from(0)(gm, example_inputs)
