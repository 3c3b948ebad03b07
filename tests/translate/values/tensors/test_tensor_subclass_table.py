"""Differential tests: tensor subclasses with __torch_function__ passed into a compiled frame: eager's
results, returned types, the side effects of __torch_function__ and gradients (traced into graphs since
translate/values/tensors/tensor_subclasses.py; tests/translate/values/tensors/test_tensor_subclasses.py holds the graph
counts). (tests/differential.check deep-copies its inputs, which torch cannot do for these subclasses;
each run here builds its own inputs instead.)"""
import pytest
import torch

import framejit
from framejit.backends import CompileCounter
from tests.differential import randn

CALLS = []


class Plain(torch.Tensor):
    pass


class Logged(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        CALLS.append(getattr(func, "__name__", str(func)))
        return super().__torch_function__(func, types, args, kwargs or {})


class Scaled(torch.Tensor):
    """torch.add's results come back scaled (and keep the subclass)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        out = super().__torch_function__(func, types, args, kwargs or {})
        return out * 1.5 if func is torch.add else out


def plain_ops(x):
    return x.sin() * 2 + 1


def logged_ops(x, y):
    z = torch.relu(x) + y
    return z.sum(), len(CALLS)


def scaled_add(x, y):
    return torch.add(x, y), x.add(y), x * y


def mixed_grads(x, w):
    return (x @ w).tanh().sum()


def _flat(out):
    return list(out) if isinstance(out, tuple) else [out]


def _run(fn, make_args):
    CALLS.clear()
    args = make_args()
    out = _flat(fn(*args))
    loss = next((o for o in out if isinstance(o, torch.Tensor) and o.requires_grad), None)
    if loss is not None:
        loss.backward()
    grads = [a.grad for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    return out, list(CALLS), grads


def _same(a, b):
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():
            torch.testing.assert_close(a, b, atol=0, rtol=0)
    else:
        assert a == b


def _leaf(shape, seed, cls):
    return randn(*shape, seed=seed).as_subclass(cls).requires_grad_()


CASES = [
    (plain_ops, lambda: (randn(3, seed=1).as_subclass(Plain),)),
    (logged_ops, lambda: (randn(3, seed=2).as_subclass(Logged), randn(3, seed=3))),
    (scaled_add, lambda: (randn(3, seed=4).as_subclass(Scaled), randn(3, seed=5))),
    (mixed_grads, lambda: (_leaf((2, 3), 6, Logged), randn(3, 3, seed=7, requires_grad=True))),
]


@pytest.mark.parametrize("fn,make_args", CASES, ids=[c[0].__name__ for c in CASES])
def test_tensor_subclasses(fn, make_args):
    framejit.reset()
    compiled = framejit.compile(fn, backend=CompileCounter())
    eager = _run(fn, make_args)
    for _ in range(2):
        got = _run(compiled, make_args)
        for part_eager, part_got in zip(eager, got):
            assert len(part_eager) == len(part_got)
            for a, b in zip(part_eager, part_got):
                _same(a, b)
