"""Random draws keep program order when a graph is cut into independent parts (aot_eager, inductor).

Why: the region pass (backends/passes/state_regions.py) runs each part of a graph that shares no computed
value with the others as a Function of its own, and ran the parts in the order of their first node. A part
that starts early with a constant (`t = torch.tensor(1.5)`) and draws late (`torch.rand_like(t)`) then drew
before a part that draws in between, so values differed from eager's (fuzz seed 401064: eager 0.0435,
compiled 0.6028). The parts now run in the order of their draws; parts whose draws interleave become one.
"""
import pytest
import torch
import torch.nn.functional as F

from tests.differential import check

G_T = torch.arange(4.0) * -1.0


def constant_then_draw_after_other_draw(x):
    t = torch.tensor(1.5)
    a = torch.rand(())
    b = torch.rand_like(t)
    return a, b


def dead_draw_of_a_constant(x):
    t = torch.tensor(1.5)
    a = torch.rand(())
    b = torch.rand_like(t).abs()        # dead: still draws eagerly
    return a * 2


def dropout_between(x):
    t = torch.zeros(3)
    a = torch.rand(())
    d = F.dropout(G_T, p=0.5, training=True) + x
    b = torch.randn_like(t)
    return a, d, b


def interleaved_draws(x):
    t = torch.ones(2)
    a = torch.rand(2)
    b = torch.rand_like(t)
    c = torch.rand(2) + a               # a and c in one part, b in another between them
    return b, c


def three_parts(x):
    u = torch.full((2,), 2.0)
    v = torch.zeros(2)
    a = torch.randn(2)
    b = torch.rand_like(u) * x.sum()
    c = torch.rand_like(v)
    return a, b, c


CASES = [constant_then_draw_after_other_draw, dead_draw_of_a_constant, dropout_between, interleaved_draws,
         three_parts]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_draws_in_program_order(fn, backend):
    torch.manual_seed(0)
    check(fn, torch.ones(4), backend=backend, graphs=1)


@pytest.mark.parametrize("fn", [constant_then_draw_after_other_draw, interleaved_draws], ids=lambda f: f.__name__)
def test_draws_in_program_order_inductor(fn):
    torch.manual_seed(0)
    check(fn, torch.ones(4), backend="inductor", graphs=1)
