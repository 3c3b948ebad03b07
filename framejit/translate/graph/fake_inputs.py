"""Fake tensors for a conversion's real inputs, made directly for plain leaf tensors.

Why this exists: FakeTensorMode.from_tensor describes a real tensor in full generality (views and
their bases, subclasses, functorch wrappers, symbolic sizes, gradients) and costs 150-250us per
tensor; a model's parameters and buffers are dozens of plain leaf tensors, so it was a tenth of a
capture. For the plain case the fake is exactly a meta tensor of the same shape, strides and dtype
wrapped as a FakeTensor on the real device, a leaf that requires grad when the real one does, and
marked as a Parameter when the real one is; it is registered in the mode's converter memo, as
from_tensor does, so the mode maps the real tensor to it. Anything else (views, non-zero storage
offsets, subclasses, inference/conjugate/negative tensors, tensors holding a .grad, meta or
functorch-wrapped tensors, non-strided layouts, inference mode) goes through from_tensor.
"""
import torch
from torch._subclasses.fake_tensor import FakeTensor

_PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter)
_STRIDED = torch.strided
_is_functorch_wrapped = torch._C._functorch.is_functorch_wrapped_tensor


def _is_plain_leaf(t):
    return type(t) in _PLAIN_TYPES and t.is_leaf and t.layout is _STRIDED and not t._is_view() and \
        t.storage_offset() == 0 and not (t.is_quantized or t.is_nested or t.is_meta or t.is_inference() or
                                         t.is_conj() or t.is_neg()) and \
        t.grad is None and not _is_functorch_wrapped(t)


def fake_of_input(fake_mode, t):
    """The FakeTensor standing for real tensor `t` in `fake_mode` (static shapes)."""
    if t.requires_grad and t._is_view() and _history_unreadable(t):
        return _fake_of_unreadable_view(fake_mode, t)
    if not _is_plain_leaf(t) or torch.is_inference_mode_enabled():
        return fake_mode.from_tensor(t, static_shapes=True)
    converter = fake_mode.fake_tensor_converter
    known = converter._get_memo(t)
    if known is not None:
        return known
    fake = FakeTensor(fake_mode, torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta"), t.device)
    if t.requires_grad:
        fake.requires_grad = True
    if type(t) is torch.nn.Parameter:
        fake._is_param = True
    converter.set_tensor_memo(t, fake)
    return fake


def _history_unreadable(t):
    """An output of a multi-output view op (unbind, split, a tensor's rows) whose base was written
    since: autograd refuses to read its grad_fn (and is_leaf, and any op on it) from then on."""
    try:
        t.grad_fn
    except RuntimeError:
        return True
    return False


def _fake_of_unreadable_view(fake_mode, t):
    """Such a view as a fake: its data (the same shape, strides, storage offset) as a non-leaf that
    requires grad. Nothing at translation reads its history; an op on it in the graph raises at run
    time what eager's op raises, from the real tensor; reading is_leaf is a graph break."""
    fake = fake_mode.from_tensor(t.detach(), static_shapes=True)
    with fake_mode, torch.enable_grad():
        leaf = fake.detach().requires_grad_(True)
        view = leaf.view_as(leaf)
    view.framejit_history_unreadable = True      # is_leaf of it runs as Python (values/attrs.py)
    return view
