"""A call that raises inside a grad-mode or autocast block split by a graph break leaves torch's state as eager.

Why: across a break the block is entered for real before the break function, and the resume function is
given its __exit__ (GradModeExit, AutocastExit). Eagerly the block's __exit__ runs when an exception leaves
it; when the resume function's compiled graph raised, nothing ran it, and grad mode stayed off, autocast on
with its nesting count held (fuzz seed 401865). Each case raises at a different place: in the graph of the
resume function (a value-dependent index, a dtype mix autocast makes that fake propagation does not see),
in the break's plain Python, in a second resume function, in a callee's resume function inside the caller's
block, after a deterministic-algorithms flag the raise leaves set. Eager and compiled must raise the same
exception and leave the same state: grad mode, inference mode, autocast enabled/dtype/cache/nesting count,
deterministic algorithms.
"""
import pytest
import torch

import framejit

GT = torch.ones(4)


def _nesting():
    n = torch.autocast_increment_nesting() - 1
    torch.autocast_decrement_nesting()
    return n


def _state():
    return (torch.is_grad_enabled(), torch.is_inference_mode_enabled(), torch.is_autocast_enabled("cpu"),
            torch.get_autocast_dtype("cpu"), torch.is_autocast_cache_enabled(), _nesting(),
            torch.are_deterministic_algorithms_enabled())


def _reset():
    torch._C._set_grad_enabled(True)
    torch.set_autocast_enabled("cpu", False)
    torch.use_deterministic_algorithms(False)
    while _nesting() > 0:
        torch.autocast_decrement_nesting()
    torch.clear_autocast_cache()


@framejit.disable
def _boom(x):
    raise ValueError(f"boom {tuple(x.shape)}")


def dtype_mix_in_resume_graph(w):
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            x = torch.mv(w, GT)
            print("break")
            y = torch.mv(torch.matmul(w, w), GT)     # bfloat16 @ float32: raises eagerly
    return x, y


def dtype_mix_in_second_resume_graph(w):
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            x = torch.mv(w, GT)
            print("break")
            x = x + 1
            print("break again")
            y = torch.mv(torch.matmul(w, w), GT)
    return x, y


def index_in_resumed_no_grad(w):
    with torch.no_grad():
        x = w * 2
        print("break")
        y = x[torch.tensor(7)]                      # out of range: raises on values only
    return y


def index_in_resumed_enable_grad(w):
    with torch.no_grad():
        with torch.enable_grad():
            x = w * 2
            print("break")
            y = x.sum(0)[torch.tensor(9)]
    return y


def index_in_resumed_autocast_inside_enable_grad(w):
    with torch.enable_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False):
            x = w @ w
            print("break")
            y = (x @ w)[torch.tensor(11)]
    return y


def raise_in_break(w):
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            x = torch.mv(w, GT)
            _boom(x)
    return x


def raise_in_second_break(w):
    with torch.enable_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            x = torch.mv(w, GT)
            print("break")
            x = x + 1
            _boom(x)
    return x


def effect_then_raise_in_resume_graph(w, log):
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            x = w @ w
            print("break")
            log.append(1)
            y = torch.mv(x, GT)
    return y


def _autocast_part(w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        x = w @ w
        print("break")
        return torch.mv(x, GT)


def raise_in_callee_resume_inside_callers_no_grad(w):
    with torch.no_grad():
        return _autocast_part(w) + 1


def deterministic_flag_set_then_raise_in_resume_graph(w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        torch.use_deterministic_algorithms(True)        # left on eagerly: the raise skips the reset
        x = w @ w
        print("break")
        y = torch.mv(x, GT)
        torch.use_deterministic_algorithms(False)
    return y


CASES = [raise_in_callee_resume_inside_callers_no_grad, deterministic_flag_set_then_raise_in_resume_graph,
         dtype_mix_in_resume_graph, dtype_mix_in_second_resume_graph, index_in_resumed_no_grad,
         index_in_resumed_enable_grad, index_in_resumed_autocast_inside_enable_grad, raise_in_break,
         raise_in_second_break, effect_then_raise_in_resume_graph]


def _outcome(fn, capsys):
    w = torch.arange(16.0).reshape(4, 4).div(10).requires_grad_()
    args = (w, []) if fn.__code__.co_argcount == 2 else (w,)
    _reset()
    try:
        fn(*args)
        raised = None
    except Exception as e:           # noqa: BLE001 - the exception is the outcome compared
        raised = (type(e), str(e).split("\n")[0])
    state = _state()
    _reset()
    return raised, state, capsys.readouterr().out, [list(a) for a in args[1:]]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_raising_call_leaves_state_as_eager(fn, backend, capsys):
    framejit.reset()
    eager = _outcome(fn, capsys)
    assert eager[0] is not None, "the case must raise eagerly"
    compiled = framejit.compile(fn, backend=backend)
    first = _outcome(compiled, capsys)
    second = _outcome(compiled, capsys)
    assert first == eager
    assert second == eager


@pytest.mark.parametrize("fn", [dtype_mix_in_resume_graph, index_in_resumed_no_grad], ids=lambda f: f.__name__)
def test_raising_call_leaves_state_as_eager_inductor(fn, capsys):
    framejit.reset()
    eager = _outcome(fn, capsys)
    first = _outcome(framejit.compile(fn, backend="inductor"), capsys)
    assert first == eager


def test_normal_call_still_one_graph_per_part(capsys):
    """The handler costs nothing when nothing raises: same graphs, same result, state as eager."""
    def fine(w):
        with torch.no_grad():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                x = w @ w
                print("break")
                y = (x @ w).float()
        return y
    framejit.reset()
    w = torch.ones(4, 4)
    counter = framejit.backends.CompileCounter("eager")
    compiled = framejit.compile(fine, backend=counter)
    _reset()
    assert torch.equal(compiled(w), fine(w))
    assert _state() == (True, False, False, torch.bfloat16, True, 0, False)
    assert counter.frame_count == 2
