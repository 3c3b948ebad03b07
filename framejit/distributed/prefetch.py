"""FSDP2 prefetching from the recorded execution order, and the check that every rank runs the same order.

FSDP2 all-gathers a module's parameters in its pre-forward hook; by default that waits for nothing
before it. `set_modules_to_forward_prefetch([next])` makes a module start the all-gather of the module
that runs after it, and `set_modules_to_backward_prefetch([previous])` does the same in backward (which
runs the order in reverse). The order comes from `execution_order` (framejit's capture: Python control
flow included), not from registration order, which can differ (shared blocks, reordered calls).

Collectives only match when every rank issues them in the same order: a forward order that differs
between ranks (data-dependent branching on a rank's own batch) hangs or mismatches FSDP's all-gathers.
`check_same_forward_order` compares the orders of all ranks and names the first module where they part.
"""
import torch
import torch.distributed as dist

from .exec_order import execution_order


class PrefetchPlan:
    """What prefetch_plan set: {module name: [names it prefetches]} for forward and for backward."""

    def __init__(self, forward, backward, order):
        self.forward = forward
        self.backward = backward
        self.order = order          # the FSDP modules' names in forward order (each once)

    def __repr__(self):
        return f"PrefetchPlan(order={self.order}, forward={self.forward}, backward={self.backward})"


def _fsdp_module_class():
    from torch.distributed.fsdp import FSDPModule
    return FSDPModule


def prefetch_plan(model, *args, config=None, num_prefetch=1, check_ranks=True, group=None, **kwargs):
    """Read `model`'s forward order on these inputs (execution_order), check it is the same on every rank
    (when a process group is up and `check_ranks`), and set each FSDP2 module's forward prefetch to the
    `num_prefetch` FSDP modules that run after it and its backward prefetch to those that run before it."""
    if not isinstance(num_prefetch, int) or num_prefetch < 1:
        raise ValueError(f"num_prefetch must be a positive int, got {num_prefetch!r}")
    info = execution_order(model, *args, config=config, **kwargs)
    if check_ranks and dist.is_available() and dist.is_initialized():
        check_same_forward_order(model, info, group=group)
    fsdp = _fsdp_module_class()
    name_of = {m: n for n, m in model.named_modules()}
    order = []
    for m in info.module_forward_order:
        if isinstance(m, fsdp) and m is not model and m not in order:
            order.append(m)
    forward, backward = {}, {}
    for i, m in enumerate(order):
        after = order[i + 1:i + 1 + num_prefetch]
        before = order[max(0, i - num_prefetch):i][::-1]
        if after:
            m.set_modules_to_forward_prefetch(after)
            forward[name_of[m]] = [name_of[a] for a in after]
        if before:
            m.set_modules_to_backward_prefetch(before)
            backward[name_of[m]] = [name_of[b] for b in before]
    return PrefetchPlan(forward, backward, [name_of[m] for m in order])


class ForwardOrderMismatch(RuntimeError):
    """Ranks call their modules in different orders."""


def check_same_forward_order(model, info, group=None):
    """Raise ForwardOrderMismatch naming the first module call where the ranks' forward orders differ."""
    name_of = {m: n or "<root>" for n, m in model.named_modules()}
    mine = [name_of.get(m, type(m).__name__) for m in info.module_forward_order]
    everyone = [None] * dist.get_world_size(group)
    dist.all_gather_object(everyone, mine, group=group)
    first = everyone[0]
    for rank, theirs in enumerate(everyone):
        if theirs == first:
            continue
        i = next((k for k, (a, b) in enumerate(zip(first, theirs)) if a != b), min(len(first), len(theirs)))
        at = lambda order: order[i] if i < len(order) else "<the end of forward>"  # noqa: E731
        raise ForwardOrderMismatch(
            f"the forward order differs across ranks at module call #{i}: rank 0 calls {at(first)!r}, rank {rank} "
            f"calls {at(theirs)!r} (after {first[i - 1]!r})" if i else
            f"the forward order differs across ranks at module call #0: rank 0 calls {at(first)!r}, rank {rank} "
            f"calls {at(theirs)!r}")
    return mine
