"""numpy code on tensors traced as tensor code (lookasides/numpy_calls.py, values/tensors/ndarrays.py,
guards/numpy_inputs.py): eager numpy vs compiled, outputs compared as ndarrays / numpy scalars of the
same type and dtype (tests/differential.py), inputs after the call, graph counts.

Cases come from numpy's own documentation examples and from typical user code, not from the zoo."""
import numpy as np
import pytest
import torch

import framejit
from tests.differential import CASE_FIELDS, case, check, randn, run_case

ONE = dict(fullgraph=True, graphs=1)

x34 = randn(3, 4, seed=1)
x8 = randn(8, seed=2)
sq = randn(3, 3, seed=3) + 3 * torch.eye(3)


# ---------------------------------------------------------------- typical user code on x.numpy()

def clip_numpy(x):
    return np.clip(x.numpy(), 0, 1)


def einsum_numpy(x):
    a = x.numpy()
    return np.einsum("ij,kj->ik", a, a)


def where_numpy(x):
    a = x.numpy()
    return np.where(a > 0, a, 0.1 * a)


def concatenate_numpy(x):
    a = x.numpy()
    return np.concatenate([a, a * 2], axis=0)


def norm_numpy(x):
    return np.linalg.norm(x.numpy())


def fft_real(x):
    return np.fft.fft(x.numpy())          # numpy 2: complex64 from float32


def numpy_scalar_times_tensor(x):
    return np.float32(2.0) * x, x + np.float64(1.5), x * np.int64(3)


def back_to_torch(x):
    return torch.from_numpy(np.tanh(x.numpy())) + 1


def asarray_of_tensor(x):
    return np.asarray(x).mean(axis=1), np.array(x).dtype


def attributes(x):
    a = x.numpy()
    return a.shape, a.dtype, a.ndim, a.size, a.T, a.itemsize, a.nbytes


def methods(x):
    a = x.numpy()
    return (a.astype(np.float64), a.reshape(-1, 2), a.sum(), a.mean(axis=0), a.max(), a.argmax(),
            a.std(), a.cumsum(axis=1), a.copy(), a.transpose(), a.min(axis=1), a.prod())


def indexing(x):
    a = x.numpy()
    return a[1], a[1, 2], a[1:, ::2], a[[0, 2]], a[..., None], a[:, -1], len(a), [r.sum() for r in a]


def comparisons(x):
    a = x.numpy()
    return a > 0, a == a, (a <= 0.5).any(), np.maximum(a, 0), abs(a), -a, np.abs(a).sum()


def dtypes_passed(x):
    a = x.numpy()
    return (np.zeros((2, 3), dtype=np.float32), np.ones(3, dtype="int32"), a.astype("float16"),
            np.arange(5, dtype=np.int16), a.astype(np.dtype("float64")), np.full((2,), 7, dtype=np.uint8))


def info_objects(x):
    a = x.numpy()
    eps = np.finfo(a.dtype).eps
    return a + eps, np.iinfo(np.int32).max, np.finfo(np.float64).tiny, np.issubdtype(a.dtype, np.floating)


def numpy_scalars_in_arithmetic(x):
    s = x.numpy().sum()
    return s + 1, s * np.float32(2), s / 3, type(s), np.float32(3.0) + 1.5, np.int8(100) * 2


def linalg_family(m):
    a = m.numpy().astype(np.float64)
    b = np.ones(3)
    return np.linalg.inv(a), np.linalg.det(a), np.linalg.solve(a, b), np.linalg.norm(a, axis=0), a @ b


def fft_family(x):
    a = x.numpy()
    return np.fft.rfft(a), np.fft.ifft(np.fft.fft(a)).real, np.fft.fftfreq(8)


def in_place_on_numpy_view(x):
    a = x.numpy()          # shares x's memory: the write shows in x
    a[0, 0] = 100.0
    a += 1
    return x


def view_of_view(x):
    a = x.numpy()
    b = a.T
    b[0] = 0.0             # writes a column of a (and of x)
    a.fill(2.0) if False else None
    return x, a.sum()


# numpy's own documentation examples (inputs made from tensors, as the frame gets them)
def doc_clip(t):
    a = t.numpy()
    return np.clip(a, 1, 8), np.clip(a, 8, 1), np.clip(a, 3, 6)


def doc_einsum(t):
    a = t.numpy().reshape(5, 5)
    return np.einsum("ii", a), np.einsum("ii->i", a), np.einsum("ij->ji", a), np.einsum("i,i", a[0], a[0])


def doc_where(t):
    a = t.numpy()
    return np.where(a < 5, a, 10 * a)


def doc_norm(t):
    a = t.numpy() - 4
    b = a.reshape((3, 3))
    return np.linalg.norm(a), np.linalg.norm(b), np.linalg.norm(b, "fro"), np.linalg.norm(a, np.inf), \
        np.linalg.norm(a, 1)


def doc_fft(t):
    return np.fft.fft(np.exp(2j * np.pi * t.numpy() / 8))


def int_semantics(t):
    a = t.numpy()                      # int64
    return a / 2, a // 2, a % 3, a * 1.5, a + np.int32(1), (a > 3).sum(), a.mean(), a.astype(np.int8) + 1


CASES = [
    case(clip_numpy, x34, **ONE),
    case(einsum_numpy, x34, **ONE),
    case(where_numpy, x34, **ONE),
    case(concatenate_numpy, x34, **ONE),
    case(norm_numpy, x34, **ONE),
    case(fft_real, x8, **ONE),
    case(numpy_scalar_times_tensor, x34, **ONE),
    case(back_to_torch, x34, **ONE),
    case(asarray_of_tensor, x34, **ONE),
    case(attributes, x34, **ONE),
    case(methods, x34, **ONE),
    case(indexing, x34, **ONE),
    case(comparisons, x34, **ONE),
    case(dtypes_passed, x34, **ONE),
    case(info_objects, x34, **ONE),
    case(numpy_scalars_in_arithmetic, x34, **ONE),
    case(linalg_family, sq, **ONE),
    case(fft_family, x8, **ONE),
    case(in_place_on_numpy_view, x34, **ONE),
    case(view_of_view, x34, **ONE),
    case(doc_clip, torch.arange(10), **ONE),
    case(doc_einsum, torch.arange(25), **ONE),
    case(doc_where, torch.arange(10), **ONE),
    case(doc_norm, torch.arange(9, dtype=torch.float64), **ONE),
    case(doc_fft, torch.arange(8, dtype=torch.float64), **ONE),
    case(int_semantics, torch.arange(12).reshape(3, 4), **ONE),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_numpy_on_tensors(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


# ---------------------------------------------------------------- ndarrays passed in and returned

def in_place_input(a):
    a += 1
    a[0] = 5
    a[:, 1] *= 2
    return a.sum(axis=1)


def returns_input(a):
    return a, a * 2             # the very same ndarray object comes back


def returns_view_written(a):
    b = a.T
    b[0] = 0
    return a


def input_arithmetic(a, b):
    return a @ b.T + 1, (a - b).max(axis=0), np.stack([a, b]).shape


def fill_and_sort(a):
    a.fill(3)
    b = -np.arange(4.0)
    b.sort()
    return a, b


int_array = np.arange(12).reshape(3, 4)
float_array = np.linspace(0, 1, 12).reshape(3, 4)


@pytest.mark.parametrize("array", [int_array, float_array, float_array.astype(np.float32)],
                         ids=["int64", "float64", "float32"])
@pytest.mark.parametrize("fn", [in_place_input, returns_input, returns_view_written, fill_and_sort])
def test_ndarray_inputs(fn, array):
    check(fn, array, **ONE)


def test_two_ndarray_inputs():
    check(input_arithmetic, float_array, float_array * 2, **ONE)


def test_ndarray_input_guards_recompile_on_dtype_and_shape():
    counter = framejit.backends.CompileCounter()
    f = framejit.compile(lambda a: (a * 2).sum(axis=0), backend=counter, fullgraph=True)
    for a in (int_array, int_array + 1, float_array, np.ones((2, 2)), float_array.T):
        out = f(a)
        expected = (a * 2).sum(axis=0)
        assert type(out) is np.ndarray and out.dtype == expected.dtype and np.allclose(out, expected)
    assert counter.frame_count == 4          # int64 3x4, float64 3x4, float64 2x2, transposed strides


def test_numpy_scalar_argument_guarded_by_value():
    counter = framejit.backends.CompileCounter()
    f = framejit.compile(lambda t, s: t * s, backend=counter, fullgraph=True)
    t = x34.clone()
    for s in (np.float32(2.0), np.float32(2.0), np.float32(3.0), np.float64(3.0)):
        out = f(t, s)
        assert torch.equal(out, t * s) and out.dtype == (t * s).dtype
    assert counter.frame_count == 3


# ---------------------------------------------------------------- what is a graph break, and why

def random_numbers(a):
    return np.random.rand(3) * a.sum()


def needs_values(x):
    return x.numpy().tolist()


def data_dependent_shape(x):
    a = x.numpy()
    return np.nonzero(a > 0)


def numpy_fn_on_tensor(x):
    return np.sum(x)


def numpy_of_grad_tensor(x):
    return x.numpy() + 1         # eagerly a RuntimeError


def broadcast_error(x):
    a = x.numpy() * 2           # traced; the failing + runs as Python and raises as eagerly
    return a + np.ones(5)


@pytest.mark.parametrize("fn,arg,words", [
    (random_numbers, float_array, "numpy's own global generator"),
    (numpy_of_grad_tensor, randn(3, requires_grad=True), "that requires grad"),
    (needs_values, x34, "ndarray.tolist"),
    (data_dependent_shape, x34, "data-dependent"),
    (numpy_fn_on_tensor, x34, "torch tensor"),
])
def test_unsupported_numpy_names_itself(fn, arg, words):
    with pytest.raises(framejit.Unsupported, match=words.replace(".", r"\.")):
        framejit.compile(fn, fullgraph=True)(arg)
    if fn is not random_numbers:
        check(fn, arg)


def test_random_breaks_and_matches_eager_under_one_seed():
    def fn(x):
        y = x.numpy() * 2
        return y + np.random.rand(3, 4)
    eager_np = np.random.get_state()
    np.random.seed(0)
    expected = fn(x34)
    np.random.seed(0)
    counter = framejit.backends.CompileCounter()
    got = framejit.compile(fn, backend=counter)(x34)
    np.random.set_state(eager_np)
    assert got.dtype == expected.dtype and np.allclose(got, expected)
    assert counter.frame_count == 2           # the graphs before and after the break (np.random runs as Python)


def test_exception_matches_eager():
    check(broadcast_error, x34, graphs=1)


# ---------------------------------------------------------------- graph counts against torch.compile

@pytest.mark.parametrize("fn,arg", [(clip_numpy, x34), (einsum_numpy, x34), (norm_numpy, x34),
                                    (numpy_scalar_times_tensor, x34), (doc_where, torch.arange(10))])
def test_graph_count_matches_torch_compile(fn, arg):
    import torch._dynamo
    from torch._dynamo.testing import CompileCounter
    torch._dynamo.reset()
    theirs = CompileCounter()
    torch.compile(fn, backend=theirs)(arg.clone())
    ours = framejit.backends.CompileCounter()
    framejit.compile(fn, backend=ours)(arg.clone())
    assert ours.frame_count == theirs.frame_count == 1
    torch._dynamo.reset()


# ---------------------------------------------------------------- numpy's value rules torch does not share

def integer_division_by_zero(a, b):
    q = a // b
    a %= b                      # in place, with zeros in the divisor
    return q, a, a // 0, np.remainder(a, 0), np.divmod(a, b), a / b


def test_integer_division_by_zero_gives_zero_as_numpy():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # numpy warns about the zero divisor; framejit does not
        check(integer_division_by_zero, np.arange(6), np.array([0, 1, 2, 0, 3, 4]), **ONE)


def torch_reads_ndarray(a):
    b = torch.tensor(a)          # a copy
    c = torch.as_tensor(a)       # shares a's memory
    d = torch.as_tensor(a, dtype=torch.float32)
    c[0] = 100
    return b, c, d, torch.tensor(a.sum()), a


def test_torch_tensor_of_ndarray():
    check(torch_reads_ndarray, np.arange(4), **ONE)


def reshape_large(x):
    return x.numpy().reshape(500, 2000).sum(axis=1)


def test_large_arrays_checked_on_zero_strided_standins():
    check(reshape_large, randn(1000, 1000), atol=1e-3, **ONE)


def computed_numpy_scalar_with_tensor(x, i):
    s = x.numpy().sum()                 # np.float32, computed in the graph
    k = i.numpy().max()                 # np.int64
    return x * s, i + k, x * k          # torch reads the scalars as Python numbers


def test_computed_numpy_scalar_with_tensor():
    check(computed_numpy_scalar_with_tensor, x34, torch.arange(4), **ONE)


def int_tensor_times_float_scalar(i, x):
    return i * x.numpy().sum()          # float scalar vs int tensor: torch gives float32 (a Python float)


def test_int_tensor_times_computed_float_scalar_breaks():
    with pytest.raises(framejit.Unsupported, match="reads it as a Python number"):
        framejit.compile(int_tensor_times_float_scalar, fullgraph=True)(torch.arange(4), x34.double())
    check(int_tensor_times_float_scalar, torch.arange(4), x34.double())


def numpy_on_shapes(x):
    n = np.prod(x.shape)                 # a numpy scalar of constants, computed at translation
    return x.reshape(n), x.view(-1, int(np.prod(x.shape[1:]))), np.sqrt(16.0) * x, n


def test_numpy_functions_of_constants_fold():
    check(numpy_on_shapes, x34, **ONE)


def mask_assignment(x):
    a = x.numpy()
    a[a < 0] = 0                # boolean-mask write: a data-independent shape, traced
    return x, np.mean(a, axis=0, keepdims=True), (a * 255).astype(np.uint8)


class NumpyInForward(torch.nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        z = np.exp(y.numpy())
        return torch.from_numpy(z).sum(), z.dtype


def test_mask_assignment_and_module_forward():
    check(mask_assignment, x34, **ONE)
    check(NumpyInForward(), x34, **ONE)
