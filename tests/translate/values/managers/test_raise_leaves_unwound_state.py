"""A graph that raises leaves grad mode as eager's with-blocks leave it, not as the graph started.

Why: when an op fails on values inside a compiled graph, eagerly the exception leaves through the
with-blocks open at that op (each restoring the mode from before it), and every other change the frame
made before it stays: `torch.set_grad_enabled(False)` called as a function, the end of a no_grad or
inference-mode block, including one a resume function was given. The graph's handlers put grad mode
back as it was when the graph started (fuzz seed 512181: a resume function leaves its given no_grad
block, then raises in an autocast block; eager ends with grad on, compiled with grad off). And when the
frame is rerun as Python after a raise (an op in a try block, or an effect before it), the rerun must
start in the mode the graph started in. Eager and compiled must raise the same exception, leave the same
state (grad mode, inference mode, autocast, nesting count, deterministic flag) and log the same values.
"""
import re

import pytest
import torch

import framejit

from tests.translate.ops.test_given_exits_on_raise import _boom, _reset, _state

GT = torch.ones(4)
LOG = []


def resumed_no_grad_then_raise_after_block(w, idx):
    with torch.no_grad():
        print("break")
    return w[idx]


def resumed_no_grad_then_dtype_mix_in_autocast(w, idx):        # seed 512181
    with torch.no_grad():
        k = int(w.detach().abs().sum().clamp(max=20))
    with torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False):
        y = torch.mv(torch.arange(16.0).view(4, 4) / 8, torch.einsum("ij,j->i", torch.full((4, 4), -1.0), GT) * 2)
    return y, k


def set_off_then_raise(w, idx):
    torch.set_grad_enabled(False)
    return (w * 2)[idx]


def c_set_off_then_raise(w, idx):
    torch._C._set_grad_enabled(False)
    return (w * 2)[idx]


def set_off_in_resume_then_raise(w, idx):
    print("break")
    torch.set_grad_enabled(False)
    return (w * 2)[idx]


def set_on_inside_no_grad_then_raise(w, idx):
    with torch.no_grad():
        torch.set_grad_enabled(True)
        return (w * 2)[idx]


def set_on_inside_inference_mode_then_raise(w, idx):
    with torch.inference_mode():
        torch.set_grad_enabled(True)
        return (w * 2)[idx]


def set_off_then_enable_grad_block_raises(w, idx):
    torch.set_grad_enabled(False)
    with torch.enable_grad():
        return (w * 2)[idx]


def inference_block_then_set_off_after_break(w, idx):
    with torch.no_grad():
        with torch.inference_mode():
            x = w * 2
    print("break")
    torch.set_grad_enabled(False)
    return x[idx]


def resumed_autocast_then_set_off_then_raise(w, idx):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        x = w @ w
        print("break")
        y = x @ w
    torch.set_grad_enabled(False)
    return y[idx]


def no_grad_without_switch_then_set_on_then_raise(w, idx):
    torch.set_grad_enabled(False)
    with torch.no_grad():                    # already off: no switch of its own in the graph
        torch.set_grad_enabled(True)
        x = w * 2
    with torch.enable_grad():
        with torch.no_grad():
            return x[idx]


def set_off_then_raise_in_break(w, idx):
    torch.set_grad_enabled(False)
    _boom(w * 2)


def rerun_starts_in_given_mode(w, idx):
    with torch.no_grad():
        print("break")
        LOG.append((w * 2).requires_grad)     # an effect before the raise: the frame reruns as Python
        torch.set_grad_enabled(True)
        y = (w * 2)[idx]
    return y


def rerun_try_after_set(w, idx):
    LOG.append(w * 2)
    torch.set_grad_enabled(False)
    try:
        y = (w * 2)[idx]
    except IndexError:
        y = w * 3
    torch.set_grad_enabled(True)
    return y


def rerun_try_in_resume_after_set(w, idx):
    print("break")
    torch.set_grad_enabled(False)
    LOG.append(w * 2)
    torch.set_grad_enabled(True)
    try:
        y = (w * 2)[idx]
    except IndexError:
        y = w * 3
    return y


CASES = [resumed_no_grad_then_raise_after_block, resumed_no_grad_then_dtype_mix_in_autocast, set_off_then_raise,
         c_set_off_then_raise, set_off_in_resume_then_raise, set_on_inside_no_grad_then_raise,
         set_on_inside_inference_mode_then_raise, set_off_then_enable_grad_block_raises,
         inference_block_then_set_off_after_break, resumed_autocast_then_set_off_then_raise,
         no_grad_without_switch_then_set_on_then_raise, set_off_then_raise_in_break, rerun_starts_in_given_mode,
         rerun_try_after_set, rerun_try_in_resume_after_set]


def _seen(value):
    if isinstance(value, torch.Tensor):
        return ("tensor", value.requires_grad, value.grad_fn is not None, value.detach().tolist())
    return value


def _outcome(fn, capsys):
    w = torch.arange(16.0).reshape(4, 4).div(10).requires_grad_()
    _reset()
    LOG.clear()
    try:
        out = fn(w, torch.tensor([7]))
        raised = None
    except Exception as e:           # noqa: BLE001 - the exception is the outcome compared
        out, raised = None, (type(e), str(e).split("\n")[0])
    state = _state()
    _reset()
    logged = [_seen(v) for v in LOG]
    capsys.readouterr()
    return raised, state, logged, _seen(out)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_raising_graph_leaves_grad_mode_as_eager(fn, backend, capsys):
    framejit.reset()
    eager = _outcome(fn, capsys)
    compiled = framejit.compile(fn, backend=backend)
    first = _outcome(compiled, capsys)
    second = _outcome(compiled, capsys)
    assert first == eager
    assert second == eager


@pytest.mark.parametrize("fn", [resumed_no_grad_then_dtype_mix_in_autocast, set_off_then_raise,
                                set_on_inside_inference_mode_then_raise, rerun_try_after_set],
                         ids=lambda f: f.__name__)
def test_raising_graph_leaves_grad_mode_as_eager_inductor(fn, capsys):
    """(An index out of range raises from inductor's kernel with its own message: only the state and the
    values are compared.)"""
    framejit.reset()
    eager = _outcome(fn, capsys)
    compiled = _outcome(framejit.compile(fn, backend="inductor"), capsys)
    assert (compiled[0] is None) == (eager[0] is None)
    assert compiled[1:] == eager[1:]


def test_marks_reach_the_generated_code():
    """Every grad-mode switch of the graph sets the mode a raise leaves (fx's code layout is read)."""
    def f(w):
        torch.set_grad_enabled(False)
        with torch.enable_grad():
            with torch.inference_mode():
                y = w * 2
        torch.set_grad_enabled(True)
        return y
    seen = []
    compiled = framejit.compile(f, backend=lambda gm, inputs: seen.append(gm.code) or gm)
    _reset()
    compiled(torch.ones(2))
    _reset()
    (code,) = seen
    marks = re.findall(r"__fj_unwind_grad = (\w+)", code)
    # the start, then after each switch: set off; enable_grad (a raise restores off), inference mode and
    # its end inside it, the end of enable_grad, set on (nothing open: as it is)
    assert marks == ["None", "None", "False", "False", "False", "None", "None"]
