"""Differential tests: numpy's *_like factories given a torch tensor, and the strides of an input
tensor's x.numpy() (translate/lookasides/numpy_calls.py TENSOR_READERS, values/tensors/ndarrays.py).

np.ones_like(t) / zeros_like / full_like read a tensor through __array__ and return an ndarray (a
tensor that requires grad makes them raise, as eagerly: a break); `x.numpy().strides` of an input
tensor is its layout in bytes, which its guard fixes.
"""
import numpy as np
import torch

from tests.differential import check, randn

x = randn(3, 4, seed=1)


def like_factories(x):
    dt = np.dtype("float")
    return (np.ones_like(x, dtype=np.float64), np.zeros_like(x), np.full_like(x, 2.4, dtype=dt),
            np.ones_like(x + 1, dtype=np.int32))


def strides_of_input(x):
    a = x.numpy()
    return a.strides, a.itemsize, a.shape, torch.from_numpy(a.T) + 1


def test_like_factories_of_tensors_in_one_graph():
    check(like_factories, x, fullgraph=True, graphs=1)


def test_like_factory_of_grad_tensor_raises_as_eagerly():
    check(like_factories, randn(3, 4, seed=2, requires_grad=True))


def test_strides_of_input_numpy():
    check(strides_of_input, x, fullgraph=True, graphs=1)
    check(strides_of_input, x.t(), fullgraph=True, graphs=1)
    check(strides_of_input, torch.arange(12, dtype=torch.int16).reshape(3, 4)[:, ::2], fullgraph=True, graphs=1)
