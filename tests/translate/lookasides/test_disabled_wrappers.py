"""Differential tests: functions torch wraps with torch._disable_dynamo, Optimizer.zero_grad first
(translate/lookasides/disabled_wrappers.py).

torch.compile(fullgraph=True) refuses zero_grad ("Attempted to inline function marked as skipped") and
without fullgraph runs it as Python between graphs; framejit translates the wrapped function, so
zero_grad is part of the graph around it. Eager and compiled runs start from deep copies of the same
model and optimizer with the same gradients; the grads after zero_grad (None, or zeros in place) and
the parameters after training steps must agree.
"""
import copy

import pytest
import torch

import framejit
from framejit.backends import CompileCounter


def make(kind, **options):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    return model, getattr(torch.optim, kind)(model.parameters(), **options)


def fill_grads(model, seed):
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(seed))
    model(x).pow(2).sum().backward()


def assert_same_grads(model_a, model_b):
    for p, q in zip(model_a.parameters(), model_b.parameters()):
        assert (p.grad is None) == (q.grad is None)
        if p.grad is not None:
            assert torch.equal(p.grad, q.grad) and p.grad.requires_grad == q.grad.requires_grad


ZERO_GRAD_CASES = [(kind, dict(lr=0.1, foreach=foreach), set_to_none)
                   for kind in ("SGD", "Adam") for foreach in (False, True) for set_to_none in (True, False, None)]


@pytest.mark.parametrize("kind,options,set_to_none", ZERO_GRAD_CASES,
                         ids=[f"{k}-foreach{o['foreach']}-set_to_none{s}" for k, o, s in ZERO_GRAD_CASES])
def test_zero_grad_in_one_graph(kind, options, set_to_none):
    def zero(opt, x):
        if set_to_none is None:
            opt.zero_grad()
        else:
            opt.zero_grad(set_to_none=set_to_none)
        return x * 2

    model, opt = make(kind, **options)
    model_c, opt_c = copy.deepcopy((model, opt))
    framejit.reset()
    counter = CompileCounter("eager")
    compiled = framejit.compile(zero, backend=counter, fullgraph=True)
    x = torch.ones(2)
    for seed in range(3):
        fill_grads(model, seed)
        fill_grads(model_c, seed)
        assert torch.equal(zero(opt, x), compiled(opt_c, x))
        assert_same_grads(model, model_c)
    # zero_grad(set_to_none=True) reads no grad, one graph for every call; set_to_none=False reads each
    # grad (its zero_ needs it): the grads are guarded, and they are tensors from the first call on
    assert counter.frame_count == 1


def test_zero_grad_before_any_backward():
    """Before the first backward every grad is None: zero_grad(set_to_none=False) has nothing to zero."""
    def zero(opt):
        opt.zero_grad(set_to_none=False)

    model, opt = make("SGD", lr=0.1)
    framejit.reset()
    framejit.compile(zero, backend="eager", fullgraph=True)(opt)
    assert all(p.grad is None for p in model.parameters())


def test_train_step_graphs():
    """opt.zero_grad(); loss.backward(); opt.step(): backward is a break (under torch.compile too). framejit:
    two graphs (zero_grad with the forward, then the step), each compiled once for every step;
    torch.compile(backend="eager") makes two as well, with zero_grad run as Python before the first."""
    def train(model, opt, x):
        opt.zero_grad()
        loss = model(x).pow(2).sum()
        loss.backward()
        opt.step()
        return loss

    model, opt = make("SGD", lr=0.1)
    model_c, opt_c = copy.deepcopy((model, opt))
    framejit.reset()
    counter = CompileCounter("eager")
    compiled = framejit.compile(train, backend=counter)
    for seed in range(4):
        x = torch.randn(5, 4, generator=torch.Generator().manual_seed(seed))
        assert torch.equal(train(model, opt, x), compiled(model_c, opt_c, x))
        for p, q in zip(model.parameters(), model_c.parameters()):
            assert torch.equal(p, q) and torch.equal(p.grad, q.grad)
    assert counter.frame_count == 2
    report = framejit.explain(train)(copy.deepcopy(model), copy.deepcopy(opt), torch.ones(5, 4))
    assert report.graph_break_count == 1 and "backward" in report.break_reasons[0].reason


def test_user_subclass_calling_super_zero_grad():
    class Counting(torch.optim.SGD):
        calls = 0

        def zero_grad(self, set_to_none=True):
            type(self).calls += 1
            super().zero_grad(set_to_none=set_to_none)

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    opt = Counting(model.parameters(), lr=0.1)
    fill = lambda: model(torch.ones(3)).sum().backward()      # noqa: E731
    fill()
    framejit.reset()
    framejit.compile(lambda o: o.zero_grad(), backend="eager", fullgraph=True)(opt)
    assert Counting.calls == 1 and all(p.grad is None for p in model.parameters())


def test_compiled_bound_zero_grad():
    """framejit.compile(opt.zero_grad) itself (the wrapper is the compiled function)."""
    model, opt = make("Adam", lr=0.1)
    model_c, opt_c = copy.deepcopy((model, opt))
    framejit.reset()
    counter = CompileCounter("eager")
    compiled = framejit.compile(opt_c.zero_grad, backend=counter, fullgraph=True)
    for set_to_none in (True, False):
        fill_grads(model, 0)
        fill_grads(model_c, 0)
        opt.zero_grad(set_to_none=set_to_none)
        compiled(set_to_none=set_to_none)
        assert_same_grads(model, model_c)
    assert counter.frame_count == 2
