"""`for i in range(n)` with n a symbolic size: the loop is unrolled, so n is specialized (a guard on its
value) and each new n converts again, as torch.compile does (dynamo unrolls and specializes too). This
test holds framejit to torch.compile's conversion count on the same sweep, and to eager's results."""
import torch

from tests.differential import check_calls, randn


def rows_weighted(x):
    acc = x[0]
    for i in range(x.shape[0]):
        acc = acc + x[i] * i
    return acc


SIZES = (3, 4, 5, 6, 4)


def test_range_over_a_symbolic_size_specializes_like_torch_compile():
    import torch._dynamo
    from torch._dynamo.testing import CompileCounter
    calls = [(randn(n, 2, seed=n),) for n in SIZES]
    _, counter = check_calls(rows_weighted, calls, dynamic=True)
    torch._dynamo.reset()
    theirs = CompileCounter()
    compiled = torch.compile(rows_weighted, backend=theirs, dynamic=True)
    for (x,) in calls:
        compiled(x)
    torch._dynamo.reset()
    assert counter.frame_count == theirs.frame_count == len(set(SIZES))


def test_size_used_without_a_loop_stays_symbolic():
    def f(x):
        return x.sum(0) * x.shape[0]
    _, counter = check_calls(f, [(randn(n, 2, seed=n),) for n in SIZES], dynamic=True)
    assert counter.frame_count == 1
