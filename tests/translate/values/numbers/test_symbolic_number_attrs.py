"""A method or attribute of a symbolic number (a size or int made dynamic, translate/values/numbers/sym_values.py)
is its guarded value's (values/attrs.py): `n.bit_length()`, `s.is_integer()`, `x.size(0).__index__()`.
Before the fix the read had no answer, and since LOAD_METHOD cannot split the graph, the whole function
ran as plain Python once the number became dynamic."""
import pytest
import torch

from tests.differential import check_calls


def int_methods(x, n):
    return n.bit_length(), x.size(0).__index__(), x.shape[1].real, (-n).__abs__(), x * n.conjugate()


def float_methods(x, s):
    return s.is_integer(), s.as_integer_ratio(), s.hex(), x * s.real


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn,numbers", [(int_methods, (3, 5, 6, 7)), (float_methods, (0.5, 0.75, 1.0, 2.5))],
                         ids=["int", "float"])
def test_symbolic_number_methods(fn, numbers, backend):
    calls = [(torch.randn(b, b + 1, generator=torch.Generator().manual_seed(b)), n)
             for b, n in zip((2, 4, 3, 5), numbers)]
    compiled, _ = check_calls(fn, calls, backend=backend)
    assert compiled._framejit_state.eager_reason is None
