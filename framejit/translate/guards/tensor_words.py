"""Machine words that say a fixed tensor's metadata is unchanged: a buffer checked without six calls.

Why this exists: a module's buffers (BatchNorm running stats, rotary `inv_freq`, `position_ids`) are
graph inputs whose metadata the graph was made for, and unlike parameters nothing watches their
metadata setters (that would mean wrapping torch.Tensor for every program). Checked the plain way each
costs six libtorch calls per compiled call; ResNet has a dozen. But a buffer is the same object on
every call (its identity is covered by the module watch), and all of its metadata lives in its
TensorImpl: the storage pointer (`set_`, `.data =`), the autograd-meta pointer (`requires_grad_`),
the sizes and strides (kept inline for up to five dims), the storage offset, the numel, and the words
holding dtype, device and the dispatch keys. Those words join the version words (guards/dict_guards.py):
while they read as stamped, the tensor's TENSOR_MATCH still holds.

Nothing here is a fixed fact about libtorch: the layout is found by probing live tensors at import
(where the impl pointer sits in the Python object, where the sizes start), and then checked against
every metadata change we know of (resize_, t_, unsqueeze_, squeeze_, as_strided_, set_, `.data =`
with another dtype, requires_grad_) and against reads and in-place arithmetic, which must move
nothing. If anything disagrees, `tensor_words` returns None and buffers keep their plain checks.

A stamp is only taken while the tensor has no autograd meta (else `requires_grad` lives outside these
words) and at most five dims (else its sizes live outside them): `stamp_allowed` says which words
must read zero or small for that.
"""
import ctypes
import struct

import torch

from .dict_versions import ENABLED

_INLINE_DIMS = 5                 # c10::impl::SizesAndStrides keeps up to this many dims inline


def _word(address):
    return ctypes.c_uint64.from_address(address).value


def _impl_words(t, count):
    base = t._cdata
    return [_word(base + 8 * i) for i in range(count)]


def _probe():
    """(offset of the impl pointer in the Python object, [impl word indices to watch], index of the
    autograd-meta word, index of the dims word), or None."""
    if not ENABLED or not hasattr(torch.Tensor, "_cdata"):
        return None
    t = torch.zeros(3, 5, 7)
    pointer_offset = next((off for off in range(8, 64, 8) if _word(id(t) + off) == t._cdata), None)
    if pointer_offset is None:
        return None
    head = _impl_words(t, 16)               # read no further than the fields looked for
    dims = next((i for i in range(2, 12) if head[i:i + 4] == [3, 3, 5, 7]), None)
    if dims is None:
        return None
    words = _impl_words(t, dims + 2 * _INLINE_DIMS + 5)   # through the dtype/device and dispatch-key words
    if words[dims + 1 + _INLINE_DIMS:dims + 4 + _INLINE_DIMS] != [35, 7, 1]:
        return None
    offset_word = dims + 1 + 2 * _INLINE_DIMS
    if words[offset_word] != 0 or words[offset_word + 1] != 105:        # storage offset, numel
        return None
    pyobj = [i for i in range(2, dims) if words[i] == id(t)]
    watched = [i for i in range(2, offset_word + 4) if i not in pyobj]
    plain = torch.zeros(2, 3)
    meta = [i for i in range(2, dims) if _impl_words(plain, dims)[i] == 0]
    plain.requires_grad_()
    meta = [i for i in meta if _impl_words(plain, dims)[i] != 0]
    if len(meta) != 1:
        return None
    return pointer_offset, watched, meta[0], dims


def _layout_holds(layout):
    """Every metadata change we know of moves a watched word; reads and arithmetic move none."""
    pointer_offset, watched, meta, dims = layout

    def snap(t):
        return [_word(id(t) + pointer_offset)] + [_word(t._cdata + 8 * i) for i in watched]

    def fresh():
        return torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)[:, 1:]

    changes = [lambda t: t.resize_(3, 3), lambda t: t.transpose_(0, 2), lambda t: t.unsqueeze_(0),
               lambda t: t.as_strided_((2, 2), (1, 2)), lambda t: t.as_strided_((2, 2), (1, 2), 1),
               lambda t: t.set_(torch.zeros(2, 2, 4)), lambda t: setattr(t, "data", torch.zeros(2, 2, 4).int()),
               lambda t: t.squeeze_(0) if t.shape[0] == 1 else t.unsqueeze_(0).squeeze_(1)]
    for change in changes:
        t = fresh().clone()                # no autograd meta, like a buffer
        before = snap(t)
        change(t)
        if snap(t) == before:
            return False
    t = torch.zeros(2, 3)
    before = snap(t)
    t.requires_grad_()
    if snap(t) == before:
        return False
    t = fresh()
    before = snap(t)
    with torch.no_grad():
        _ = (t + 1, t.sum(), t.view(-1) if t.is_contiguous() else t.reshape(-1), t.shape, t.stride(), t[0])
        t.add_(1)
        t.mul_(2)
    t2 = torch.zeros(4, 4)
    if snap(t) != before:
        return False
    s2 = snap(t2)
    t2.squeeze_()                          # no size-1 dims: nothing changes, nothing may move
    if snap(t2) != s2:
        return False
    for shape in [(), (4,), (2, 3), (1, 2, 3, 4, 5)]:
        x = torch.empty(shape)
        w = [_word(x._cdata + 8 * (dims + i)) for i in range(1 + 2 * _INLINE_DIMS)]
        if w[0] != len(shape) or w[1:1 + len(shape)] != list(shape) or \
                w[1 + _INLINE_DIMS:1 + _INLINE_DIMS + len(shape)] != list(x.stride()):
            return False
    return True


try:
    _LAYOUT = _probe()
    if _LAYOUT is not None and not _layout_holds(_LAYOUT):
        _LAYOUT = None
except Exception:                          # any surprise: plain checks
    _LAYOUT = None


# ---- input tensors: one native call instead of six getters -----------------------------------------

try:
    from ..._words import tensor_check as _native_check
except ImportError:
    _native_check = None

_DTYPE_DEVICE_MASK = (1 << 40) - 1       # dtype (2 bytes), device type, device index, device set


def _dtype_and_keys(dims):
    """Indices of the word whose low five bytes are dtype and device, and of the dispatch-key word,
    found by comparing tensors that differ in dtype only, and in inference mode only; or None."""
    a, b = torch.zeros(2, 3), torch.zeros(2, 3, dtype=torch.float64)
    with torch.inference_mode():
        c = torch.zeros(2, 3)
    start = dims + 1 + 2 * _INLINE_DIMS + 2                   # after storage offset and numel
    dtype = [i for i in range(start, start + 2)
             if _word(a._cdata + 8 * i) & _DTYPE_DEVICE_MASK != _word(b._cdata + 8 * i) & _DTYPE_DEVICE_MASK]
    keys = [i for i in range(start, start + 2) if _word(a._cdata + 8 * i) != _word(c._cdata + 8 * i)
            and _word(a._cdata + 8 * i) == _word(b._cdata + 8 * i)]
    return (dtype[0], keys[0]) if len(dtype) == 1 and len(keys) == 1 else None


_INPUT_WORDS = _dtype_and_keys(_LAYOUT[3]) if _LAYOUT is not None and _native_check is not None else None


def input_check(meta):
    """(check, spec) such that `check(t, spec)` is True only if tensor t matches TensorMeta `meta`
    (exact type, dtype, device, shape, strides, requires_grad False, inference or not: the dispatch-key
    word), or None when that can't be shown
    in one native call (requires_grad True, more than five dims, no native module or layout)."""
    if _INPUT_WORDS is None or meta.type is not torch.Tensor or meta.requires_grad or \
            len(meta.shape) > _INLINE_DIMS or meta.device.type != "cpu":
        return None
    pointer_offset, _, meta_word, dims = _LAYOUT
    dtype_word, key_word = _INPUT_WORDS
    with torch.inference_mode(meta.inference):        # the dispatch-key word tells inference tensors apart
        probe = torch.empty_strided(meta.shape, meta.stride, dtype=meta.dtype)
    full = (1 << 64) - 1
    triples = [(meta_word, full, 0), (dims, full, len(meta.shape))]
    triples += [(dims + 1 + i, full, n) for i, n in enumerate(meta.shape)]
    triples += [(dims + 1 + _INLINE_DIMS + i, full, n & full) for i, n in enumerate(meta.stride)]
    triples += [(dtype_word, _DTYPE_DEVICE_MASK, _word(probe._cdata + 8 * dtype_word) & _DTYPE_DEVICE_MASK),
                (key_word, full, _word(probe._cdata + 8 * key_word))]
    spec = struct.pack(f"=2Q{3 * len(triples)}Q", id(torch.Tensor), pointer_offset,
                       *[x for triple in triples for x in triple])
    if not _native_check(probe, spec):    # the probe itself must pass, or the layout is not understood
        return None
    return _native_check, spec


def dynamic_input_check(meta):
    """(check, spec) such that `check(t, spec)` is True only if tensor t matches DynamicTensorMeta `meta`
    in everything but its dynamic sizes and its strides (exact type, dtype, device, rank, static sizes,
    requires_grad False): the caller checks contiguity. None as for input_check."""
    if _INPUT_WORDS is None or meta.type is not torch.Tensor or meta.requires_grad or \
            len(meta.shape) > _INLINE_DIMS or meta.device.type != "cpu":
        return None
    pointer_offset, _, meta_word, dims = _LAYOUT
    dtype_word, key_word = _INPUT_WORDS
    with torch.inference_mode(meta.inference):
        probe = torch.empty(tuple(2 if n is None else n for n in meta.shape), dtype=meta.dtype)
    full = (1 << 64) - 1
    triples = [(meta_word, full, 0), (dims, full, len(meta.shape))]
    triples += [(dims + 1 + i, full, n) for i, n in enumerate(meta.shape) if n is not None]
    triples += [(dtype_word, _DTYPE_DEVICE_MASK, _word(probe._cdata + 8 * dtype_word) & _DTYPE_DEVICE_MASK),
                (key_word, full, _word(probe._cdata + 8 * key_word))]
    spec = struct.pack(f"=2Q{3 * len(triples)}Q", id(torch.Tensor), pointer_offset,
                       *[x for triple in triples for x in triple])
    if not _native_check(probe, spec):
        return None
    return _native_check, spec


def tensor_words(t):
    """[(reader, role)] for a fixed plain CPU tensor's metadata words, role "meta" (must be 0 to stamp),
    "dims" (must be <= 5) or "word"; None when this tensor (or this libtorch) can't be watched so."""
    if _LAYOUT is None or type(t) is not torch.Tensor or t.layout is not torch.strided or not t.is_cpu:
        return None
    pointer_offset, watched, meta, dims = _LAYOUT
    readers = [(ctypes.c_uint64.from_address(id(t) + pointer_offset), "word")]
    impl = t._cdata
    if readers[0][0].value != impl:
        return None
    for i in watched:
        role = "meta" if i == meta else "dims" if i == dims else "word"
        readers.append((ctypes.c_uint64.from_address(impl + 8 * i), role))
    return readers


def stamp_allowed(words, roles):
    """May a stamp be taken of these words (roles as from tensor_words, by position)?"""
    return all(words[i] == 0 if role == "meta" else words[i] <= _INLINE_DIMS if role == "dims" else True
               for i, role in roles)
