"""A write into memory its operand shares, through an op whose output shares its input's storage without
being a view (`detach`): eager's overlap check must hold on every call (translate/graph/fake_memo.py,
translate/graph/overlap.py).

Fuzz seed 510103: `t += t.detach().transpose(0, 1)` raises eagerly on every call ("some elements of the
input tensor and the written-to tensor refer to a single memory location"). The first conversion saw the
overlap (the fake `detach` shares t's storage) and broke there; but the memo of fake results had recorded
`detach` as a fresh output, so a later conversion rebuilt it on a storage of its own, saw no overlap,
and the graph wrote the sum without the raise.
"""
import pytest
import torch

from tests.differential import check_calls

BACKENDS = ["eager", "aot_eager", "inductor"]


def caught_iadd(x):
    t = torch.eye(4)
    try:
        t += t.detach().transpose(0, 1)
        print("no raise")
    except RuntimeError as e:
        print("caught", type(e).__name__)
    return x + 1, t


def caught_copy(x):
    t = x * 2
    try:
        t.copy_(t.detach().t())
        print("copied")
    except RuntimeError as e:
        print("caught", type(e).__name__)
    return t


def caught_out(x):
    t = x + 1
    try:
        torch.mul(t, 2, out=t.detach().t())
        print("written")
    except RuntimeError as e:
        print("caught", type(e).__name__)
    return t


def raised_shifted(x):
    t = x.clone()
    t[1:].add_(t.detach()[:-1])
    return t


def raised_on_input(x):
    x += x.detach().t()
    return x


def allowed_full_overlap(x):           # the same memory element for element: eager allows it
    t = x * 3
    t += t.detach()
    return t


FNS = [caught_iadd, caught_copy, caught_out, raised_shifted, raised_on_input, allowed_full_overlap]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", FNS, ids=lambda f: f.__name__)
def test_every_call_checks_overlap(fn, backend):
    calls = [(torch.arange(16.0).reshape(4, 4) + i,) for i in range(4)]
    check_calls(fn, calls, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_after_another_frame_detached(backend):
    """The memo is process-wide: another function's `detach` of the same layout came first."""
    def warm(x):
        return x.detach() * 2
    check_calls(warm, [(torch.ones(4, 4),)], backend=backend)
    check_calls(caught_iadd, [(torch.ones(4, 4),), (torch.zeros(4, 4),)], backend=backend)
