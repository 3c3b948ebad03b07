"""Grad mode, CPU autocast and the default dtype read by libtorch's own functions, not its bindings.

Why this exists: nearly every entry checks the state its graph was made under (grad mode, and where
they matter CPU autocast and the default dtype). Through torch's Python bindings that is three calls
into libtorch_python per compiled call — `torch.is_autocast_enabled('cpu')` parses its device string
each time. The values themselves are one thread-local or global read each in libc10/libtorch_cpu, so
framejit's native module (`_words.state_is`) calls those functions directly.

Their addresses come from the libraries torch has loaded (by their exported C++ names), and they are
handed to the native module only after its answers agreed with torch's own under every state we can
set here (grad on/off, CPU autocast on/off, each default dtype torch accepts). Otherwise — another
torch, another platform, no native module — `state_bits` returns None and the Python checks stay.
"""
import ctypes
import os

import torch

try:
    from .._words import set_state_functions as _set_functions, state_is as _state_is
except ImportError:
    _set_functions = _state_is = None

_SYMBOLS = (("libc10.so", "_ZN3c108GradMode10is_enabledEv"),
            ("libtorch_cpu.so", "_ZN2at8autocast19is_autocast_enabledEN3c1010DeviceTypeE"),
            ("libc10.so", "_ZN3c1031get_default_dtype_as_scalartypeEv"))
GRAD, AUTOCAST, DTYPE = 1, 2, 0xFF00


def _addresses():
    lib_dir = os.path.join(os.path.dirname(torch.__file__), "lib")
    found = []
    for lib, symbol in _SYMBOLS:
        handle = ctypes.CDLL(os.path.join(lib_dir, lib), mode=getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_LOCAL)
        found.append(ctypes.cast(getattr(handle, symbol), ctypes.c_void_p).value)
    return found


def _scalar_type(dtype):
    """The ScalarType number libtorch keeps for `dtype` as the default dtype (read back, not assumed)."""
    before = torch.get_default_dtype()
    try:
        torch.set_default_dtype(dtype)
        found = [k for k in range(64) if _state_is(DTYPE, k << 8)]
    finally:
        torch.set_default_dtype(before)
    return found[0] if len(found) == 1 else None


def _agrees():
    for enabled in (False, True):
        with torch.set_grad_enabled(enabled):
            if not _state_is(GRAD, int(enabled)) or _state_is(GRAD, int(not enabled)):
                return False
    if not _state_is(AUTOCAST, 0) or torch.is_autocast_enabled("cpu"):
        return False
    with torch.autocast("cpu"):
        if not _state_is(AUTOCAST, AUTOCAST):
            return False
    return _state_is(AUTOCAST, 0)


def _setup():
    if _set_functions is None:
        return None
    try:
        _set_functions(*_addresses())
        if not _agrees():
            return None
        codes = {}
        for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
            try:
                code = _scalar_type(dtype)
            except (TypeError, RuntimeError):
                continue
            if code is not None:
                codes[dtype] = code
        if len(set(codes.values())) != len(codes) or torch.float32 not in codes or torch.float64 not in codes:
            return None
        return codes
    except (OSError, AttributeError, ValueError, TypeError):
        return None


_DTYPE_CODES = _setup()


def state_bits(kind, expected):
    """(mask, value) for one piece of state, or None: kind "grad" (expected a bool), "autocast" (CPU
    autocast, a bool) or "dtype" (the default dtype)."""
    if _DTYPE_CODES is None:
        return None
    if kind == "grad":
        return GRAD, int(bool(expected))
    if kind == "autocast":
        return AUTOCAST, AUTOCAST if expected else 0
    if kind == "dtype" and expected in _DTYPE_CODES:
        return DTYPE, _DTYPE_CODES[expected] << 8
    return None


def bits_term(bits, bind):
    """Generated-code text checking several pieces of state in one native call."""
    return f"{bind(_state_is)}({bits[0]}, {bits[1]})"
