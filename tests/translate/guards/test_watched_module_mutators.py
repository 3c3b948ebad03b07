"""A frame that changes a module through an nn.Module entry point framejit watches (hook registration,
add_module, register_buffer, a hook handle's remove: translate/guards/module_watch.py) runs that call
as plain Python (translate/calls.py, convert/callees.py), so the watch counter moves at run time.
Before the fix the watch's wrapper was inlined and its counter bump traced as a constant store: a
forward hook registered on every call was seen once, then the covered guards never ran again and the
module kept running with its first hook table (fuzzer seeds 720679, 721285).

Differential over several calls on one module each side (the state accumulates across calls, so
fresh copies per call would hide it): eager on one module, compiled on a deep copy of it."""
import copy
import warnings

import pytest
import torch

import framejit


def _module():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 4))


def forward_hook_each_call(seq, x):
    seq.register_forward_hook(lambda m, args, out: out * 0.5)
    return seq(x)


def pre_hook_each_call(seq, x):
    first = seq[0](x)
    seq.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    return seq(x), first


def hook_added_then_removed_every_other_call(seq, x):
    handle = seq.register_forward_hook(lambda m, args, out: out + 1)
    out = seq(x)
    if len(seq._forward_hooks) % 2 == 0:
        handle.remove()
    return out, seq(x)


def module_added_each_call(seq, x):
    seq.add_module(str(len(seq)), torch.nn.Tanh())
    return seq(x)


def buffer_registered_each_call(seq, x):
    seq.register_buffer(f"b{len(seq._buffers)}", torch.ones(4) * len(seq._buffers))
    return seq(x) + sum(seq._buffers.values())


@pytest.mark.parametrize("fn", [forward_hook_each_call, pre_hook_each_call, hook_added_then_removed_every_other_call,
                                module_added_each_call, buffer_registered_each_call], ids=lambda f: f.__name__)
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_module_changed_by_the_frame_on_every_call(fn, backend):
    framejit.reset()
    eager_seq = _module()
    compiled_seq = copy.deepcopy(eager_seq)
    compiled = framejit.compile(fn, backend=backend)
    x = torch.randn(4, generator=torch.Generator().manual_seed(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)          # a framejit failure would warn
        for call in range(5):
            expected = fn(eager_seq, x)
            got = compiled(compiled_seq, x)
            for e, c in zip(torch.utils._pytree.tree_leaves(expected), torch.utils._pytree.tree_leaves(got)):
                assert torch.allclose(e, c), f"call {call}: {e} (eager) != {c} (compiled)"
