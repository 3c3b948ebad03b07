"""Grad mode, CPU autocast, jit tracing and the default dtype read by libtorch's own functions, not
its bindings.

Why this exists: nearly every entry checks the state its graph was made under (grad mode, and where
they matter CPU autocast and the default dtype), and a compiled module's call asks whether torch.jit is
tracing (as nn.Module.__call__ does). Through torch's Python bindings that is up to four calls into
libtorch_python per compiled call — `torch.is_autocast_enabled('cpu')` parses its device string each
time, and `torch._C._get_tracing_state()` goes through pybind11 (2-3 us in situ after a graph has run).
The values themselves are one thread-local or global read each in libc10/libtorch_cpu, so framejit's
native module (`_words.state_is`) calls those functions directly.

Their addresses come from the libraries torch has loaded (by their exported C++ names), and they are
handed to the native module only after its answers agreed with torch's own under every state we can
set here (grad on/off, CPU autocast on/off, inside and outside torch.jit.trace, each default dtype
torch accepts). Tracing is read as the Tracer dispatch key being included in the thread's local key
set, which setTracingState() switches together with the tracing state; the key's number is not
exposed to Python, so it is found as the one key included only inside a trace. Otherwise — another
torch, another platform, no native module — `state_bits` returns None and the Python checks stay.
"""
import ctypes
import os
import warnings

import torch

try:
    from ..._words import set_state_functions as _set_functions, state_is
except ImportError:
    _set_functions = state_is = None

_SYMBOLS = (("libc10.so", "_ZN3c108GradMode10is_enabledEv"),
            ("libtorch_cpu.so", "_ZN2at8autocast19is_autocast_enabledEN3c1010DeviceTypeE"),
            ("libc10.so", "_ZN3c1031get_default_dtype_as_scalartypeEv"),
            ("libc10.so", "_ZN3c104impl28tls_is_dispatch_key_includedENS_11DispatchKeyE"))
GRAD, AUTOCAST, TRACING, DTYPE = 1, 2, 4, 0xFF00
_KEYS = range(1, 256)


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
        found = [k for k in range(64) if state_is(DTYPE, k << 8)]
    finally:
        torch.set_default_dtype(before)
    return found[0] if len(found) == 1 else None


def _tracer_key(addresses):
    """The Tracer dispatch key's number: the one key included in the thread's local set inside
    torch.jit.trace and not outside it, or None."""
    inside = []

    def probe(x):
        if torch._C._get_tracing_state() is not None:
            for key in _KEYS:
                _set_functions(*addresses, key)
                if state_is(TRACING, TRACING):
                    inside.append(key)
        return x
    _trace_quietly(probe)
    found = []
    for key in inside:
        _set_functions(*addresses, key)
        if state_is(TRACING, 0):
            found.append(key)
    return found[0] if len(found) == 1 else None


def _trace_quietly(fn):
    """torch.jit.trace(fn) on a one-element tensor, as a probe: torch 2.14 deprecates jit.trace with a
    FutureWarning that would reach the user's stderr from framejit's own probe, so it is silenced here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.trace(fn, torch.zeros(1), check_trace=False)


def _agrees():
    for enabled in (False, True):
        with torch.set_grad_enabled(enabled):
            if not state_is(GRAD, int(enabled)) or state_is(GRAD, int(not enabled)):
                return False
    if not state_is(AUTOCAST, 0) or torch.is_autocast_enabled("cpu"):
        return False
    with torch.autocast("cpu"):
        if not state_is(AUTOCAST, AUTOCAST):
            return False
    if not state_is(AUTOCAST, 0) or not state_is(TRACING, 0):
        return False
    seen = []
    _trace_quietly(lambda x: seen.append(state_is(TRACING, TRACING)) or x)
    return seen == [True] and state_is(TRACING, 0)


def _setup():
    if _set_functions is None:
        return None
    try:
        addresses = _addresses()
        _set_functions(*addresses, 0)
        key = _tracer_key(addresses)
        if key is None:
            return None
        _set_functions(*addresses, key)
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
    except (OSError, AttributeError, ValueError, TypeError, RuntimeError):
        return None


_DTYPE_CODES = _setup()


def state_bits(kind, expected):
    """(mask, value) for one piece of state, or None: kind "grad" (expected a bool), "autocast" (CPU
    autocast, a bool), "tracing" (torch.jit tracing, a bool) or "dtype" (the default dtype)."""
    if _DTYPE_CODES is None:
        return None
    if kind == "tracing":
        return TRACING, TRACING if expected else 0
    if kind == "grad":
        return GRAD, int(bool(expected))
    if kind == "autocast":
        return AUTOCAST, AUTOCAST if expected else 0
    if kind == "dtype" and expected in _DTYPE_CODES:
        return DTYPE, _DTYPE_CODES[expected] << 8
    return None


def bits_term(bits, bind):
    """Generated-code text checking several pieces of state in one native call."""
    return f"{bind(state_is)}({bits[0]}, {bits[1]})"
