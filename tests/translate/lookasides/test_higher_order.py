"""Differential tests: torch.cond and non-reentrant torch.utils.checkpoint kept in one graph
(translate/lookasides/higher_order.py, translate/graph/subgraph.py), with eager's gradients, under the
eager and aot_eager backends; bodies with side effects break and run once, as eagerly."""
import pytest
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

import framejit
from framejit.backends import CompileCounter
from tests.differential import CASE_FIELDS, case, randn, run_case
from tests.translate.lookasides.torch_compile_count import torch_compile_graphs

g34 = randn(3, 4, seed=1, requires_grad=True)
w44 = randn(4, 4, seed=2, requires_grad=True)
x34 = randn(3, 4, seed=3)
pos = randn(4, seed=4).abs().requires_grad_()
neg = (-randn(4, seed=5).abs()).requires_grad_()
W = randn(4, 4, seed=6, requires_grad=True)


# ---- checkpoint ---------------------------------------------------------------------------------------

def block(a, w):
    return (a @ w).tanh() @ w


def checkpoint_function(x, w):
    y = checkpoint(block, x * 2, w, use_reentrant=False)
    return y.sum() + x.mean()


def checkpoint_closure_with_dropout(x, w):
    h = x + 1
    y = checkpoint(lambda a: F.dropout(a @ w + h, 0.5, training=True).relu(), x, use_reentrant=False)
    return y, torch.rand(2)


def checkpoint_tuple_output(x, w):
    a, b = checkpoint(lambda t, k: (t * k, (t @ w).sin()), x, 3.0, use_reentrant=False)
    return a.sum() + b.sum()


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))


class CheckpointedModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Layer(), Layer()])

    def forward(self, x):
        for layer in self.layers:
            x = checkpoint(layer, x, use_reentrant=False)
        return x.sum()


MODEL = CheckpointedModel()


def checkpoint_modules(x):
    return MODEL(x)


def checkpoint_printing_body(x, w):
    def body(a):
        print("body ran")
        return a @ w
    return checkpoint(body, x, use_reentrant=False).sum()


def checkpoint_reentrant(x, w):
    return checkpoint(block, x, w, use_reentrant=True).sum()


# ---- torch.cond -------------------------------------------------------------------------------------

def true_branch(a):
    return a.sin() * 2


def false_branch(a):
    return a.cos() - 1


def cond_on_tensor(x):
    return torch.cond(x.sum() > 0, true_branch, false_branch, (x,))


def cond_closures_over_frame_tensors(x):
    scale = x.max()

    def t(a):
        return (a @ W) * scale

    def f(a):
        return a @ W.t() - W.sum(0)
    return torch.cond(x.mean() > 0, t, f, (x,)).sum()


def cond_tuple_outputs(x, y):
    out = torch.cond(x.sum() > y.sum(), lambda a, b: (a + b, a * b), lambda a, b: (a - b, a / (b.abs() + 1)), [x, y])
    return out[0].sum() + out[1].sum()


def cond_constant_predicate(x, flag):
    return torch.cond(flag, true_branch, false_branch, (x,))


def checkpoint_body_appends_to_frame_list(x, w):
    seen = []

    def body(a):
        seen.append(a.sum())
        return a @ w
    y = checkpoint(body, x, use_reentrant=False)
    return y.sum(), len(seen), seen


@pytest.mark.filterwarnings("error:framejit failed to convert:RuntimeWarning")   # no internal failure
@pytest.mark.parametrize(CASE_FIELDS, [
    case(checkpoint_body_appends_to_frame_list, g34, w44, grads=True),
    case(checkpoint_function, g34, w44, graphs=1, grads=True, fullgraph=True),
    case(checkpoint_function, g34, w44, graphs=1, grads=True, backend="aot_eager", name="checkpoint_function_aot"),
    case(checkpoint_closure_with_dropout, g34, w44, graphs=1, grads=True, fullgraph=True),
    case(checkpoint_closure_with_dropout, g34, w44, graphs=1, grads=True, backend="aot_eager",
         name="checkpoint_closure_with_dropout_aot"),
    case(checkpoint_tuple_output, g34, w44, graphs=1, grads=True, fullgraph=True),
    case(checkpoint_tuple_output, g34, w44, graphs=1, grads=True, backend="aot_eager", name="checkpoint_tuple_output_aot"),
    case(checkpoint_modules, g34, graphs=1, grads=True, fullgraph=True),
    case(checkpoint_modules, g34, graphs=1, grads=True, backend="aot_eager", name="checkpoint_modules_aot"),
    case(checkpoint_printing_body, g34, w44, grads=True),
    case(checkpoint_reentrant, g34, w44, grads=True),
    case(cond_on_tensor, pos, graphs=1, grads=True, fullgraph=True),
    case(cond_on_tensor, neg, graphs=1, grads=True, fullgraph=True, name="cond_on_tensor_false"),
    case(cond_on_tensor, neg, graphs=1, grads=True, backend="aot_eager", name="cond_on_tensor_aot"),
    case(cond_closures_over_frame_tensors, g34, graphs=1, grads=True, fullgraph=True),
    case(cond_closures_over_frame_tensors, g34, graphs=1, grads=True, backend="aot_eager",
         name="cond_closures_over_frame_tensors_aot"),
    case(cond_tuple_outputs, pos, neg, graphs=1, grads=True, fullgraph=True),
    case(cond_constant_predicate, x34, True, graphs=1, fullgraph=True),
    case(cond_constant_predicate, x34, 0, graphs=1, fullgraph=True, name="cond_constant_predicate_false"),
])
def test_higher_order(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


def test_checkpoint_recomputes_the_same_dropout_mask():
    """The gradient through a checkpointed dropout equals eager's only if the recompute draws the same
    mask; the global generator must end where eager's does."""
    torch.manual_seed(3)
    x, w = g34.detach().clone().requires_grad_(), w44.detach().clone().requires_grad_()
    checkpoint_closure_with_dropout(x, w)[0].sum().backward()
    eager_grad, eager_next = w.grad.clone(), torch.rand(1)
    framejit.reset()
    torch.manual_seed(3)
    x, w = g34.detach().clone().requires_grad_(), w44.detach().clone().requires_grad_()
    counter = CompileCounter()
    framejit.compile(checkpoint_closure_with_dropout, backend=counter)(x, w)[0].sum().backward()
    assert torch.equal(w.grad, eager_grad) and torch.equal(torch.rand(1), eager_next)
    assert counter.frame_count == 1


@pytest.mark.parametrize("fn,args", [(checkpoint_function, (g34, w44)), (cond_on_tensor, (pos,))])
def test_graph_count_matches_torch_compile(fn, args):
    framejit.reset()
    counter = CompileCounter()
    framejit.compile(fn, backend=counter)(*args)
    assert counter.frame_count == torch_compile_graphs(fn, *args) == 1
