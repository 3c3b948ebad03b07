"""`t.requires_grad_()` on a tensor the graph made: the new leaf comes out requiring grad, as eagerly
(backends/passes/state_regions.py runs the node as eager's own op between regions).

AOT autograd (aot_eager, inductor) traced `x.clone().requires_grad_()` into its Function, whose output
came back not requiring grad: a later `(w * t)` had no history, `backward()` raised "element 0 of
tensors does not require grad", and "Inference tensors cannot be saved for backward" was lost (found
beside fuzz seed 509934's inference-tensor cases).
"""
import pytest
import torch

from tests.differential import check

BACKENDS = ["eager", "aot_eager", "inductor"]


def clone_made_leaf(x):
    w = x.clone().requires_grad_()
    return w, w.is_leaf, w.requires_grad


def leaf_used_after(x):
    w = (x * 2).detach().requires_grad_(True)
    y = (w * x).sin().sum()
    return w, y, y.requires_grad, w.is_leaf


def factory_made_leaf(x):
    w = torch.zeros(4).requires_grad_()
    return (w + x).cos(), w


def leaf_then_backward(x):
    w = x.clone().requires_grad_()
    loss = (w * w).sum()
    loss.backward()
    return w.grad, loss


def flag_turned_off_and_on(x):
    w = x.detach().requires_grad_(True)
    w.requires_grad_(False)
    v = x.clone().requires_grad_(False)
    return w.requires_grad, v.requires_grad, w * 2


FNS = [clone_made_leaf, leaf_used_after, factory_made_leaf, leaf_then_backward, flag_turned_off_and_on]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", FNS, ids=lambda f: f.__name__)
def test_leaf_made_in_graph(fn, backend):
    check(fn, torch.randn(4, generator=torch.Generator().manual_seed(0)), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_leaf_of_input_requiring_grad(backend):
    def f(x):
        y = x * 2
        w = x.detach().requires_grad_()
        return (y * w).sum(), w
    check(f, torch.randn(4, generator=torch.Generator().manual_seed(1)).requires_grad_(), backend=backend,
          grads=True)
