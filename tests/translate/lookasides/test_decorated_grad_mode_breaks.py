"""A function decorated with @torch.no_grad() & co whose body has a graph break.

Why this exists: the decorator's wrapper (torch.utils._contextlib's `decorate_context`) runs
`with ctx_factory(): return func(...)`, where ctx_factory is the manager's bound `clone` method. Inlined
from its caller, framejit reads the closure and enters the grad mode itself; but when the decorated
function breaks, the wrapper is compiled as a frame of its own, and there `ctx_factory()` -- a call into
torch.utils, never inlined -- was one more graph break, which also left the with-block to plain Python:
Phi-3's rotary embedding (@torch.no_grad() over a longrope update that broke) took two graphs more than
torch.compile. `clone()` of torch's grad-mode managers is the manager its constructor makes.
"""
import pytest
import torch

from tests.differential import check, randn
from tests.translate.lookasides.torch_compile_count import torch_compile_graphs

x4 = randn(4, seed=3, requires_grad=True)


@torch.no_grad()
def no_grad_with_data_branch(x):
    y = x * 2
    if y.sum() > 0:
        y = y + 1
    return y * 3


def calls_no_grad(x):
    return no_grad_with_data_branch(x + 1) - 1


@torch.enable_grad()
def enable_grad_with_print(x):
    y = x * 2
    print("inside", y.requires_grad)
    return y.sum()


def calls_enable_grad_under_no_grad(x):
    with torch.no_grad():
        return enable_grad_with_print(x) + x


@torch.set_grad_enabled(False)
def grad_disabled_with_int(x):
    y = x + 1
    top = int(y.argmax())
    return y * y * top


def calls_set_grad_enabled(x):
    return grad_disabled_with_int(x).sum() * x


@torch.inference_mode()
def inference_with_branch(x):
    y = x.exp()
    if y.max() > 1:
        y = y - 1
    return y


def calls_inference_mode(x):
    return inference_with_branch(x.detach()).clone() + 1


@pytest.mark.parametrize("fn", [calls_no_grad, calls_enable_grad_under_no_grad, calls_set_grad_enabled,
                                calls_inference_mode])
def test_matches_eager_in_no_more_graphs_than_torch_compile(fn):
    graphs = torch_compile_graphs(fn, x4)
    seen = []

    def counting(gm, example_inputs):
        seen.append(gm)
        return gm.forward
    check(fn, x4, grads=fn is not calls_inference_mode, backend=counting)
    assert len(seen) <= graphs, f"framejit: {len(seen)} graphs, torch.compile: {graphs}"
