"""framejit.mark_dynamic, maybe_mark_dynamic and mark_static: the user's say on which sizes vary.

A mark lives on the tensor itself (as torch.compile's marks do), in its `__dict__`, so it travels with
the tensor and costs nothing on the per-call path: conversions read it when they meet the tensor.

    mark_dynamic(t, dim, min=None, max=None)   dim is symbolic in every conversion that receives t
                                               (whatever `dynamic=` says), within [min, max] if given
    maybe_mark_dynamic(t, dim)                 symbolic where the policy allows it (not under dynamic=False)
    mark_static(t, dim=None)                   never symbolic; on an nn.Module: its parameters and buffers
"""
import torch

DYNAMIC_KEY = "_framejit_dynamic_dims"        # {dim: (min, max)}
MAYBE_KEY = "_framejit_maybe_dynamic_dims"    # {dim}
STATIC_KEY = "_framejit_static_dims"          # {dim} (all dims: the Ellipsis marker)
ALL = ...


def _dims(t, dim):
    if isinstance(dim, (list, tuple)):
        return [_dim(t, d) for d in dim]
    return [_dim(t, dim)]


def _dim(t, dim):
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"a dimension must be an int, got {type(dim).__name__} {dim!r}")
    n = t.dim()
    if not -n <= dim < n:
        raise IndexError(f"dimension {dim} is out of range for a tensor of {n} dimensions")
    return dim % n


def _check_tensor(t, caller):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"framejit.{caller} expects a tensor, got {type(t).__name__}")


def mark_dynamic(t, dim, min=None, max=None):
    """Make `t`'s dimension `dim` (an int or a list of them) symbolic in every conversion that gets `t`."""
    _check_tensor(t, "mark_dynamic")
    for bound in (min, max):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 0):
            raise ValueError(f"framejit.mark_dynamic: min and max must be non-negative ints, got {bound!r}")
    if min is not None and max is not None and min > max:
        raise ValueError(f"framejit.mark_dynamic: min {min} is greater than max {max}")
    marks = t.__dict__.setdefault(DYNAMIC_KEY, {})
    for d in _dims(t, dim):
        marks[d] = (min, max)
        t.__dict__.get(STATIC_KEY, set()).discard(d)


def maybe_mark_dynamic(t, dim):
    """Make `t`'s dimension `dim` symbolic unless something says it is static (dynamic=False, mark_static)."""
    _check_tensor(t, "maybe_mark_dynamic")
    t.__dict__.setdefault(MAYBE_KEY, set()).update(_dims(t, dim))


def mark_static(t, dim=None):
    """Keep `t`'s dimension `dim` (every dimension if None) static; on an nn.Module, every dimension of
    its parameters and buffers."""
    if isinstance(t, torch.nn.Module):
        for tensor in (*t.parameters(), *t.buffers()):
            mark_static(tensor)
        return t
    _check_tensor(t, "mark_static")
    static = t.__dict__.setdefault(STATIC_KEY, set())
    if dim is None:
        static.add(ALL)
        t.__dict__.pop(DYNAMIC_KEY, None)
        t.__dict__.pop(MAYBE_KEY, None)
    else:
        for d in _dims(t, dim):
            static.add(d)
            t.__dict__.get(DYNAMIC_KEY, {}).pop(d, None)
            t.__dict__.get(MAYBE_KEY, set()).discard(d)
    return t


def marks_of(t):
    """(dynamic {dim: (min, max)}, maybe {dim}, static {dim or ALL}) of tensor `t`, or None if unmarked."""
    d = getattr(t, "__dict__", None)
    if not d or (DYNAMIC_KEY not in d and MAYBE_KEY not in d and STATIC_KEY not in d):
        return None
    return d.get(DYNAMIC_KEY, {}), d.get(MAYBE_KEY, set()), d.get(STATIC_KEY, set())


def has_marks(t):
    d = getattr(t, "__dict__", None)
    return bool(d) and (DYNAMIC_KEY in d or MAYBE_KEY in d)
