"""The aot_eager compiler: AOT autograd (forward and backward traced ahead of time) with the eager
compiler, and a partition whose backward draws no random numbers.

Why the partition: torch's default partitioner puts into the backward every forward op computable from
the backward's inputs, and dead random ops survive there (dead-code elimination keeps impure ops): the
backward then draws from the global generator, which eager's backward never does, and every later random
number differs. `partition` drops them; a random op the backward would use (a recomputed random number,
never eager's value) is refused, and the frame runs eagerly.

This is the last step of the aot_eager pipeline (backends/pipeline.py); the passes before it hold AOT
autograd to eager semantics elsewhere (backends/passes/).
"""
import torch

from .compile_behind import compiling


def compile_aot(gm, example_inputs):
    """AOT autograd over `gm` with the nop compiler for forward and backward."""
    from functorch.compile import make_boxed_compiler
    from torch._functorch.aot_autograd import aot_module_simplified

    def nop(g, _inputs):
        return g.forward

    with compiling():                  # AOT autograd patches functorch's configuration while it traces
        return aot_module_simplified(gm, example_inputs, fw_compiler=make_boxed_compiler(nop),
                                     bw_compiler=make_boxed_compiler(nop), partition_fn=partition)


def _is_random(node):
    target = node.target
    return node.op == "call_function" and isinstance(target, torch._ops.OpOverload) and \
        torch.Tag.nondeterministic_seeded in target.tags


def partition(joint_module, joint_inputs, **kwargs):
    """torch's default partition, with the backward drawing no random numbers (see the module doc)."""
    from torch._functorch.partitioners import default_partition
    fw_module, bw_module = default_partition(joint_module, joint_inputs, **kwargs)
    dropped = False
    for node in reversed(list(bw_module.graph.nodes)):     # users before producers: a dead chain goes at once
        if node.op != "call_function":
            continue
        if _is_random(node):
            if node.users:
                raise RuntimeError(f"the backward graph recomputes random op {node.target}: its numbers would "
                                   "differ from the forward's")
            bw_module.graph.erase_node(node)
            dropped = True
        elif dropped and not node.users and not node.is_impure():
            bw_module.graph.erase_node(node)       # fed only a dropped random op (dropout of a dropout)
    if dropped:
        bw_module.recompile()
    return fw_module, bw_module
