"""An input tensor first read inside an `inference_mode` block keeps its own kind in the graph: its fake is
an inference tensor only when the real one is (translate/graph/builder.py `add_input`).

The translator runs with inference mode on inside the block, and a symbolic fake made there (dynamic
shapes: the second call with another batch size, or dynamic=True) came out an inference tensor. The
region after the block, traced by AOT autograd, then failed to set requires_grad on it ("Setting
requires_grad=True on inference tensor outside InferenceMode"), and the frame fell back to eager (fuzz
seeds 401440 and 401527, aot_eager). Differential: eager and compiled on fresh copies of the same inputs,
batch sizes 2, 4, 5, no fallback, same values, types and gradients.
"""
import copy
import warnings

import pytest
import torch
import torch.nn.functional as F

import framejit
from tests.differential import randn


def read_in_block_then_after(x, w):
    with torch.inference_mode():
        t = x * 2
    return torch.ones(x.shape[0], 4) * x, t


def linear_in_block(x, w):
    with torch.inference_mode():
        t = (F.linear(x, w) * 0.25).sum(-1)
    return x * 2, t


def only_aliased_in_block(x, w):
    with torch.inference_mode():
        t = x
    return torch.ones(x.shape[0]) * x.sum(), t is x


def nested_in_no_grad(x, w):
    with torch.no_grad():
        with torch.inference_mode():
            t = x @ w
        u = x + 1
    return t, u, (x @ w).relu()


def inference_input_used_after(x, w):
    with torch.inference_mode():
        t = w * 2
    return x @ w + t.sum(), t


def module_in_block(x, w):
    with torch.inference_mode():
        t = LINEAR(x)
    return LINEAR(x) * 2, t


LINEAR = torch.nn.Linear(4, 4)
CASES = [read_in_block_then_after, linear_in_block, only_aliased_in_block, nested_in_no_grad,
         inference_input_used_after, module_in_block]


def _inputs(fn, batch):
    x = randn(batch, 4, seed=batch, requires_grad=True)
    w = randn(4, 4, seed=batch + 10, requires_grad=fn is not inference_input_used_after)
    if fn is inference_input_used_after:
        with torch.inference_mode():
            w = w.clone()                       # an inference tensor passed in
    return x, w


def _outcome(fn, args):
    out = fn(*args)
    tensors = [t for t in out if isinstance(t, torch.Tensor)]
    loss = sum(t.sum() for t in tensors if t.requires_grad)
    if isinstance(loss, torch.Tensor):
        loss.backward()
    kinds = [(t.dtype, t.requires_grad, t.is_inference()) if isinstance(t, torch.Tensor) else t for t in out]
    return tensors, kinds, args[0].grad, LINEAR.weight.grad


@pytest.mark.parametrize("dynamic", [None, True])
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("fn", CASES, ids=lambda fn: fn.__name__)
def test_input_first_read_in_inference_mode(fn, backend, dynamic):
    framejit.reset()
    counter = framejit.backends.CompileCounter(backend)
    compiled = framejit.compile(fn, backend=counter, dynamic=dynamic)
    for batch in (2, 4, 5):
        args = _inputs(fn, batch)
        LINEAR.weight.grad = None
        eager = _outcome(fn, copy.deepcopy(args))
        LINEAR.weight.grad = None
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)          # a backend failure falls back with one
            got = _outcome(compiled, copy.deepcopy(args))
        assert got[1] == eager[1]
        for a, b in zip(eager[0], got[0]):
            torch.testing.assert_close(b, a)
        torch.testing.assert_close(got[2], eager[2])
        torch.testing.assert_close(got[3], eager[3])
    assert counter.frame_count >= 1                # the frame was compiled, not run as plain Python
