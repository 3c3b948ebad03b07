"""A Python float that changes between calls under a backend that traces the graph (aot_eager).

After one value recompile it reaches the graph as a 0-dim float64 tensor read back by `.item()` in the
graph (translate/graph/float_inputs.py), so a learning rate or a temperature does not convert again on
every value; a branch on its value makes it static again (one conversion per value, as before). Every
call is compared with eager (dtype of `x * lr` included: an int tensor times a float is float32)."""
import pytest
import torch

from tests.differential import check_calls, randn


def scale(x, lr):
    return x * lr + 1, lr * 2, torch.full((2,), lr)


@pytest.mark.parametrize("make_x", [lambda i: randn(4, seed=i, requires_grad=True), lambda i: torch.arange(4) + i],
                         ids=["float_tensor", "int_tensor"])
def test_changing_float_converts_twice_under_aot_eager(make_x):
    calls = [(make_x(i), 0.1 * (i + 1)) for i in range(6)]
    _, counter = check_calls(scale, calls, backend="aot_eager", grads=True)
    assert counter.frame_count == 2


def test_sgd_like_step_with_a_decaying_learning_rate():
    def step(w, g, lr):
        return w - lr * g, (w * lr).sum()
    calls = [(randn(3, 3, seed=i), randn(3, 3, seed=10 + i), 1.0 / (i + 3)) for i in range(6)]
    _, counter = check_calls(step, calls, backend="aot_eager")
    assert counter.frame_count == 2


def test_a_branch_on_the_float_keeps_it_static():
    def f(x, t):
        if t > 0.25:
            return x * t
        return x - t
    calls = [(randn(4, seed=i), 0.1 * (i + 1)) for i in range(4)]
    _, counter = check_calls(f, calls, backend="aot_eager")
    assert counter.frame_count == 4


def test_inductor_takes_a_float_as_tensor():
    calls = [(randn(4, seed=i), 0.5 + i) for i in range(3)]
    _, counter = check_calls(lambda x, t: (x * t).sum() + t, calls, backend="inductor", atol=1e-5)
    assert counter.frame_count == 2


def test_deciding_on_each_float_of_a_list_restarts_a_bounded_number_of_times():
    # a comprehension deciding on every float of t.tolist(): each decision made one more float static and
    # started again, one restart per item, until "too many restarts" sent the frame to plain Python
    # (fuzzer seed 801433); the second such restart makes every float of the attempt static
    import warnings

    def f(w):
        signs = [int(v > 0) for v in w.tolist()]
        return w * sum(signs)
    calls = [(randn(16, seed=i),) for i in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)      # a framejit failure warns
        check_calls(f, calls, backend="aot_eager")
