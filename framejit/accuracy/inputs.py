"""Fresh copies of a call's inputs, and a block that leaves the random number generators as it found them.

`clone_inputs(values)` copies every tensor inside `values` (lists, tuples, namedtuples, dicts, numpy arrays)
so that running a graph on the copies changes nothing the caller holds, while the copies look like the
originals to the graph: same dtype, shape, strides and storage offset; tensors that shared storage share
(a copy of) it again, so views stay views and in-place writes land where they would; requires_grad,
leafness (a copy is a leaf) and `.grad` are kept; a Parameter's copy is a Parameter. Other objects are
shared, not copied.

`preserve_rng_state()` (a context manager, also a decorator) saves torch's CPU generator and, when CUDA is
initialized, every CUDA device's generator, and puts them back on exit: two runs inside two such blocks
draw the same random numbers.
"""
from __future__ import annotations

import contextlib

import torch


def clone_inputs(values):
    """A copy of `values` with every tensor cloned as the module docstring says."""
    return _Cloner().clone(values)


class _Cloner:
    def __init__(self):
        self.tensors = {}      # id(original tensor) -> its copy (one tensor passed twice stays one)
        self.storages = {}     # (device, data_ptr) of an original storage -> the copied storage

    def clone(self, value):
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if type(value).__module__ == "numpy" and type(value).__name__ == "ndarray":
            return value.copy()
        if isinstance(value, list):
            return [self.clone(v) for v in value]
        if isinstance(value, tuple):
            items = [self.clone(v) for v in value]
            return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
        if isinstance(value, dict):
            copied = {k: self.clone(v) for k, v in value.items()}
            if type(value) is dict:
                return copied
            try:
                new = type(value)(copied)
                return new
            except Exception:
                return copied
        return value

    def tensor(self, t):
        known = self.tensors.get(id(t))
        if known is not None:
            return known
        copy = self._copy(t)
        if t.requires_grad and (copy.is_floating_point() or copy.is_complex()):
            copy.requires_grad_(True)
        if t.is_leaf and t.grad is not None:
            copy.grad = self.tensor(t.grad)
        if isinstance(t, torch.nn.Parameter):
            copy = torch.nn.Parameter(copy, requires_grad=t.requires_grad)
        self.tensors[id(t)] = copy
        return copy

    def _copy(self, t):
        t = t.detach()
        plain = type(t) in (torch.Tensor, torch.nn.Parameter) and t.layout == torch.strided and \
            not t.is_quantized and t.device.type != "meta" and not _is_fake(t)
        if not plain:
            return t.clone()
        storage = t.untyped_storage()
        key = (str(t.device), storage.data_ptr(), storage.nbytes())
        copied = self.storages.get(key)
        if copied is None:
            copied = self.storages[key] = storage.clone()
        out = torch.empty((), dtype=t.dtype, device=t.device)
        out.set_(copied, t.storage_offset(), t.size(), t.stride())
        return out


def _is_fake(t):
    return type(t).__name__ in ("FakeTensor", "FunctionalTensor")


@contextlib.contextmanager
def preserve_rng_state():
    """Put torch's CPU (and, when initialized, CUDA) random generators back as they were on exit."""
    cpu = torch.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    try:
        yield
    finally:
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)
