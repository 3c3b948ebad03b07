"""Are two results the same, within what their dtype can hold? `same()` and `first_difference()`.

A compiled graph rarely gives bit-identical floats (fused kernels reorder sums), so tensors compare with
a tolerance chosen by dtype; integers, booleans, strings and shapes compare exactly. NaN equals NaN at
the same position (a NaN where the other side has a number is a difference); -0.0 equals 0.0 unless
`signed_zeros=True`; infinities must match in sign. Half-precision tensors (float16, bfloat16) that miss
the elementwise tolerance still pass when their cosine similarity to the expected tensor (computed in
float64) is at least `cosine` (0.99 by default): a few large relative errors on tiny values are what low
precision looks like, a wrong op is not.

Nested structures (lists, tuples, namedtuples, dicts and dict subclasses such as ModelOutput, torch.Size,
dataclasses, numpy arrays) are walked; `first_difference` answers with the path to the first difference
(`[1]['logits']`) and what differs, `same` with a bool.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import torch

# (rtol, atol) by dtype: float32's allow the reordering of a fused reduction, float64's a last bit or so
TOLERANCES = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-5),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-3),
}
LOW_PRECISION = (torch.float16, torch.bfloat16)
_FLOAT8 = tuple(getattr(torch, name) for name in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, name))


def tolerance(dtype):
    """(rtol, atol) for comparing tensors of `dtype` (complex dtypes use their real parts' values)."""
    if dtype.is_complex:
        dtype = torch.float64 if dtype == torch.complex128 else torch.float32
    if dtype in _FLOAT8:
        return (0.125, 0.125)
    return TOLERANCES.get(dtype, (0.0, 0.0))


def same(expected, actual, *, rtol=None, atol=None, equal_nan=True, signed_zeros=False, exact_dtype=True,
         cosine=0.99):
    """True when `actual` is `expected` up to the tolerances of their dtypes (see the module docstring).
    `rtol`/`atol` override the dtype's; `cosine=None` turns off the cosine check for half precision."""
    return first_difference(expected, actual, rtol=rtol, atol=atol, equal_nan=equal_nan,
                            signed_zeros=signed_zeros, exact_dtype=exact_dtype, cosine=cosine) is None


def first_difference(expected, actual, *, rtol=None, atol=None, equal_nan=True, signed_zeros=False,
                     exact_dtype=True, cosine=0.99, path=""):
    """None when the two are the same, else 'PATH: what differs' for the first difference found."""
    options = _Options(rtol, atol, equal_nan, signed_zeros, exact_dtype, cosine)
    return _diff(expected, actual, path, options)


@dataclasses.dataclass(frozen=True)
class _Options:
    rtol: float | None
    atol: float | None
    equal_nan: bool
    signed_zeros: bool
    exact_dtype: bool
    cosine: float | None


def _where(path):
    return path or "value"


def _diff(expected, actual, path, opt):
    if isinstance(expected, torch.Tensor) or isinstance(actual, torch.Tensor):
        if not (isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor)):
            return f"{_where(path)}: expected {type(expected).__name__}, got {type(actual).__name__}"
        return _tensor_diff(expected, actual, path, opt)
    if _is_ndarray(expected) and _is_ndarray(actual):
        if expected.dtype != actual.dtype and opt.exact_dtype:
            return f"{_where(path)}: dtype {actual.dtype}, expected {expected.dtype}"
        return _tensor_diff(torch.as_tensor(expected), torch.as_tensor(actual), path, opt)
    if isinstance(expected, float) or isinstance(actual, float):
        if not isinstance(actual, (int, float)) or not isinstance(expected, (int, float)) \
                or isinstance(actual, bool) or isinstance(expected, bool):
            return f"{_where(path)}: expected {type(expected).__name__} {expected!r}, got {type(actual).__name__}"
        return _float_diff(float(expected), float(actual), path, opt)
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        if type(expected) is not type(actual):
            return f"{_where(path)}: expected {type(expected).__name__}, got {type(actual).__name__}"
        if list(expected.keys()) != list(actual.keys()):
            return f"{_where(path)}: keys {list(actual.keys())!r}, expected {list(expected.keys())!r}"
        for key in expected:
            found = _diff(expected[key], actual[key], f"{path}[{key!r}]", opt)
            if found:
                return found
        return None
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        if type(expected) is not type(actual) and not _both_sizes(expected, actual):
            return f"{_where(path)}: expected {type(expected).__name__}, got {type(actual).__name__}"
        if len(expected) != len(actual):
            return f"{_where(path)}: length {len(actual)}, expected {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            found = _diff(e, a, f"{path}[{i}]", opt)
            if found:
                return found
        return None
    if dataclasses.is_dataclass(expected) and not isinstance(expected, type):
        if type(expected) is not type(actual):
            return f"{_where(path)}: expected {type(expected).__name__}, got {type(actual).__name__}"
        for f in dataclasses.fields(expected):
            found = _diff(getattr(expected, f.name), getattr(actual, f.name), f"{path}.{f.name}", opt)
            if found:
                return found
        return None
    if type(expected) is not type(actual):
        return f"{_where(path)}: expected {type(expected).__name__} {expected!r:.60}, got {type(actual).__name__} " \
               f"{actual!r:.60}"
    try:
        equal = expected == actual
        equal = bool(equal)
    except Exception:
        equal = expected is actual
    return None if equal else f"{_where(path)}: {actual!r:.80}, expected {expected!r:.80}"


def _both_sizes(a, b):
    return isinstance(a, (torch.Size, tuple)) and isinstance(b, (torch.Size, tuple)) and \
        (isinstance(a, torch.Size) or isinstance(b, torch.Size)) and not hasattr(a, "_fields") \
        and not hasattr(b, "_fields")


def _is_ndarray(value):
    return type(value).__module__ == "numpy" and type(value).__name__ == "ndarray"


def _float_diff(e, a, path, opt):
    if math.isnan(e) or math.isnan(a):
        if math.isnan(e) and math.isnan(a) and opt.equal_nan:
            return None
        return f"{_where(path)}: {a!r}, expected {e!r}"
    if opt.signed_zeros and e == 0.0 and a == 0.0 and math.copysign(1.0, e) != math.copysign(1.0, a):
        return f"{_where(path)}: {a!r}, expected {e!r} (sign of zero)"
    if math.isinf(e) or math.isinf(a):
        return None if e == a else f"{_where(path)}: {a!r}, expected {e!r}"
    rtol, atol = tolerance(torch.float64)
    rtol = opt.rtol if opt.rtol is not None else rtol
    atol = opt.atol if opt.atol is not None else atol
    return None if abs(a - e) <= atol + rtol * abs(e) else f"{_where(path)}: {a!r}, expected {e!r}"


def _tensor_diff(e, a, path, opt):
    where = _where(path)
    if e.shape != a.shape:
        return f"{where}: shape {tuple(a.shape)}, expected {tuple(e.shape)}"
    if e.dtype != a.dtype and opt.exact_dtype:
        return f"{where}: dtype {a.dtype}, expected {e.dtype}"
    if e.device.type != a.device.type:
        return f"{where}: device {a.device}, expected {e.device}"
    e, a = _dense(e.detach()), _dense(a.detach())
    if e.is_complex() or a.is_complex():
        e, a = torch.view_as_real(e.to(torch.complex128)), torch.view_as_real(a.to(torch.complex128))
    if not (e.is_floating_point() or a.is_floating_point()):
        if e.dtype != a.dtype:
            e, a = e.to(torch.int64) if e.dtype != torch.bool else e, a.to(e.dtype)
        equal = torch.equal(e, a)
        return None if equal else f"{where}: {_first_bad(e.ne(a), e, a)}"
    dtype = e.dtype if e.is_floating_point() else a.dtype
    rtol, atol = tolerance(dtype)
    rtol = opt.rtol if opt.rtol is not None else rtol
    atol = opt.atol if opt.atol is not None else atol
    e64, a64 = e.to(torch.float64), a.to(torch.float64)
    e_nan, a_nan = e64.isnan(), a64.isnan()
    nan_bad = (e_nan != a_nan) if opt.equal_nan else (e_nan | a_nan)
    if nan_bad.any():
        return f"{where}: {_first_bad(nan_bad, e64, a64)} (NaN)"
    both = ~(e_nan | a_nan)
    e64, a64 = e64.where(both, 0.0), a64.where(both, 0.0)
    if opt.signed_zeros:
        sign_bad = (e64 == 0) & (a64 == 0) & (e64.signbit() != a64.signbit())
        if sign_bad.any():
            return f"{where}: {_first_bad(sign_bad, e64, a64)} (sign of zero)"
    inf_bad = (e64.isinf() | a64.isinf()) & (e64 != a64)
    if inf_bad.any():
        return f"{where}: {_first_bad(inf_bad, e64, a64)}"
    finite = ~(e64.isinf() | a64.isinf())
    gap = (a64 - e64).abs().where(finite, 0.0)
    bad = gap > atol + rtol * e64.abs().where(finite, 0.0)
    if not bad.any():
        return None
    if dtype in LOW_PRECISION and opt.cosine is not None and _cosine(e64.where(finite, 0.0),
                                                                      a64.where(finite, 0.0)) >= opt.cosine:
        return None
    return f"{where}: {_first_bad(bad, e64, a64)}, max abs difference {gap.max().item():.3g} " \
           f"(rtol {rtol:g}, atol {atol:g}, {int(bad.sum())} of {bad.numel()} elements differ)"


def _dense(t):
    if t.layout != torch.strided:
        t = t.to_dense()
    if t.is_quantized:
        t = t.dequantize()
    return t


def _cosine(e, a):
    e, a = e.flatten(), a.flatten()
    norms = e.norm() * a.norm()
    if norms == 0:
        return 1.0 if torch.equal(e, a) else 0.0
    return float((e @ a) / norms)


def _first_bad(bad, e, a):
    index = tuple(int(i) for i in bad.nonzero()[0]) if bad.dim() else ()
    at = f" at {list(index)}" if index else ""
    return f"{a[index].item()!r}{at}, expected {e[index].item()!r}"
