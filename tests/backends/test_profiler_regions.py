"""record_function blocks under inductor: the enter and exit run between compiled regions
(backends/passes/state_regions.py's PROFILER_SWITCHES).

Issue 24's train row: the optimizer's step is a `record_function("Optimizer.step#SGD.step")` block. Inside a
compiled region inductor failed on it ("Tried to erase Node _record_function_enter_new but it still had 1
users"), so the whole frame ran as plain Python after a wasted inductor compile. Now the block's ends are
state switches: the code between them is compiled, and a profiler running around the call still records
the range.
Before the change, the three tests of a block under no_grad (the SGD-like step, a real optimizer step, the
profiler around the call) failed; the two with grads (AOT autograd's joint trace kept the pair) passed, and
stay to check that cutting at the block's ends keeps gradients.
"""
import pytest
import torch

import framejit
from tests.differential import check, randn

pytestmark = pytest.mark.filterwarnings("error:framejit failed to convert:RuntimeWarning")


def sgd_like_step(p0, p1, g0, g1):
    with torch.no_grad():
        with torch.profiler.record_function("Optimizer.step#SGD.step"):
            p0.add_(g0, alpha=-0.1)
            p1.add_(g1, alpha=-0.1)
    return (p0 * p1).sum()


def block_with_grad(x):
    with torch.profiler.record_function("blk"):
        y = x.sin() * 2
    return y.cos()


def nested_blocks(x):
    with torch.autograd.profiler.record_function("outer"):
        y = x * 2
        with torch.profiler.record_function("inner"):
            y = y.exp()
    return y + 1


def test_sgd_like_step_compiles_and_writes_as_eager():
    check(sgd_like_step, randn(4, 4, seed=1, requires_grad=True), randn(4, 4, seed=2, requires_grad=True),
          randn(4, 4, seed=3), randn(4, 4, seed=4), backend="inductor")


@pytest.mark.parametrize("fn", [block_with_grad, nested_blocks], ids=lambda f: f.__name__)
def test_blocks_with_grads(fn):
    check(fn, randn(6, seed=5, requires_grad=True), backend="inductor", grads=True)


def test_a_real_optimizer_step():
    """torch.optim.SGD's step (its own record_function block) on a small model, compiled as one function."""
    def make():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(model, opt, x):
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    x = randn(3, 4, seed=6)
    eager_model, eager_opt = make()
    compiled_model, compiled_opt = make()
    compiled_step = framejit.compile(step, backend="inductor")
    for _ in range(3):
        expected = step(eager_model, eager_opt, x)
        got = compiled_step(compiled_model, compiled_opt, x)
        torch.testing.assert_close(got, expected)
    for a, b in zip(eager_model.parameters(), compiled_model.parameters()):
        torch.testing.assert_close(a, b)
    converted = [m for m in framejit.metrics() if m.co_name in ("step", "_use_grad") or "step" in m.co_name]
    assert converted and all(m.outcome != "eager" for m in converted), \
        [(m.frame_key, m.outcome, m.fail_reason) for m in converted]


def test_profiler_around_the_compiled_call_records_the_ranges():
    compiled = framejit.compile(nested_blocks, backend="inductor")
    compiled(randn(6, seed=7))
    with torch.autograd.profiler.profile() as prof:
        compiled(randn(6, seed=7))
    names = [e.name for e in prof.function_events]
    assert "outer" in names and "inner" in names, names
