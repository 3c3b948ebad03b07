"""Differential tests: torch.autograd.Function subclasses called in a compiled frame
(translate/lookasides/autograd_functions.py, torch_table.graph_target).

The apply call is one graph node running the real Function: the gradient is the user's backward's (a
straight-through estimator, a clipped gradient), never autograd's of the forward, with the eager and the
aot_eager backends. A forward with side effects (print, a global store, an input list mutated) is a
graph break and runs once, as eagerly."""
import pytest
import torch
from torch.autograd.function import once_differentiable

import framejit
from framejit.backends import CompileCounter
from tests.differential import CASE_FIELDS, case, randn, run_case
from tests.translate.lookasides.torch_compile_count import torch_compile_graphs

g4 = randn(4, seed=1, requires_grad=True)
h4 = randn(4, seed=2, requires_grad=True)
x4 = randn(4, seed=3)
CALLS = []
COUNT = 0


class RoundSTE(torch.autograd.Function):
    """Straight-through rounding: autograd of round() would give zero gradients."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return torch.round(x * scale) / scale

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x.abs() <= 1).to(grad.dtype), None


class ClippedMul(torch.autograd.Function):
    """x * y whose gradients are clipped; also returns a non-differentiable argmax."""

    @staticmethod
    def forward(ctx, x, y, clip=0.1):
        out = x * y
        idx = out.argmax()
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(x, y)
        ctx.clip = clip
        return out, idx

    @staticmethod
    @once_differentiable
    def backward(ctx, grad, _grad_idx):
        x, y = ctx.saved_tensors
        gx = (grad * y).clamp(-ctx.clip, ctx.clip) if ctx.needs_input_grad[0] else None
        gy = (grad * x).clamp(-ctx.clip, ctx.clip) if ctx.needs_input_grad[1] else None
        return gx, gy, None


class ScaleWithSetupContext(torch.autograd.Function):
    """The setup_context style: forward takes no ctx."""

    @staticmethod
    def forward(x, factor, shift=0):
        return x * factor + shift

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.factor = inputs[1]

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.factor * 10, None, None


class PrintingForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        print("forward ran")
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 3


class CountingForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        global COUNT
        COUNT += 1
        return x + 1

    @staticmethod
    def backward(ctx, grad):
        return -grad


class LoggingForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, log):
        log.append("forward")
        return x.exp()

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def straight_through(x):
    return RoundSTE.apply(x.sin(), 4.0).cos().sum()


def clipped(x, y):
    out, idx = ClippedMul.apply(x, y)
    return out.pow(2).sum() * 100, idx


def clipped_keyword_default(x, y):
    out, _ = ClippedMul.apply(x * 2, y, 0.5)
    return out.sum()


def clipped_only_first_needs_grad(x, y):
    out, idx = ClippedMul.apply(x, y.detach())
    return (out * 50).sum(), idx


def setup_context_style(x):
    return ScaleWithSetupContext.apply(x, 2.0, 1).sum()


def inside_no_grad(x):
    with torch.no_grad():
        y = RoundSTE.apply(x, 2.0)
    return y, RoundSTE.apply(x, 2.0)


def printing_forward(x):
    y = x + 1
    return PrintingForward.apply(y).sum()


def counting_forward(x):
    return CountingForward.apply(x * 2).sum()


def logging_forward(x, log):
    return LoggingForward.apply(x, log).sum(), log


def forward_appends_to_frame_list(x):
    log = []
    y = LoggingForward.apply(x * 2, log)
    return y, len(log), log


class STEModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return RoundSTE.apply(self.lin(x), 3.0).relu()


MODEL = STEModel()


def model_call(x):
    return MODEL(x).sum()


@pytest.mark.filterwarnings("error:framejit failed to convert:RuntimeWarning")   # no internal failure
@pytest.mark.parametrize(CASE_FIELDS, [
    case(straight_through, g4, graphs=1, grads=True, fullgraph=True),
    case(straight_through, g4, graphs=1, grads=True, backend="aot_eager", name="straight_through_aot"),
    case(clipped, g4, h4, graphs=1, grads=True, fullgraph=True),
    case(clipped, g4, h4, graphs=1, grads=True, backend="aot_eager", name="clipped_aot"),
    case(clipped_keyword_default, g4, h4, graphs=1, grads=True, fullgraph=True),
    case(clipped_only_first_needs_grad, g4, h4, graphs=1, grads=True, fullgraph=True),
    case(setup_context_style, g4, graphs=1, grads=True, fullgraph=True),
    case(setup_context_style, g4, graphs=1, grads=True, backend="aot_eager", name="setup_context_style_aot"),
    case(inside_no_grad, g4, graphs=1, grads=True, fullgraph=True),
    case(model_call, x4, graphs=1, grads=True, fullgraph=True),
    case(printing_forward, g4, graphs=2, grads=True, breaks=1),
    case(printing_forward, g4, grads=True, backend="aot_eager", name="printing_forward_aot"),
    case(counting_forward, g4, grads=True, breaks=1),
    case(counting_forward, g4, grads=True, backend="aot_eager", name="counting_forward_aot"),
    case(logging_forward, g4, [], grads=True, breaks=1),
    case(forward_appends_to_frame_list, g4, grads=True),
])
def test_autograd_functions(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


def test_gradient_is_the_users_backward():
    """Straight-through: eager autograd of round() is zero; the Function's backward is not."""
    framejit.reset()
    x = g4.detach().clone().requires_grad_()
    framejit.compile(straight_through, backend=CompileCounter("aot_eager"))(x).backward()
    assert x.grad.abs().sum() > 0


def test_printing_forward_prints_once_per_call(capsys):
    framejit.reset()
    compiled = framejit.compile(printing_forward, backend=CompileCounter())
    compiled(x4)
    compiled(x4)
    assert capsys.readouterr().out == "forward ran\n" * 2


def test_graph_count_matches_torch_compile():
    framejit.reset()
    counter = CompileCounter()
    framejit.compile(clipped, backend=counter)(g4, h4)
    assert counter.frame_count == torch_compile_graphs(clipped, g4, h4) == 1
