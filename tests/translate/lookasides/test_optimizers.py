"""Differential tests: torch.optim steps compiled (translate/lookasides/optimizers.py).

Eager and compiled runs start from deep copies of the same model and optimizer and take several steps on
the same gradients; parameters and every state tensor must agree after each step (step counters
exactly; Adam's updates to a tight tolerance: compiled, its bias corrections are float32 tensor ops on
the step counter where eager computes them in Python doubles from `step.item()`, as under
torch.compile), with one graph per step function and no recompile from step to step. The graph counts over four steps
are torch.compile(backend="eager")'s with torch 2.13 (SGD with momentum: 2, the first step making the
momentum buffers; Adam, AdamW, SGD without momentum: 1). They are constants here: torch.compile patches
optimizer internals it compiled, which would leak into the other tests of the process."""
import copy

import pytest
import torch

import framejit
from framejit.backends import CompileCounter

STEPS = 4


def make(kind, **options):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    return model, getattr(torch.optim, kind)(model.parameters(), **options)


def batches():
    gen = torch.Generator().manual_seed(1)
    return [torch.randn(5, 4, generator=gen) for _ in range(STEPS)]


def fill_grads(model, x):
    model.zero_grad()
    model(x).pow(2).sum().backward()


def step_method(opt):
    opt.step()


def assert_same(model_a, opt_a, model_b, opt_b, exact):
    tol = dict(atol=0, rtol=0) if exact else dict(atol=1e-6, rtol=1e-5)
    for p, q in zip(model_a.parameters(), model_b.parameters()):
        torch.testing.assert_close(p, q, **tol)
        state_a, state_b = opt_a.state[p], opt_b.state[q]
        assert state_a.keys() == state_b.keys()
        for key in state_a:
            if key == "step":
                assert torch.equal(state_a[key], state_b[key]) and state_a[key].dtype == state_b[key].dtype
            else:
                torch.testing.assert_close(state_a[key], state_b[key], **tol)


def run(kind, options, form, backend="eager"):
    model, opt = make(kind, **options)
    model_c, opt_c = copy.deepcopy((model, opt))
    framejit.reset()
    counter = CompileCounter(backend)
    if form == "bound method":
        compiled = framejit.compile(opt_c.step, backend=counter, fullgraph=True)
    else:
        step = framejit.compile(step_method, backend=counter, fullgraph=True)

        def compiled():
            step(opt_c)
    for x in batches():
        fill_grads(model, x)
        opt.step()
        fill_grads(model_c, x)
        compiled()
        assert_same(model, opt, model_c, opt_c, exact=kind == "SGD")
    return counter.frame_count


CASES = [("SGD", dict(lr=0.1, momentum=0.9), 2), ("SGD", dict(lr=0.1), 1),
         ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, foreach=True), 2),
         ("Adam", dict(lr=0.01), 1), ("Adam", dict(lr=0.01, foreach=True), 1),
         ("Adam", dict(lr=0.01, amsgrad=True, weight_decay=0.1), 1),
         ("AdamW", dict(lr=0.01), 1), ("AdamW", dict(lr=0.01, foreach=True), 1)]


@pytest.mark.parametrize("kind,options,graphs", CASES, ids=[f"{k}-{'-'.join(o)}" for k, o, _ in CASES])
@pytest.mark.parametrize("form", ["bound method", "function calling step"])
def test_steps_match_eager(kind, options, graphs, form):
    assert run(kind, options, form) == graphs


@pytest.mark.parametrize("kind,options", [("Adam", dict(lr=0.01, foreach=True)), ("SGD", dict(lr=0.1, momentum=0.9))])
def test_steps_match_eager_aot(kind, options):
    run(kind, options, "function calling step", backend="aot_eager")


def test_train_step_with_zero_grad_and_backward():
    """zero_grad is torch-disabled (a break under torch.compile too) and backward is a break: the
    forward graph and the step graph, each compiled once for all steps."""
    def train(model, opt, x):
        opt.zero_grad()
        loss = model(x).pow(2).sum()
        loss.backward()
        opt.step()
        return loss

    model, opt = make("AdamW", lr=0.01)
    model_c, opt_c = copy.deepcopy((model, opt))
    framejit.reset()
    counter = CompileCounter()
    compiled = framejit.compile(train, backend=counter)
    for x in batches():
        torch.testing.assert_close(train(model, opt, x), compiled(model_c, opt_c, x), atol=1e-5, rtol=1e-5)
        assert_same(model, opt, model_c, opt_c, exact=False)
    assert counter.frame_count == 2


def test_hooks_make_the_step_run_as_python():
    calls = []
    model, opt = make("Adam", lr=0.01)
    model_c, opt_c = copy.deepcopy((model, opt))
    opt.register_step_post_hook(lambda *a: calls.append("eager"))
    opt_c.register_step_post_hook(lambda *a: calls.append("compiled"))
    framejit.reset()
    counter = CompileCounter()
    step = framejit.compile(step_method, backend=counter)
    for x in batches()[:2]:
        fill_grads(model, x)
        opt.step()
        fill_grads(model_c, x)
        step(opt_c)
        assert_same(model, opt, model_c, opt_c, exact=False)
    assert calls == ["eager", "compiled"] * 2 and counter.frame_count == 0


def test_learning_rate_change_recompiles_once():
    model, opt = make("SGD", lr=0.1)
    model_c, opt_c = copy.deepcopy((model, opt))
    framejit.reset()
    counter = CompileCounter()
    step = framejit.compile(step_method, backend=counter)
    for i, x in enumerate(batches()):
        for o in (opt, opt_c):
            o.param_groups[0]["lr"] = 0.1 if i < 2 else 0.05
        fill_grads(model, x)
        opt.step()
        fill_grads(model_c, x)
        step(opt_c)
        assert_same(model, opt, model_c, opt_c, exact=True)
    assert counter.frame_count == 2
