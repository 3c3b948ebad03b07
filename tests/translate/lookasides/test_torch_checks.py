"""torch._check and siblings (lookasides/torch_checks.py): a condition known at translation is answered
there; the message (a lambda) is built only when the check fails, which raises as in eager."""
import torch

from tests.differential import check, randn


def check_with_lambda_message(x):
    torch._check(x.shape[0] > 3, lambda: "Shape is not greater than 3")
    torch._check_index(x.ndim == 1, lambda: f"bad ndim {x.ndim}")
    torch._check_value(True)
    return x + 1


def check_without_message(x):
    torch._check(x.shape[0] > 3)
    return x * 2


def test_passing_checks_in_one_graph():
    check(check_with_lambda_message, randn(4), fullgraph=True, graphs=1)
    check(check_without_message, randn(5), fullgraph=True, graphs=1)


def test_failing_checks_raise_as_in_eager():
    check(check_with_lambda_message, randn(3))
    check(check_without_message, randn(2))
    check(check_with_lambda_message, randn(4, 2))          # _check_index raises IndexError
