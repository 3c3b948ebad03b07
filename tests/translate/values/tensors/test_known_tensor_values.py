"""Differential tests: a sequence indexed by a tensor (values/tensors/known_tensor_values.py, values/containers/subscripts.py).

`seq[t]` calls `t.__index__()`, a read of t's value. A tensor the frame made from constants has a value
known at translation (folded, one graph, the item itself returned as eagerly); an input tensor's value is
data: a graph break (torch.compile breaks there too, "Graph break from Tensor.item()", unless fullgraph
makes it specialize on the value). A tensor written in place, a random one, a float one (TypeError) or
an index out of range run as Python, as eagerly.
"""
import pytest
import torch

from tests.differential import CASE_FIELDS, case, randn, run_case

x = randn(2, seed=1)
y = randn(2, seed=2)


def list_indexed_by_a_constant_tensor(a, b):
    return [a, b][torch.tensor(1)], (a, b)[torch.tensor(3) - 3], "xyz"[torch.tensor(2)], \
        range(5)[torch.tensor([4])], [a, b][torch.tensor(1, dtype=torch.int32) * 1]


def identity_of_the_item(a, b):
    picked = [a, b][torch.tensor(0)]
    return picked is a, picked


def list_indexed_by_an_input_tensor(a, b, i):
    return [a, b][i] * 2


def list_indexed_by_a_written_tensor(a, b):
    t = torch.tensor(0)
    t.add_(1)
    return [a, b][t]


def list_indexed_by_a_float_tensor(a, b):
    return [a, b][torch.tensor(1.0)]


def list_index_out_of_range(a, b):
    return [a, b][torch.tensor(5)]


CASES = [
    case(list_indexed_by_a_constant_tensor, x, y, fullgraph=True, graphs=1),
    case(identity_of_the_item, x, y, fullgraph=True, graphs=1),
    case(list_indexed_by_an_input_tensor, x, y, torch.tensor(1), breaks=1),
    case(list_indexed_by_a_written_tensor, x, y, breaks=1),
    case(list_indexed_by_a_float_tensor, x, y),
    case(list_index_out_of_range, x, y),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_sequence_indexed_by_a_tensor(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)
