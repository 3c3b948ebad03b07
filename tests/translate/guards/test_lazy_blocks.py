"""The shared entry's guard blocks are compiled on their first call (module_guards.LazyBlock): after
the first instance's call nothing of them is compiled, and another instance is still matched or told
apart exactly as before, by the block compiled then, before and after a module changes."""
import torch
import torch.nn as nn

import framejit
from framejit.translate.guards.guard_blocks import LazyBlock
from tests.differential import randn


class Scaled(nn.Module):
    def __init__(self, eps=1e-5, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.lin = nn.Linear(8, 8)
        self.eps = eps

    def forward(self, x):
        return self.lin(x) * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


def probe(module, x):
    return module(x) + 1


def _blocks(compiled):
    state = compiled._framejit_state
    shared = [r.companion for r in state.results if getattr(r, "companion", None) is not None]
    assert len(shared) == 1
    return [v for v in shared[0].ns.env.values() if isinstance(v, LazyBlock)]


def test_shared_blocks_compile_on_first_use_and_still_tell_instances_apart():
    counter = framejit.CompileCounter()
    compiled = framejit.compile(probe, backend=counter)
    x = randn(3, 8)
    a = Scaled()
    torch.testing.assert_close(compiled(a, x), probe(a, x))
    blocks = _blocks(compiled)
    assert blocks and all(b.fn is None for b in blocks)      # nothing compiled for the shared entry yet
    b = Scaled(seed=1)                                       # same structure: the shared entry serves it
    torch.testing.assert_close(compiled(b, x), probe(b, x))
    assert counter.frame_count == 1
    assert any(blk.fn is not None for blk in blocks)
    b.eps = 1e-3                                             # a module changes: the block runs again, fails
    torch.testing.assert_close(compiled(b, x), probe(b, x))
    assert counter.frame_count == 2
    c = Scaled(eps=1e-5, seed=2)
    torch.testing.assert_close(compiled(c, x), probe(c, x))
    torch.testing.assert_close(compiled(a, x), probe(a, x))
    assert counter.frame_count == 2


class Stack(nn.Module):
    def __init__(self, seed=0, scale=2.0):
        super().__init__()
        torch.manual_seed(seed)
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
        self.scale = scale

    def forward(self, x):
        for b in self.blocks:
            x = torch.relu(b(x)) * self.scale
        return x


def test_shared_covered_block_is_rendered_on_first_use_and_matches_like_the_eager_one():
    # the covered block (module paths, hook tables, attribute constants) is not even rendered until
    # another instance comes: nothing of it is text after the first instance's call
    counter = framejit.CompileCounter()
    compiled = framejit.compile(probe, backend=counter)
    x = randn(3, 8)
    a = Stack()
    torch.testing.assert_close(compiled(a, x), probe(a, x))
    deferred = [blk for blk in _blocks(compiled) if blk.pending is not None]
    assert deferred and all(blk.src is None and blk.fn is None for blk in deferred)
    b = Stack(seed=1)                              # same structure: served by the shared entry
    torch.testing.assert_close(compiled(b, x), probe(b, x))
    assert counter.frame_count == 1
    assert all(blk.fn is not None and blk.pending is None for blk in deferred)
    c = Stack(seed=2, scale=3.0)                   # differs in a constant the graph depends on
    torch.testing.assert_close(compiled(c, x), probe(c, x))
    assert counter.frame_count == 2
    c.blocks[1] = nn.Linear(8, 8)                  # a module replaced: the covered block runs again
    torch.testing.assert_close(compiled(c, x), probe(c, x))
    d = Stack(seed=3)
    d.blocks[0].register_forward_hook(lambda m, i, o: o * 0)   # a hook: the covered block tells it apart
    torch.testing.assert_close(compiled(d, x), probe(d, x))
    torch.testing.assert_close(compiled(a, x), probe(a, x))
    torch.testing.assert_close(compiled(b, x), probe(b, x))
