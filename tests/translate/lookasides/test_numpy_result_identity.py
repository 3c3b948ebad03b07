"""An ndarray operation's result is the object numpy returns (lookasides/numpy_calls.py's
`_as_numpy_returns_it`, asked of numpy on stand-ins of the real layout): the argument itself where numpy
returns it (np.asarray(a), a.squeeze() with no axis of size 1), a new array sharing its memory where numpy
makes a view (a.ravel() of a contiguous array, a.T of a 1-d one), and a copy where numpy copies
(a.flatten(), a.astype(t), np.array(a)) even where torch._numpy hands back the argument's own tensor.
tests/differential.check compares which outputs are the inputs and which share storage, and writes through
the result show whether it is a copy."""
import numpy as np
import pytest
import torch

from tests.differential import check


def _array(shape, order="C"):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    return np.asfortranarray(a) if order == "F" else a


OPERATIONS = {
    "ravel": lambda a: a.ravel(),
    "flatten": lambda a: a.flatten(),
    "astype_same": lambda a: a.astype(a.dtype),
    "astype_no_copy": lambda a: a.astype(a.dtype, copy=False),
    "squeeze": lambda a: a.squeeze(),
    "T": lambda a: a.T,
    "mT_or_T": lambda a: a.T.T,
    "reshape_same": lambda a: a.reshape(a.shape),
    "np_asarray": lambda a: np.asarray(a),
    "np_array": lambda a: np.array(a),
    "np_ravel": lambda a: np.ravel(a),
    "np_squeeze": lambda a: np.squeeze(a),
    "ascontiguous": lambda a: np.ascontiguousarray(a),
    "copy": lambda a: a.copy(),
    "real": lambda a: a.real,
}


@pytest.mark.parametrize("shape,order", [((5,), "C"), ((2, 3), "C"), ((2, 3), "F"), ((1, 4), "C")])
@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_result_is_numpys_object(name, shape, order):
    op = OPERATIONS[name]

    def f(a):
        out = op(a)
        out += 1                    # a copy keeps `a` as it was, a view or `a` itself changes it
        return out, a

    check(f, _array(shape, order))


@pytest.mark.parametrize("shape", [(5,), (2, 3)])
def test_derived_arrays_of_a_tensor_are_new_objects(shape):
    def f(x):
        a = x.numpy()
        return a, a.T, a.ravel(), a.flatten(), a.astype(np.float32)

    check(f, torch.arange(6.0)[:int(np.prod(shape))].reshape(shape))
