"""Differential tests: `requires_grad_` on an input tensor that asks for the flag the tensor already has
is a no-op in the graph (translate/calls.py call_tensor_method); one that changes the flag stays a break."""
import torch

from tests.differential import check, randn

x = randn(3, seed=1)
g = randn(3, seed=2, requires_grad=True)


def filter_inputs(x, y):
    inputs = [x, y.requires_grad_(False), x.requires_grad_(requires_grad=False)]
    out = inputs[0]
    for inp in filter(lambda t: not t.requires_grad, inputs):
        out = out * inp
    return out, inputs[1] is y


def keep_grad(g):
    h = g.requires_grad_()
    return h * 2, h is g, h.requires_grad


def change_flag(x):
    return x.requires_grad_(True) * 2


def test_requires_grad_noop_in_one_graph():
    check(filter_inputs, x, x * 2, fullgraph=True, graphs=1)
    check(keep_grad, g, fullgraph=True, graphs=1, grads=True)


def test_requires_grad_change_is_a_break():
    check(change_flag, x, grads=True)
