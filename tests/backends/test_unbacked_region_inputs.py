"""A data-dependent number made in one region of a graph and read in a later one, across a grad-mode,
inference-mode or autocast switch (backends/passes/state_regions.py, `_reads_unbacked`).

The region pass cuts the graph at the switch; the later region takes the number (an unbacked SymInt or
SymFloat of the conversion's ShapeEnv) as an input it never defines. AOT autograd (aot_eager) and inductor
failed on it ("KeyError: zuf0", "KeyError: u0", "Node ... was invalid, but is output") and the frame fell
back to eager with a framejit-bug warning (fuzz seeds 221248 and 406757: a dynamic float global under
autocast, tests/fuzz/regressions/). Differential: eager and compiled on fresh copies of the same inputs,
every call compiled with no fallback.
"""
import copy
import warnings

import pytest
import torch

import framejit
from tests.differential import randn

SCALE = [1.0]


def float_global_across_autocast(x, m):
    SCALE[0] = SCALE[0] * 0.5             # a float that changes each call: a dynamic float input
    s = SCALE[0] * 1.0
    a = x * s
    with torch.autocast("cpu", dtype=torch.bfloat16):
        b = torch.mm(x, x)
    return a, b.float(), x - s


def int_item_across_autocast(x, m):
    n = m.sum().item()
    a = x * n
    with torch.autocast("cpu", dtype=torch.bfloat16):
        b = torch.mm(x, x)
    return a, b.float(), x + n


def float_item_across_no_grad(x, m):
    s = (m.float().sum() * 0.5).item()
    with torch.no_grad():
        b = x * 2
    return b, x * s


def nonzero_size_across_autocast(x, m):
    k = m.nonzero()
    n = k.shape[0]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        b = torch.mm(x, x)
    return k, b.float(), torch.ones(n) * 2 + n


def nonzero_size_across_no_grad(x, m):
    n = m.nonzero().shape[0]
    with torch.no_grad():
        b = x * 2
    return b, torch.ones(n) + x.sum() * n


def nonzero_tensor_across_inference_mode(x, m):
    k = m.nonzero()
    with torch.inference_mode():
        b = x * 2
    return b.clone(), k * 2 + x.sum()


def item_comparison_across_autocast(x, m):
    n = m.sum().item()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        b = torch.mm(x, x)
    return b.float(), x * (n > 2)


CASES = [float_global_across_autocast, int_item_across_autocast, float_item_across_no_grad,
         nonzero_size_across_autocast, nonzero_size_across_no_grad, nonzero_tensor_across_inference_mode,
         item_comparison_across_autocast]


def _inputs(call):
    x = randn(4, 4, seed=call, requires_grad=True)
    m = torch.tensor([[1, 0, 1, 1], [0, 1, 1, 1], [1, 1, 1, 1]][call])
    return x, m


def _outcome(fn, args):
    SCALE[0] = 1.0
    out = [fn(*args) for _ in range(2)]
    loss = sum(t.float().sum() for t in out[1] if t.requires_grad)
    if not isinstance(loss, int):
        loss.backward()
    return out, args[0].grad


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("fn", CASES, ids=lambda fn: fn.__name__)
def test_unbacked_number_crosses_a_region_switch(fn, backend):
    framejit.reset()
    counter = framejit.backends.CompileCounter(backend)
    compiled = framejit.compile(fn, backend=counter, capture_data_dependent=True)
    for call in range(3):
        args = _inputs(call)
        eager_out, eager_grad = _outcome(fn, copy.deepcopy(args))
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)          # a backend failure falls back with one
            out, grad = _outcome(compiled, copy.deepcopy(args))
        for e, c in zip(eager_out, out):
            for a, b in zip(e, c):
                assert a.dtype == b.dtype and a.requires_grad == b.requires_grad
                torch.testing.assert_close(b, a, rtol=0, atol=0)
        torch.testing.assert_close(grad, eager_grad, rtol=0, atol=0)
    assert counter.frame_count >= 1                # the frame was compiled, not run as plain Python
