"""What a compiled graph's cache entry is keyed by.

Why this exists: an entry must be found only for the graph it was made from. The key is a sha256 over:
the graph's Python code (framejit's graphs print deterministically: no ids or addresses in them) and
the values of its constant attributes and submodules' state; each input's type, shape, stride, storage
offset, dtype, device, requires_grad and leafness; the global state compiling reads (grad mode, CPU
autocast and its dtype, default dtype, deterministic algorithms); torch's, Python's and framejit's
versions (framejit's as a hash of its backend and cache sources); the backend's name and options.

For inductor's JIT path an entry only refills inductor's own caches, and inductor checks its own key
(graph, inputs, config, versions) before it uses anything. An AOTInductor library (backends/inductor_aoti.py)
is run as it is: this key is its only check, so that backend adds the machine and inductor's settings.
"""
import hashlib
import os
import sys

import torch

_FRAMEJIT_SOURCES = None


def framejit_version():
    """A hash of the sources that decide what a backend compiles (backends/ and persist/)."""
    global _FRAMEJIT_SOURCES
    if _FRAMEJIT_SOURCES is None:
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        h = hashlib.sha256()
        for room in ("backends", "persist"):
            folder = os.path.join(package, room)
            for name in sorted(os.listdir(folder)):
                if name.endswith(".py"):
                    with open(os.path.join(folder, name), "rb") as f:
                        h.update(name.encode() + b"\0" + f.read())
        _FRAMEJIT_SOURCES = h.hexdigest()[:16]
    return _FRAMEJIT_SOURCES


def versions():
    return {"torch": torch.__version__, "torch_git": getattr(torch.version, "git_version", ""),
            "python": sys.version.split()[0], "framejit": framejit_version()}


def _tensor_bytes(t):
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    flat = t.contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""


def _describe_input(x):
    if isinstance(x, torch.Tensor):
        return ("tensor", type(x).__name__, tuple(x.shape), tuple(x.stride()), x.storage_offset(), str(x.dtype),
                str(x.device), x.requires_grad, x.is_leaf)
    return (type(x).__name__, repr(x))


def global_state():
    return (torch.is_grad_enabled(), torch.is_autocast_enabled("cpu"), str(torch.get_autocast_dtype("cpu")),
            str(torch.get_default_dtype()), torch.are_deterministic_algorithms_enabled())


def graph_key(gm, example_inputs, backend, options=None):
    """The hex key of `gm` compiled by `backend` (a name) with `options` for `example_inputs`."""
    h = hashlib.sha256()

    def put(*parts):
        for part in parts:
            h.update(repr(part).encode() if not isinstance(part, bytes) else part)
            h.update(b"\0")

    put("graph", gm.code)
    for name, value in sorted(gm.__dict__.items()):
        if isinstance(value, torch.Tensor):
            put("attr", name, _describe_input(value), _tensor_bytes(value))
    for name, module in sorted(gm.named_modules()):
        if module is not gm:
            put("module", name, type(module).__qualname__, repr(module))
        for pname, tensor in sorted(list(module.named_parameters(recurse=False)) +
                                    list(module.named_buffers(recurse=False))):
            put(pname, _describe_input(tensor), _tensor_bytes(tensor))
    put("inputs", [_describe_input(x) for x in example_inputs])
    put("state", global_state())
    put("versions", sorted(versions().items()))
    put("backend", backend, sorted((options or {}).items()))
    return h.hexdigest()
