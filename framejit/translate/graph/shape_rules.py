"""Output metadata of a few hot ops written out, instead of running torch's fake kernels for them.

Why this exists: the first time a process meets an op on new shapes, FakeTensorMode misses its cache and
runs the op's Python decomposition or meta function: 5-15 ms for each `batch_norm`, `layer_norm` or
`linear` shape (a ResNet-50 or a ConvNeXt meets a dozen of each). That cost is torch's, but on a first
capture it was most of framejit's own time. For the plain inference case of these three ops the result's
metadata is simple: the input's shape (last dimension replaced for linear), its dtype and device,
contiguous (layer_norm's also for a permuted dense input). A rule answers only under conditions that
make that exact -- every tensor a contiguous strided fake on one device with one floating dtype, no autograd to record (grad mode off or nothing
requiring grad), shapes that the real kernel accepts, no symbolic sizes -- and returns None otherwise, so
the op runs on fakes as before (also where eager would raise: the fake kernel raises the same error).
tests/translate/graph/test_shape_rules.py checks each rule against the fake kernel's own answer.
"""
import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensor

_FLOATS = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


def _dense(t):
    """Does t's memory cover its elements exactly once (some permutation of a contiguous layout)?"""
    expected = 1
    for stride, size in sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _plain(ts, dtype, device, dense_first=False):
    """Are all of `ts` (tensors or None) contiguous strided fakes of `dtype` on `device`, concrete sizes?
    `dense_first`: the first may have any non-overlapping dense layout (a permuted one)."""
    for i, t in enumerate(ts):
        if t is None:
            continue
        if type(t) is not FakeTensor or t.dtype is not dtype or t.device != device or \
                t.layout is not torch.strided or any(type(s) is not int for s in t.shape):
            return False
        if not (t.is_contiguous() or dense_first and i == 0 and _dense(t)):
            return False
    return True


def _no_autograd(ts):
    return not torch.is_grad_enabled() or not any(t is not None and t.requires_grad for t in ts)


def _like(x, shape):
    return torch.empty(shape, dtype=x.dtype, device=x.device)


def _batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
                momentum=0.1, eps=1e-5):
    if training is not False or running_mean is None or running_var is None or \
            not isinstance(input, torch.Tensor) or input.dim() < 2 or input.dtype not in _FLOATS:
        return None
    ts = (input, running_mean, running_var, weight, bias)
    if not _plain(ts, input.dtype, input.device) or not _no_autograd(ts) or input.numel() == 0:
        return None
    c = input.shape[1]
    if any(t is not None and tuple(t.shape) != (c,) for t in ts[1:]):
        return None
    return _like(input, input.shape)


def _layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    if not isinstance(input, torch.Tensor) or input.dtype not in _FLOATS:
        return None
    if type(normalized_shape) not in (tuple, list, torch.Size):   # an int: the real op raises TypeError
        return None
    shape = tuple(normalized_shape)
    if not shape or not all(type(s) is int for s in shape) or tuple(input.shape[-len(shape):]) != shape or \
            input.dim() < len(shape):
        return None
    ts = (input, weight, bias)       # layer_norm's output is contiguous whatever the input's dense layout
    if not _plain(ts, input.dtype, input.device, dense_first=True) or not _no_autograd(ts) or \
            any(t is not None and tuple(t.shape) != shape for t in ts[1:]):
        return None
    return _like(input, input.shape)


def _linear(input, weight, bias=None):
    if not isinstance(input, torch.Tensor) or not isinstance(weight, torch.Tensor) or \
            input.dtype not in _FLOATS or input.dim() < 2 or weight.dim() != 2:
        return None
    ts = (input, weight, bias)
    if not _plain(ts, input.dtype, input.device) or not _no_autograd(ts) or input.shape[-1] != weight.shape[1] or \
            (bias is not None and tuple(bias.shape) != (weight.shape[0],)):
        return None
    return _like(input, (*input.shape[:-1], weight.shape[0]))


RULES = {F.batch_norm: _batch_norm, F.layer_norm: _layer_norm, torch._C._nn.linear: _linear, F.linear: _linear}


def rule_output(target, fake_args, fake_kwargs):
    """The fake result of `target(*fake_args, **fake_kwargs)` by rule (under the conversion's fake mode,
    which the caller has entered), or None when no rule answers exactly."""
    rule = RULES.get(target)
    if rule is None:
        return None
    try:
        return rule(*fake_args, **fake_kwargs)
    except TypeError:               # arguments the signature does not take: the real call says how
        return None
