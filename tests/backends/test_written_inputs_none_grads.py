"""A graph (or a region of one) that writes an input in place, then a backward through its other outputs:
inputs that backward does not reach keep eager's None gradient (backends/passes/none_grads.py, with the
region inputs state_regions.py hands on; fuzz seed 100619, tests/fuzz/regressions/).

AOT autograd makes a written input one more output of its Function; a backward through the other outputs
gives it zeros, which reached the input's history: the leaf behind it got a zero .grad where eager has None.
Differential: eager and compiled on fresh inputs, the backward inside the function (as model code calls it).
"""
import pytest
import torch

import framejit
from tests.differential import randn


def written_graph_input(a, x):
    a[0] = 1.0
    loss = x.pow(2).sum()
    print("break")
    loss.backward()
    return loss


def written_after_autocast_block(a, x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ac = torch.mv(a, torch.ones(4))
    ac[1:3] = ac[:2].clone()
    (x.pow(2).sum()).backward()


def written_after_no_grad_block(a, x):
    b = a * 2
    with torch.no_grad():
        y = x * 3
    b[0] = 1.0
    (x.pow(2).sum() + y.sum()).backward()
    return b


def written_and_returned(a, x):
    a.mul_(2)
    loss = (x * 2).sum()
    print("break")
    loss.backward()
    return a


CASES = [(written_graph_input, True), (written_after_autocast_block, False), (written_after_no_grad_block, False),
         (written_and_returned, True)]


def _run(fn, through_non_leaf):
    w = randn(4, 4, seed=1, requires_grad=True)
    x = randn(2, 4, seed=2, requires_grad=True)
    fn(w * 2 if through_non_leaf else w, x)
    return w.grad, x.grad


@pytest.mark.filterwarnings("ignore::framejit.GraphBreakWarning")
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("fn, through_non_leaf", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_written_input_keeps_a_none_grad(fn, through_non_leaf, backend):
    if backend == "inductor" and fn is not written_graph_input:
        pytest.skip("one small inductor case")
    framejit.reset()
    eager = _run(fn, through_non_leaf)
    compiled = _run(framejit.compile(fn, backend=backend), through_non_leaf)
    assert eager[0] is None
    assert compiled[0] is None
    torch.testing.assert_close(compiled[1], eager[1], rtol=0, atol=0)
