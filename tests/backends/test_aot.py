"""aot_eager held to eager semantics (backends/aot.py): random numbers, in-place updates of inputs by
grad-requiring values, None gradients, and no torch-internal warnings from compiling.

Differential: each program runs eagerly and compiled with aot_eager on fresh copies of the inputs. The
harness (tests/differential.py) compares results, gradients and the global RNG state after forward and
backward; the tests here add what it does not see: a backward through some outputs only, the random
numbers drawn after the call, and warnings or eager fallbacks of the conversion.
"""
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import framejit
from tests.differential import check, randn


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _quietly(run):
    """run(), demanding that compiling warned nothing (beyond the harness's own .grad-of-a-non-leaf
    reads) and that no conversion fell back to eager."""
    earlier = {id(m) for m in framejit.metrics()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run()
    leaked = [f"{w.category.__name__}: {w.message}" for w in caught if "non-leaf Tensor" not in str(w.message)]
    assert leaked == []
    failed = [(m.co_name, m.fail_type, m.fail_reason) for m in framejit.metrics()
              if m.fail_type is not None and id(m) not in earlier]
    assert failed == []
    return out


# ---- random numbers ------------------------------------------------------------------------------

def mask_from_rand(x):
    return (x.sin() * (torch.rand_like(x) > 0.5).float() * 2).sum()


def rand_plus_input(x):
    return torch.rand(4) + x


def dropout_train(x):
    return F.dropout(x.relu(), 0.3, training=True) * 2


def bernoulli_mask(x):
    return (x.cos() * torch.bernoulli(torch.full_like(x, 0.5))).sum()


@pytest.mark.parametrize("fn", [mask_from_rand, rand_plus_input, dropout_train, bernoulli_mask])
def test_forward_and_backward_leave_the_global_rng_as_eager_does(fn):
    _quietly(lambda: check(fn, randn(4, requires_grad=True), backend="aot_eager", grads=True))

    def run(f):
        torch.manual_seed(0)
        x = randn(4, requires_grad=True)
        out = f(x)
        out.sum().backward()
        return out.detach(), x.grad, torch.rand(5)

    framejit.reset()
    eager, compiled = run(fn), run(framejit.compile(fn, backend="aot_eager"))
    for e, c in zip(eager, compiled):
        assert torch.equal(e, c)


def min_with_dropout_of_dropout(x):
    # minimum's backward needs the dropped-out constant: the partition's backward repeats its whole random
    # chain (dead once the forward's value is saved); the chain goes, not the frame (fuzzer seed 723094)
    noise = F.dropout(F.dropout(torch.linspace(-1, 1, 4), 0.5, training=True), 0.5, training=True)
    return torch.minimum(x, noise) * 3


def test_a_dead_random_chain_in_the_backward_is_dropped_without_a_fallback():
    def run(f):
        torch.manual_seed(0)
        x = randn(4, requires_grad=True)
        out = f(x)
        out.sum().backward()
        return out.detach(), x.grad, torch.rand(5)

    framejit.reset()
    eager = run(min_with_dropout_of_dropout)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a fallback warns
        compiled = run(framejit.compile(min_with_dropout_of_dropout, backend="aot_eager"))
    for e, c in zip(eager, compiled):
        assert torch.equal(e, c)


class DropoutNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.lin(x)).relu()


def test_dropout_in_train_mode_draws_the_masks_eager_draws():
    torch.manual_seed(0)
    eager = DropoutNet().train()
    model = DropoutNet().train()
    model.load_state_dict(eager.state_dict())
    compiled = framejit.compile(model, backend="aot_eager")
    outs = {}
    for name, m in (("eager", eager), ("compiled", compiled)):
        torch.manual_seed(1)
        steps = []
        for _ in range(3):
            out = m(randn(4, 8))
            out.sum().backward()
            steps.append(out.detach())
        outs[name] = steps + [torch.rand(3)]
    for e, c in zip(outs["eager"], outs["compiled"]):
        assert torch.equal(e, c)
    for p, q in zip(eager.parameters(), model.parameters()):
        torch.testing.assert_close(q.grad, p.grad)


# ---- in-place updates of inputs by grad-requiring values -------------------------------------------

def add_scaled(buf, w):
    buf.add_(w * 2)
    return buf.sum() * w.sum()


def copy_from(x, y):
    x.copy_(y)
    return x * 3


@pytest.mark.parametrize("fn", [add_scaled, copy_from])
def test_in_place_update_of_an_input_by_a_grad_requiring_value(fn):
    _quietly(lambda: check(fn, torch.zeros(3), randn(3, requires_grad=True), backend="aot_eager", grads=True))


# The update overwrites a value the backward of the first output saved: tracing that backward at compile
# time failed, where eager fails only if it runs. The backward through the second output runs.

def add_after_use(buf, w):
    z = buf * w
    buf.add_(w * 2)
    return z, w.sin() * buf


def copy_after_use(buf, w):
    z = (buf * w).sum()
    buf.copy_(w)
    return z, buf * 3


def copy_row_after_use(x, w):
    z = x * w
    x[0].copy_(w[1:].sum())
    return z, (x * 2).sum()


@pytest.mark.parametrize("fn", [add_after_use, copy_after_use, copy_row_after_use])
def test_an_update_of_a_value_a_backward_saved(fn):
    def run(f):
        buf, w = torch.zeros(3), randn(3, requires_grad=True)
        z, y = f(buf, w)
        y.sum().backward()
        return z.detach(), y.detach(), buf.detach(), w.grad

    framejit.reset()
    eager = run(fn)
    compiled = _quietly(lambda: run(framejit.compile(fn, backend="aot_eager")))
    for e, c in zip(eager, compiled):
        torch.testing.assert_close(c, e)


def test_a_backward_that_needs_the_value_an_update_overwrote_raises_at_backward_as_eager():
    def f(buf, w):
        z = buf * w
        buf.add_(w * 2)
        return z

    def run(g):
        out = g(torch.zeros(3), torch.ones(3, requires_grad=True))
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
            out.sum().backward()
        return out.detach(), info.type, str(info.value)

    eager = run(f)
    compiled = _quietly(lambda: run(framejit.compile(f, backend="aot_eager")))
    assert torch.equal(eager[0], compiled[0]) and eager[1:] == compiled[1:]


# ---- gradients eager leaves None -----------------------------------------------------------------

def second_output_only(x, w, u):
    return (x * w).sum(), u * 2


def shared_and_own(x, w, u):
    return (x * w).sum(), (u * w).sum()


def detached_in_first(x, w, u):
    return (x * w * u.detach()).sum(), (u * 3).sum()


def no_grad_path(x, w, u):
    return (x * w).sum() + (u > 0).sum()


def feeds_every_output(x, w, u):
    return (x * w * u).sum(), (w + u).sum()


@pytest.mark.parametrize("fn", [second_output_only, shared_and_own, detached_in_first, no_grad_path,
                                feeds_every_output])
@pytest.mark.parametrize("through", [0, 1])
def test_inputs_the_backward_does_not_reach_keep_a_none_grad(fn, through):
    def run(f):
        x, w, u = randn(3, seed=1), randn(3, seed=2, requires_grad=True), randn(3, seed=3, requires_grad=True)
        out = f(x, w, u)
        out = out if isinstance(out, tuple) else (out,)
        if through >= len(out) or not out[through].requires_grad:
            return None
        out[through].sum().backward()
        return w.grad, u.grad

    framejit.reset()
    eager = run(fn)
    compiled = _quietly(lambda: run(framejit.compile(fn, backend="aot_eager")))
    if eager is None:
        assert compiled is None
        return
    _assert_same_grads(eager, compiled)


@pytest.mark.parametrize("through", [0, 1])
def test_non_leaf_inputs_keep_their_gradients(through):
    def f(x, w, u):
        return (x * w).sum(), (u * 2 + x).sum()

    def run(g):
        a, b = randn(3, seed=1, requires_grad=True), randn(3, seed=2, requires_grad=True)
        u = randn(3, seed=3, requires_grad=True)
        g(a * 3, b.exp(), u)[through].backward()
        return a.grad, b.grad, u.grad

    framejit.reset()
    eager = run(f)
    compiled = _quietly(lambda: run(framejit.compile(f, backend="aot_eager")))
    _assert_same_grads(eager, compiled)


def _assert_same_grads(eager, compiled):
    """Each gradient None where eager's is None, else close to eager's."""
    for e, c in zip(eager, compiled):
        assert (e is None) == (c is None)
        if e is not None:
            torch.testing.assert_close(c, e)


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.head_a = nn.Linear(4, 2)
        self.head_b = nn.Linear(4, 3)

    def forward(self, x):
        h = self.body(x).relu()
        return self.head_a(h), self.head_b(h)


def test_a_parameter_the_loss_does_not_depend_on_keeps_a_none_grad():
    torch.manual_seed(0)
    eager = TwoHeads()
    model = TwoHeads()
    model.load_state_dict(eager.state_dict())
    compiled = framejit.compile(model, backend="aot_eager")
    x = randn(5, 4)
    eager(x)[0].sum().backward()
    _quietly(lambda: compiled(x)[0].sum().backward())
    for (name, p), q in zip(eager.named_parameters(), model.parameters()):
        assert (p.grad is None) == (q.grad is None), name
        if p.grad is not None:
            torch.testing.assert_close(q.grad, p.grad)


def test_inductor_keeps_a_none_grad_too():
    def run(f):
        x, w, u = randn(3, seed=1), randn(3, seed=2, requires_grad=True), randn(3, seed=3, requires_grad=True)
        f(x, w, u)[0].backward()
        return w.grad, u.grad

    eager = run(second_output_only)
    w_grad, u_grad = _quietly(lambda: run(framejit.compile(second_output_only, backend="inductor")))
    assert u_grad is None and eager[1] is None
    torch.testing.assert_close(w_grad, eager[0])


def test_the_state_switches_aot_knows_are_the_translators():
    from framejit.backends.passes.state_regions import PROFILER_SWITCHES, SWITCHES as STATE_SWITCHES, is_switch
    from framejit.translate.values.managers.state_managers import STATE_NODE_TARGETS
    from framejit.translate.lookasides.random_seeding import SEEDING
    from framejit.translate.lookasides.profiler_blocks import _ENTER, _EXIT
    marked = {t for t in STATE_NODE_TARGETS if t not in STATE_SWITCHES}     # kernel-flag blocks mark themselves
    assert marked and all(is_switch(t) for t in marked)
    assert {_ENTER, _EXIT} <= PROFILER_SWITCHES                              # the record_function block's nodes
    # plus the seed nodes and the record_function nodes
    assert STATE_SWITCHES | marked == STATE_NODE_TARGETS | set(SEEDING) | PROFILER_SWITCHES


G_BUF = torch.arange(4.0)


def view_of_updated_input_returned(w, buf):
    view = buf[1:3]
    unused = w * buf[:, None]            # saves buf for backward, then buf is written
    buf.add_(1.0)
    return view, unused


def test_output_viewing_an_input_the_graph_updates():
    # the in-place update goes outside the traced Function; the returned view must still view the input
    w, buf = randn(4, 4, requires_grad=True), torch.arange(4.0)
    out = _quietly(lambda: check(view_of_updated_input_returned, w, buf, backend="aot_eager"))
    view = framejit.compile(view_of_updated_input_returned, backend="aot_eager")(w, buf)[0]
    buf[1] = 100.0
    assert view[0].item() == 100.0


# ---- None gradients when the graph takes symbolic sizes (fuzzer seeds 601488, 704888, 706892) ----------

G_STEPS = torch.zeros(())


def dead_use_of_parameters(lin, x, n):
    G_STEPS.add_(1.0)                   # an in-place write: the graph stays one Function
    unused = torch.einsum("ij,j->i", lin.weight, lin.bias)
    return x * 2.0 + n


def head_b_unused(model, x, n):
    a, b = model(x)
    return a.sum() * n


@pytest.mark.parametrize("dynamic", [None, True])
@pytest.mark.parametrize("fn, calls", [
    (dead_use_of_parameters, [(4, 3), (4, 0), (6, 5)]),        # the int, then the size, becomes symbolic
    (head_b_unused, [(5, 2), (7, 2), (9, 3)]),                  # a second head the loss does not use
])
def test_a_symbolic_size_input_keeps_none_grads(fn, calls, dynamic):
    # a SymInt graph input has no edge on the AOT Function: the hook must still line up its tensor inputs
    def run(f, make_model):
        grads = []
        for rows, n in calls:
            torch.manual_seed(0)
            model = make_model()
            x = randn(rows, 4, seed=rows, requires_grad=True)
            f(model, x, n).sum().backward()
            grads.append([x.grad] + [p.grad for p in model.parameters()])
        return grads

    make_model = (lambda: nn.Linear(4, 4)) if fn is dead_use_of_parameters else TwoHeads
    framejit.reset()
    eager = run(fn, make_model)
    compiled = _quietly(lambda: run(framejit.compile(fn, backend="aot_eager", dynamic=dynamic), make_model))
    for call, (e_grads, c_grads) in enumerate(zip(eager, compiled)):
        for k, (e, c) in enumerate(zip(e_grads, c_grads)):
            assert (e is None) == (c is None), (call, k)
            if e is not None:
                torch.testing.assert_close(c, e)


# ---- None gradients when the graph writes an input in place ----------------------------------------

def writes_a_non_leaf_input(x, w, u):
    x.add_(1.0)
    return (x * w).sum(), (u * 2).sum()


def writes_a_grad_value_into_an_input(x, w, u):
    x[0] = w[0] * 2
    return x.sum(), (u * 2).sum()


@pytest.mark.parametrize("fn", [writes_a_non_leaf_input, writes_a_grad_value_into_an_input])
@pytest.mark.parametrize("through", [0, 1])
def test_an_input_written_in_place_keeps_none_grads(fn, through):
    # the written input's grad_fn changed during the trace: it is anchored where it stood on entry
    def run(f):
        a = randn(3, seed=1, requires_grad=True)
        x = a * 1 if fn is writes_a_non_leaf_input else randn(3, seed=1)
        w, u = randn(3, seed=2, requires_grad=True), randn(3, seed=3, requires_grad=True)
        f(x, w, u)[through].backward()
        return a.grad, w.grad, u.grad

    framejit.reset()
    eager = run(fn)
    compiled = _quietly(lambda: run(framejit.compile(fn, backend="aot_eager")))
    _assert_same_grads(eager, compiled)
