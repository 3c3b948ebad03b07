"""What numpy itself says an operation returns: the check behind every traced numpy operation.

torch._numpy is not numpy. For each operation, real numpy runs on stand-ins of the arguments (arrays of
ones of their dtypes: size 1 per dimension first, the real shape when that is not enough, zero-strided
past FULL_STANDIN_LIMIT elements): its result says what the frame gets (an ndarray, a numpy scalar, a
tuple, list or namedtuple of them) and of which dtype. The graph's result must have that dtype and rank
(`result_matches`; a float or complex precision difference may be cast, `same_kind_precision`), and the
graph target, run for real on the same stand-ins, must give numpy's values (`expected_result`).
Anything else is a graph break naming the difference.
"""
import warnings

import numpy as np
import torch

from ...errors import GraphBreak
from ..values.base import Const, SeqValue, TensorValue
from ..values.tensors.ndarrays import TORCH_OF_NUMPY

FULL_STANDIN_LIMIT = 1 << 16       # elements: above that, full-shape stand-ins are zero-strided views of one 1
FULL_CHECK_LIMIT = 1 << 22         # elements: above that, numpy is not asked at the real shape (a break)


class Standin:
    """An array argument as numpy's check sees it: made per attempt (small, then full)."""
    __slots__ = ("shape", "dtype", "scalar")

    def __init__(self, shape, dtype, scalar):
        self.shape, self.dtype, self.scalar = shape, dtype, scalar

    def make(self, full, writable=False):
        if self.scalar:
            return self.dtype.type(1)
        shape = self.shape if full else tuple(min(d, 1) for d in self.shape)
        if full and not writable and self.numel() > FULL_STANDIN_LIMIT:
            return np.broadcast_to(np.ones((), self.dtype), shape)
        arr = np.ones(shape, self.dtype)
        if full and len(shape) >= 2 and shape[-1] == shape[-2] and self.dtype.kind in "fc":
            arr = arr + np.eye(shape[-1], dtype=self.dtype) * shape[-1]    # invertible, positive definite
        return arr

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n


def dtype_name(obj):
    """A dtype argument (np.float32, np.dtype('f4'), float) as its name, which numpy and torch._numpy
    both read as that dtype (a graph cannot hold numpy objects)."""
    return np.dtype(obj).name


def is_dtype_like(obj):
    return isinstance(obj, np.dtype) or isinstance(obj, type) and (issubclass(obj, np.generic) or
                                                                  obj in (float, int, bool, complex))


def plain_constant(t):
    return all(x is None or x is Ellipsis or type(x) in (int, float, bool, str, complex, slice) or
               type(x) is tuple and plain_constant(x) for x in t)


def _materialize(x, full, writable, made):
    """Real stand-ins for one attempt (`made`: Standin -> the array it became, for the torch._numpy run)."""
    if isinstance(x, Standin):
        arr = made[id(x)] = x.make(full, writable)
        return arr
    if type(x) in (tuple, list):
        return type(x)(_materialize(i, full, writable, made) for i in x)
    return x


def _real_graph_args(gv, ov, made):
    """The graph arguments as real objects for one run of the target on the stand-ins numpy saw."""
    if isinstance(ov, Standin):
        arr = made[id(ov)]
        return torch.tensor(arr) if ov.scalar else torch.from_numpy(np.array(arr))
    if isinstance(ov, np.generic):
        return torch.tensor(ov)
    if isinstance(gv, SeqValue):
        return type(ov)(_real_graph_args(g, o, made) for g, o in zip(gv.items, ov))
    return gv.value


def ask_numpy(np_fn, oargs, okwargs, full, writable=False, made=None):
    made = {} if made is None else made
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np_fn(*_materialize(oargs, full, writable, made),
                     **{k: _materialize(v, full, writable, made) for k, v in okwargs.items()})


def result_matches(expected, out):
    if isinstance(expected, (np.ndarray, np.generic)):
        if not isinstance(out, TensorValue):
            return False
        want = TORCH_OF_NUMPY.get(expected.dtype)
        ndim = expected.ndim
        return want is out.fake.dtype and out.fake.ndim == ndim
    if isinstance(expected, (tuple, list)):
        return isinstance(out, SeqValue) and len(out.items) == len(expected) and \
            all(result_matches(e, o) for e, o in zip(expected, out.items))
    if expected is None or type(expected) in (bool, int, float, str):
        return isinstance(out, Const) and type(out.value) is type(expected)
    return False


def same_kind_precision(expected, out):
    """torch._numpy computed a float (complex) result in another precision than numpy (np.fft keeps
    float32 since numpy 2): cast to numpy's dtype; anything else is a mismatch."""
    if not isinstance(expected, (np.ndarray, np.generic)) or not isinstance(out, TensorValue):
        return False
    want = TORCH_OF_NUMPY.get(expected.dtype)
    return want is not None and out.fake.ndim == expected.ndim and (
        want.is_floating_point and out.fake.dtype.is_floating_point or want.is_complex and out.fake.dtype.is_complex)


def expected_result(label, np_fn, all_args, prepared, out, target):
    """numpy's own result on stand-ins, when torch._numpy's graph result agrees with it in kind, dtype
    and rank, and torch._numpy's target run for real on the same stand-ins gives numpy's values (a
    kernel torch lacks for a dtype fails there, not in the compiled graph); otherwise a graph break."""
    gargs, gkwargs, oargs, okwargs = all_args
    problem = None
    for full in (False, True):
        numel = sum(s.numel() for s in prepared.standins)
        if full and numel > FULL_CHECK_LIMIT:
            break
        made = {}
        try:
            expected = ask_numpy(np_fn, oargs, okwargs, full, made=made)
        except Exception as e:
            problem = f"numpy raises {type(e).__name__} on these arguments"
            continue
        if result_matches(expected, out) or same_kind_precision(expected, out):
            if full and numel > FULL_STANDIN_LIMIT:
                return expected
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    real = target(*_real_graph_args(SeqValue(tuple, gargs), tuple(oargs), made),
                                  **{k: _real_graph_args(v, okwargs[k], made) for k, v in gkwargs.items()})
            except Exception as e:
                raise GraphBreak("numpy", f"{label}: torch._numpy fails on these dtypes ({type(e).__name__}: "
                                 f"{str(e).splitlines()[0] if str(e) else ''})")
            if _same_values(expected, real):
                return expected
            problem = "torch._numpy's values differ from numpy's"
            break
        problem = f"numpy's result ({_describe(expected)}) differs from torch._numpy's ({_describe_value(out)})"
    raise GraphBreak("numpy", f"{label}: {problem or 'the arrays are too large to check numpy result type on'}")


def _same_values(expected, real):
    if isinstance(expected, (np.ndarray, np.generic)):
        if not isinstance(real, torch.Tensor) or tuple(real.shape) != expected.shape:
            return False
        got = real.numpy(force=True).astype(expected.dtype)
        if expected.dtype.kind in "fc":
            return bool(np.allclose(got, expected, rtol=1e-3, atol=1e-5, equal_nan=True))
        return bool(np.array_equal(got, expected))
    if isinstance(expected, (tuple, list)):
        return isinstance(real, tuple) and len(real) == len(expected) and \
            all(_same_values(e, r) for e, r in zip(expected, real))
    return type(real) is type(expected) and real == expected


def _describe(x):
    if isinstance(x, (np.ndarray, np.generic)):
        return f"{type(x).__name__} {x.dtype} ndim={x.ndim}"
    if isinstance(x, tuple):
        return "(" + ", ".join(_describe(i) for i in x) + ")"
    return type(x).__name__


def _describe_value(v):
    if isinstance(v, TensorValue):
        return f"{v.fake.dtype} ndim={v.fake.ndim}"
    if isinstance(v, SeqValue):
        return "(" + ", ".join(_describe_value(i) for i in v.items) + ")"
    return type(v).__name__
