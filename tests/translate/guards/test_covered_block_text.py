"""The covered block (module state checked when the module watch's counter moved) is compact text: a
tuple of atoms on a module (a conv's stride, padding, dilation) is one same_atoms term, and an empty hook
table check is one helper call. Compiling that block is a large part of capturing a convolutional model;
it must still tell every change apart."""
import pytest
import torch
import torch.nn as nn

import framejit
from framejit.translate.guards.kinds.objects import native_same_atoms as _native_same_atoms
from framejit.translate.guards.module_guards import _no_hooks
from tests.differential import randn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.convs = nn.ModuleList([nn.Conv2d(3, 3, 3, padding=1) for _ in range(3)])

    def forward(self, x):
        for c in self.convs:
            x = torch.relu(c(x))
        return x


def _covered_block(compiled):
    state = compiled.forward._framejit_state
    blocks = [v for r in state.results for k, v in r.ns.env.items() if k.startswith("__fj_block") and callable(v)]
    return blocks


@pytest.mark.skipif(_native_same_atoms() is None, reason="framejit/_words.so not built")
def test_covered_block_is_compact_and_tells_changes_apart():
    m = Net()
    compiled = framejit.compile(m)
    x = randn(1, 3, 8, 8)
    torch.testing.assert_close(compiled(x), m(x))
    texts = [b.__code__.co_names for b in _covered_block(compiled)]
    names = {n for t in texts for n in t}
    assert "_forward_hooks" not in names                 # hook tables: one call of the helper
    entry_ns = compiled.forward._framejit_state.results[0].ns.env
    assert any(v is _no_hooks for v in entry_ns.values())
    assert any(v is _native_same_atoms() for v in entry_ns.values())    # stride/padding/dilation
    m.convs[1].stride = (2, 2)                           # a tuple of atoms changes: recompiled, as eager
    torch.testing.assert_close(compiled(x), m(x))
    m.convs[2].padding = (0, 0)
    torch.testing.assert_close(compiled(x), m(x))
    calls = []
    m.convs[0].register_forward_hook(lambda mod, i, o: calls.append(1) or o * 2)
    torch.testing.assert_close(compiled(x), m(x))       # a hook: the covered block fails, it runs
    assert len(calls) == 2
