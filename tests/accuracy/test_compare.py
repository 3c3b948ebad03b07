"""framejit.testing.same / first_difference: tolerances by dtype, NaN, -0.0, low precision, nesting."""
import collections

import numpy as np
import pytest
import torch

from framejit.testing import first_difference, same

Pair = collections.namedtuple("Pair", "a b")


def test_float32_within_its_tolerance_and_a_wrong_value_outside():
    x = torch.randn(16)
    assert same(x, x + 1e-7)
    assert not same(x, x + 1e-2)
    found = first_difference(x, x.clone().index_fill_(0, torch.tensor([5]), 100.0))
    assert found.startswith("value: 100.0 at [5], expected")


def test_float64_is_stricter_than_float32():
    x = torch.randn(8, dtype=torch.float64)
    assert not same(x, x + 1e-5)
    assert same(x.float(), x.float() + 1e-7)


def test_integers_bools_and_shapes_compare_exactly():
    assert not same(torch.tensor([1, 2]), torch.tensor([1, 3]))
    assert same(torch.tensor([True, False]), torch.tensor([True, False]))
    assert "shape (3,), expected (2,)" in first_difference(torch.zeros(2), torch.zeros(3))
    assert "dtype torch.float64, expected torch.float32" in first_difference(torch.zeros(2), torch.zeros(2).double())
    assert same(torch.zeros(2), torch.zeros(2).double(), exact_dtype=False)


def test_nan_matches_nan_at_the_same_place_only():
    nan = float("nan")
    assert same(torch.tensor([1.0, nan]), torch.tensor([1.0, nan]))
    assert "(NaN)" in first_difference(torch.tensor([1.0, nan]), torch.tensor([nan, 1.0]))
    assert not same(torch.tensor([nan]), torch.tensor([nan]), equal_nan=False)
    assert same(nan, nan) and not same(nan, 1.0)


def test_negative_zero_equals_zero_unless_signs_are_asked_for():
    assert same(torch.tensor([0.0]), torch.tensor([-0.0]))
    assert same(0.0, -0.0)
    assert "sign of zero" in first_difference(torch.tensor([0.0]), torch.tensor([-0.0]), signed_zeros=True)
    assert not same(0.0, -0.0, signed_zeros=True)


def test_infinities_match_by_sign():
    inf = float("inf")
    assert same(torch.tensor([inf, -inf]), torch.tensor([inf, -inf]))
    assert not same(torch.tensor([inf]), torch.tensor([-inf]))
    assert not same(torch.tensor([inf]), torch.tensor([1e30]))


def test_low_precision_passes_on_cosine_where_elementwise_fails():
    torch.manual_seed(0)
    x = torch.randn(256).bfloat16()
    noisy = (x.double() + torch.randn(256, dtype=torch.float64) * 0.02).bfloat16()
    assert first_difference(x, noisy, cosine=None) is not None       # elementwise alone: differs
    assert same(x, noisy)                                              # cosine similarity > 0.99
    assert not same(x, -x)
    assert not same(x.float(), noisy.float())                          # float32 gets no cosine leniency


def test_nested_structures_name_the_path():
    expected = {"logits": [torch.zeros(2), Pair(torch.ones(1), 3)], "n": 2.0}
    actual = {"logits": [torch.zeros(2), Pair(torch.ones(1), 4)], "n": 2.0}
    assert first_difference(expected, actual) == "['logits'][1][1]: 4, expected 3"
    assert same(expected, {"logits": [torch.zeros(2), Pair(torch.ones(1), 3)], "n": 2.0 + 1e-12})
    assert "keys" in first_difference({"a": 1}, {"b": 1})
    assert "expected tuple, got list" in first_difference((1,), [1])
    assert same(torch.Size([2, 3]), (2, 3))
    assert "length 1, expected 2" in first_difference([1, 2], [1])


def test_numpy_arrays_and_complex_tensors():
    assert same(np.arange(3.0), np.arange(3.0) + 1e-9)
    assert not same(np.arange(3.0), np.arange(3.0) + 1)
    z = torch.randn(4, dtype=torch.complex64)
    assert same(z, z.clone())
    assert not same(z, z + 1j)


def test_tensor_against_a_non_tensor_differs():
    assert first_difference(torch.zeros(1), 0.0) == "value: expected Tensor, got float"


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_a_value_compares_same_to_its_clone(dtype):
    x = torch.randn(3, 5).to(dtype)
    assert same(x, x.clone()) and same(x.t(), x.t().contiguous())
