"""Real, zero-filled stand-ins for the fake inputs of a piece or region, so that inductor's caches key it.

Why this exists (issue 24): the passes that cut a graph (passes/state_regions.py, passes/repeated_blocks.py)
hand each piece to the compiler with the conversion's fake tensors as its example inputs; only the
whole graph comes with real ones. backends/inductor_caches.py keys and caches graphs whose inputs are
plain tensors, so every piece was compiled anew by every process: a warm start recompiled every block.
A stand-in is a real tensor with the fake's dtype, device, sizes, strides, storage offset and
requires_grad, filled with zeros (compiling never reads values).

All or nothing: stand-ins are made only when *every* input is a fake with static sizes and nothing in
the graph has a size read from data. A graph that mixes symbolic fakes with real stand-ins is compiled
wrongly: compile_fx fakifies the real tensors again in the conversion's shape environment, which gives
each of their dimensions a fresh symbol, duck-sized onto any symbol with the same hint (a (4, 4) weight
next to an input of s0 = 4 rows becomes (s0, s0)); the matmul's shape check then specializes s0 == 4.
The artifact is compiled for 4 rows, and inductor's cache entry keeps no guard for it (its guards cover
only the graph's SymInt inputs, and s0 is no longer one): a warm process loaded it for 5 rows ("expected
size 5==4", tests/translate/graph/test_inputs_first_read_in_inference_mode.py). Unbacked sizes (read from
data) stay with their fakes too: the nodes' example values hold the conversion's unbacked symbols, which
a trace over fresh fakes would meet again ("possible memo disaster"); inputs that share memory too
(separate stand-ins would not).
"""
import torch

from .same_graphs import storage_key


def real_stand_ins(gm, example_inputs):
    """Zero-filled real tensors standing in for `example_inputs` (see the module doc), or None when the
    inputs must be passed as they are."""
    if not example_inputs or not all(_static_fake(x) for x in example_inputs):
        return None
    if any("unbacked_bindings" in node.meta for node in gm.graph.nodes):
        return None
    storages = [storage_key(x) for x in example_inputs]
    if None in storages or len(set(storages)) < len(storages):
        return None                 # inputs sharing memory: separate stand-ins would not
    return [_stand_in(x) for x in example_inputs]


def _static_fake(value):
    from torch._subclasses.fake_tensor import FakeTensor
    return type(value) is FakeTensor and value.layout is torch.strided and \
        all(type(d) is int for d in (*value.shape, *value.stride(), value.storage_offset()))


def _stand_in(fake):
    span = fake.storage_offset() + _elements_reached(fake.shape, fake.stride())
    base = torch.zeros(span, dtype=fake.dtype, device=fake.device)
    real = base.as_strided(fake.shape, fake.stride(), fake.storage_offset()) if span else \
        torch.empty_strided(fake.shape, fake.stride(), dtype=fake.dtype, device=fake.device)
    return real.detach().requires_grad_(fake.requires_grad)


def _elements_reached(shape, stride):
    """How many elements a tensor of `shape` and `stride` reaches from its storage offset."""
    if any(d == 0 for d in shape):
        return 0
    return 1 + sum((d - 1) * s for d, s in zip(shape, stride))
