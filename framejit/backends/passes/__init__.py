"""Graph passes: each holds a tracing compiler (AOT autograd, inductor) to eager semantics in one way.

The contract (one signature for every pass): a pass is a module here with a function

    apply(gm, example_inputs, compile_rest) -> callable

that receives the fx GraphModule, its example inputs (the conversion's fake or real values) and
`compile_rest(gm, example_inputs) -> callable`, the rest of the pipeline; it returns the compiled
callable. A pass may rewrite the graph before handing it on, wrap what comes back, call the rest
several times (one region each: state_regions), call it again after a failure (mutations_outside), or
not call it at all and return `gm.forward` (overlapping_writes). backends/pipeline.py lists which
passes, in which order, each backend runs; a pass never calls another pass itself.

Passes, in pipeline order: output_strides (inductor: outputs it lays out otherwise than eager are copied into eager's strides),
input_metadata (inputs a metadata op like `t_()` changes end with eager's sizes and strides),
saved_written_inputs (a graph that saves for backward an input it writes runs as fx code), out_arguments (`op(out=t)` as `t.copy_(op())`: t keeps its layout), state_regions (grad off, inference mode, autocast on: run as fx code),
nothing_saved (eager's ops save nothing for backward: run as fx code, so a second backward works as eagerly),
stored_libraries (inductor: an inference graph's stored AOTInductor library, or its background build scheduled),
repeated_blocks (inductor, opt-in: identical blocks compiled once; backends/same_graphs.py), overlapping_writes, multi_output_views,
unreached_inputs, dead_tensors, none_grads, mutations_outside.
"""
