"""framejit.compile(fn, dynamic=True): every input dimension symbolic from the first conversion.

Each test calls one compiled function with several sizes, eagerly and compiled on fresh copies
(tests/differential.py's check_calls), and counts conversions: one graph serves every size >= 2."""
import pytest
import torch

import framejit
from tests.differential import check_calls, randn


def sizes(*shapes, seed=0, **kw):
    return [(randn(*s, seed=seed + i, **kw),) for i, s in enumerate(shapes)]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_elementwise_and_reduction_one_graph_for_every_size(backend):
    def f(x):
        return (x.sin() * 2 + 1).sum(-1), x.mean(0)
    _, counter = check_calls(f, sizes((3, 4), (5, 7), (9, 2), (16, 33)), backend=backend, dynamic=True)
    assert counter.frame_count == 1


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_sizes_flow_through_arithmetic_views_and_factories(backend):
    def f(x):
        b, n = x.shape
        half = n // 2
        y = x.view(b, 2, half).transpose(1, 2).reshape(b * half, -1)
        z = torch.zeros(b, half + 1) + x.size(-1)
        return y * len(x), z, x.numel() + n, b - 1
    _, counter = check_calls(f, sizes((3, 4), (5, 8), (7, 10)), backend=backend, dynamic=True)
    assert counter.frame_count == 1


def test_a_size_comparison_decides_a_branch_and_is_guarded():
    def f(x):
        if x.shape[1] > 6:
            return x * 2
        return x - 1
    compiled, counter = check_calls(f, sizes((3, 4), (3, 5), (3, 8), (3, 12), (3, 3)), dynamic=True)
    assert counter.frame_count == 2          # one graph per side of the branch
    guards = " ".join(compiled._framejit_state.results[0].guards.describe())
    assert "x.shape[1]" in guards


def test_sizes_returned_and_stored_are_real_ints():
    seen = []

    def f(x):
        n = x.shape[0] * 3
        seen.append(n)
        return n, x.shape, x.stride()
    check_calls(f, sizes((3, 4), (6, 5)), dynamic=True)
    assert all(type(v) is int for v in seen)


def test_two_inputs_broadcast_together():
    def f(x, y):
        return x + y, (x * y).sum()
    calls = [(randn(4, 5, seed=1), randn(5, seed=2)), (randn(6, 7, seed=3), randn(7, seed=4)),
             (randn(2, 9, seed=5), randn(9, seed=6))]
    _, counter = check_calls(f, calls, dynamic=True)
    assert counter.frame_count == 1


def test_a_size_mismatch_raises_as_eagerly():
    def f(x, y):
        return x + y
    calls = [(randn(4, 5), randn(4, 5)), (randn(6, 7), randn(6, 7)), (randn(3, 2), randn(3, 4))]
    check_calls(f, calls, dynamic=True)


def test_range_over_a_size_specializes_it():
    def f(x):
        out = x[0]
        for i in range(x.shape[0]):
            out = out + x[i]
        return out
    _, counter = check_calls(f, sizes((3, 4), (3, 6), (4, 6)), dynamic=True)
    assert counter.frame_count == 2          # x.shape[0] is fixed by the loop, x.shape[1] is not


def test_gradients_through_a_dynamic_graph():
    def f(x, w):
        return (x @ w).relu().sum(0)
    calls = [(randn(3, 4, requires_grad=True), randn(4, 2, seed=1, requires_grad=True)),
             (randn(7, 4, seed=2, requires_grad=True), randn(4, 2, seed=3, requires_grad=True))]
    _, counter = check_calls(f, calls, backend="aot_eager", grads=True, dynamic=True)
    assert counter.frame_count == 1


def test_module_parameters_stay_static_inputs_vary():
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    _, counter = check_calls(mlp, sizes((2, 6), (5, 6), (9, 6)), backend="aot_eager", dynamic=True)
    assert counter.frame_count == 1


def test_backend_gets_symbolic_example_inputs():
    got = []

    def backend(gm, example_inputs):
        got.extend(example_inputs)
        return gm

    def f(x):
        return x * 2
    compiled = framejit.compile(f, backend=backend, dynamic=True)
    compiled(torch.ones(3, 4))
    assert isinstance(got[0].shape[0], torch.SymInt)


def test_inductor_runs_a_dynamic_graph():
    def f(x):
        return (x * 2).sum(-1) + x.shape[1]
    _, counter = check_calls(f, sizes((3, 4), (5, 6), (8, 9)), backend="inductor", dynamic=True, atol=1e-5)
    assert counter.frame_count == 1


def test_explain_lists_dynamic_dims_and_shape_guards():
    def f(x):
        if x.shape[0] > 2:
            return x.view(-1, 2) * x.shape[1]
        return x
    out = framejit.explain(f, dynamic=True)(torch.ones(3, 4))
    text = "\n".join(out.guards)
    assert "x: Tensor Tensor float32 cpu shape=[*, *] (* dynamic)" in text
    assert "x.shape[0]: dynamic (s" in text and "x.shape[1]: dynamic (s" in text
    assert "x.shape[0] >= 3" in text         # the branch, as a range of the symbol


def test_resume_function_stack_arguments_keep_their_values():
    # a resume function takes the stack at the break as arguments named like generated locals: the
    # SHAPES guard's bound symbols must not overwrite them
    def f(x):
        return (x * 2) + breaks(x) + x.shape[0]
    calls = [(randn(n, 3, seed=n),) for n in (3, 4, 6)]
    check_calls(f, calls, dynamic=True)


def breaks(t):
    print("a graph break")
    return t.sum()
