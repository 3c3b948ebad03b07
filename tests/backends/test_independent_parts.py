"""One Function per independent part of a graph (backends/passes/state_regions.py independent_parts),
also when the graph writes in place or draws random numbers.

Eager gives each computation its own autograd history: `torch.autograd.grad` (or a backward) through
one frees only what that one saved, and a backward through another output still runs. A compiled graph
is one Function under AOT autograd, so the pass cuts it into its independent parts. A graph that wrote
anything in place used to stay whole (fuzz seeds 402898, 406600, 408617: "Trying to backward through
the graph a second time" where eager has no error); now a write joins only the nodes on the written
storage, so the order of a write and its reads is kept. The parts run one after another, so the random
ops are one part: before, two independent parts reordered eager's draws from the global generator.

Differential (tests/differential.py's check: outputs, every leaf's gradient after backward of the
outputs, mutated globals, random state) under eager, aot_eager and inductor.
"""
import pytest
import torch
import torch.nn.functional as F

import framejit
from tests.differential import check, randn

BACKENDS = ["eager", "aot_eager", "inductor"]
G = torch.arange(4.0)


def global_written_then_grad_of_other_part(w, x):
    t1 = x @ torch.where(w > 0, w, G.view(4, 1).expand(4, 4))
    G.add_(1.0)
    gw, = torch.autograd.grad((w * w).sum(), [w])
    return t1, gw


def view_of_global_written_read_after(w, x):
    v = G.view(2, 2)
    v.zero_()
    out = x * G + v.sum()                  # reads the written storage after the write: same part
    gw, = torch.autograd.grad((w.sin() * 2.0).sum(), [w])
    return out.tanh(), gw


def global_read_before_written_in_other_chain(w, x):
    early = (x + G).exp()                  # reads G before the write: must not run after it
    G.mul_(2.0)
    late = (w @ G.view(4, 1)).sum()
    gw, = torch.autograd.grad(late.cos(), [w])
    return early, gw


def input_written_then_grad(w, x, buf):
    t = (x * w[0]).relu()
    buf.add_(x.detach())
    gw, = torch.autograd.grad(w.pow(3).sum(), [w])
    return t * 2.0, gw, buf


def backward_twice_through_parts(w, x):
    t = F.linear(x, w).tanh()
    G.sub_(0.5)
    loss = (w * w).sum()
    loss.backward()                        # frees the loss's part; t's part keeps its saved values
    return t


def random_draws_in_two_parts(x, y):
    a = torch.randn(4) * x
    b = torch.rand(4) * y
    c = a + torch.randn(4)
    return a, b, c


def dropout_in_two_parts(x, y):
    a = F.dropout(x * 2.0, 0.5)
    b = torch.rand_like(y) * y
    c = F.dropout(a.exp(), 0.3)
    return b, c


def _wx(b=3):
    return randn(4, 4, requires_grad=True), randn(b, 4, seed=1, requires_grad=True)


@pytest.fixture(autouse=True)
def _fresh_global():
    G.detach_().copy_(torch.arange(4.0))
    yield
    G.detach_().copy_(torch.arange(4.0))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [global_written_then_grad_of_other_part, view_of_global_written_read_after,
                                global_read_before_written_in_other_chain, backward_twice_through_parts])
def test_write_in_place_keeps_parts_separate(fn, backend):
    check(fn, *_wx(), backend=backend, grads=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_written_input_keeps_parts_separate(backend):
    check(input_written_then_grad, *_wx(), torch.zeros(3, 4), backend=backend, grads=True)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [random_draws_in_two_parts, dropout_in_two_parts])
def test_random_draws_keep_eagers_order(fn, backend):
    check(fn, randn(4, requires_grad=True), randn(4, seed=1, requires_grad=True), backend=backend, grads=True)



def global_written_by_value_requiring_grad(w, x):
    g = G * 1.0                            # reads G before the write
    G.sub_(w.sum(0), alpha=0.5)            # G now hangs from SubBackward0, as eagerly
    return (x * g).sum()


def input_view_written_by_value_requiring_grad(buf, w):
    z = buf + w
    buf[0].copy_(w[1:].sum())
    return z, (buf * 2).sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_input_written_with_grad_hangs_from_eagers_op(backend):
    def history(fn, *args):
        fn(*args)
        return type(G.grad_fn).__name__, type(args[0].grad_fn).__name__

    def both(fn, make):
        G.detach_().copy_(torch.arange(4.0))
        eager = history(fn, *make())
        G.detach_().copy_(torch.arange(4.0))
        compiled = history(framejit.compile(fn, backend=backend), *make())
        assert compiled == eager

    both(global_written_by_value_requiring_grad, _wx)
    both(input_view_written_by_value_requiring_grad, lambda: (torch.zeros(3), randn(3, requires_grad=True)))
    G.detach_().copy_(torch.arange(4.0))
    check(input_view_written_by_value_requiring_grad, torch.zeros(3), randn(3, requires_grad=True),
          backend=backend, grads=True)


def grad_of_a_mask_sized_like_a_shared_value(w, x):
    t = x[:, :]
    t = t * 0.5 + t                        # t feeds both losses, but only through full_like's size
    gx, = torch.autograd.grad((x * torch.bernoulli(torch.full_like(t, 0.5))).sum() + x.pow(2).sum(), [x])
    return (x * t).sum() + x.pow(2).sum(), gx


def written_view_of_a_view_of_a_global(w, x):
    v = G.view(2, 2)[0]
    v.zero_()
    gw, = torch.autograd.grad((w.sin() * 2.0).sum(), [w])
    return x * G + v.sum(), gw


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [grad_of_a_mask_sized_like_a_shared_value, written_view_of_a_view_of_a_global])
def test_values_without_history_do_not_join_parts(fn, backend):
    """Fuzz seed 500761: autograd.grad through a part freed what a later backward needed, because a
    `full_like(t)` (no autograd history) joined the two losses into one Function; views and writes of
    values without history still stay with what they view or write."""
    check(fn, *_wx(), backend=backend, grads=True)
