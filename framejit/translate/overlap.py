"""In-place writes that eager refuses because memory overlaps, found at translation.

Why this exists: `w.copy_(w.t())`, `x[1:].copy_(x[:-1])`, `x.expand(3, 3).add_(1)`, `torch.sin(w,
out=w.t())` raise in eager mode ("unsupported operation: some elements of the input tensor and the
written-to tensor refer to a single memory location", or "more than one element of the written-to
tensor refers to a single memory location"). Those checks live in the real kernels (TensorIterator,
copy_, index_put_, ...), which compare data pointers; fake and meta tensors have none, so translation
does not see the error, and a backend that functionalizes the graph (aot_eager, inductor) computes a
value where eager raises.

Whether a write overlaps is a function of the layout only (sizes, strides, offsets, which tensors
share a storage), and guards fix the layout. So when an op wrote into a tensor (its fake's version
moved) that has a broadcast dimension or shares a storage with another argument, the op is asked
once more, of the real kernel, on stand-ins: fresh storages of the same sizes holding tensors of
the same layouts. If the kernel raises, so would eager: the op is a graph break and runs as Python
there, raising exactly as eager does. Stand-ins are uninitialized (a kernel that raises on their
values only costs a graph break), and the CPU generator state is put back after them.
"""
import operator

import torch

from ..errors import GraphBreak


def tensors_of(args, kwargs):
    """The tensors among an op's arguments (top level, and inside lists, tuples and dict values)."""
    found = []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, torch.Tensor):
            found.append(a)
        elif isinstance(a, (list, tuple)):
            found.extend(x for x in a if isinstance(x, torch.Tensor))
        elif isinstance(a, dict):
            found.extend(x for x in a.values() if isinstance(x, torch.Tensor))
    return found


def versions_of(tensors):
    """Each tensor's version counter (None for inference tensors, which have none: their writes are
    not checked here)."""
    out = []
    for t in tensors:
        try:
            out.append(t._version)
        except RuntimeError:
            out.append(None)
    return out


def _storage_key(t):
    return t.untyped_storage()._cdata


def _broadcast(t):
    return any(stride == 0 and size > 1 for size, stride in zip(t.shape, t.stride()))


def _needs_asking(tensors, versions):
    for t, version in zip(tensors, versions):
        if version is None or t._version == version:
            continue
        if _broadcast(t):
            return True
        key = _storage_key(t)
        if any(o is not t and _storage_key(o) == key for o in tensors):
            return True
    return False


def check_overlap(op, target, fake_args, fake_kwargs, tensors, versions):
    """GraphBreak if the op just run on fakes wrote overlapping memory that eager refuses."""
    if not tensors or not _needs_asking(tensors, versions):
        return
    try:
        stand_ins = _stand_ins(tensors)
    except Exception as e:                       # a device or layout that cannot be rebuilt: do not guess
        raise GraphBreak("op raised", f"{_name(target)} writes into memory it also reads, and its overlap "
                         f"could not be checked ({type(e).__name__})")
    args = _replace(fake_args, stand_ins)
    kwargs = {k: _replace(v, stand_ins) for k, v in fake_kwargs.items()}
    rng = torch.get_rng_state()
    try:
        with torch.no_grad():
            if op == "call_method":
                getattr(args[0], target)(*args[1:], **kwargs)
            else:
                target(*args, **kwargs)
    except Exception as e:
        message = str(e).splitlines()[0] if str(e) else ""
        raise GraphBreak("op raised", f"{_name(target)} raises {type(e).__name__}: {message}")
    finally:
        torch.set_rng_state(rng)


def _stand_ins(tensors):
    """id(fake) -> a real tensor of the same layout, on one fresh storage per fake storage."""
    storages = {}
    out = {}
    for t in tensors:
        key = _storage_key(t)
        if key not in storages:
            storages[key] = torch.empty(t.untyped_storage().nbytes(), dtype=torch.uint8,
                                        device=t.device).untyped_storage()
        real = torch.empty(0, dtype=t.dtype, device=t.device)
        real.set_(storages[key], t.storage_offset(), t.shape, t.stride())
        out[id(t)] = real
    return out


def _replace(a, stand_ins):
    if isinstance(a, torch.Tensor):
        return stand_ins[id(a)]
    if isinstance(a, list):
        return [_replace(x, stand_ins) for x in a]
    if isinstance(a, tuple) and any(isinstance(x, torch.Tensor) for x in a):
        return tuple(_replace(x, stand_ins) for x in a)
    if isinstance(a, dict):
        return {k: _replace(v, stand_ins) for k, v in a.items()}
    return a


def _name(target):
    if target in (operator.setitem,):
        return "tensor item assignment"
    return target if isinstance(target, str) else getattr(target, "__name__", repr(target))
