"""Snapshot, compare and restore the global torch/Python state a program can set.

Why this exists: two questions need the same list of global state.

* Did framejit change it? Converting a frame runs framejit's own code (fake tensor propagation,
  backend compilers) inside the user's process. If that code flips grad mode, consumes random numbers
  or changes matmul precision, the user's program silently changes behaviour. The converter
  (observe.py) takes a snapshot before every conversion, checks it afterwards and restores it
  (reporting a framejit bug) if it changed. Translation never runs the program's own state changes
  (translate/state_calls.py makes them graph breaks), so whatever changed there is framejit's doing.
* Does a torch call change it? A torch callable folded to a constant at translation is watched with a
  snapshot (translate/state_calls.py): if it changed anything, it was a setter, and runs at run time.

    before = global_state_snapshot()
    convert(...)
    changed = check_global_state(before)   # [] when nothing changed, else one line per change
    restore_global_state(before)

Comparisons are cheap: a few flag reads, random.getstate() tuple equality and one torch.equal on the
~5 KB CPU generator state.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass
from typing import Any, Iterator

import torch
import torch._tensor_str

_PRINT_OPTION_NAMES = ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")


def _global_default_device():
    """The device set by torch.set_default_device (None: not set), not a `with torch.device(...)`."""
    context = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)
    return None if context is None else context.device


def _print_options():
    return tuple(getattr(torch._tensor_str.PRINT_OPTS, name) for name in _PRINT_OPTION_NAMES)


def _set_print_options(values, _state):
    torch.set_printoptions(**dict(zip(_PRINT_OPTION_NAMES, values)))


def _set_deterministic(mode, state):
    torch.use_deterministic_algorithms(mode, warn_only=state["deterministic algorithms warn_only"])


def _set_backend_flag(module, name):
    def set_flag(value, _state):
        setattr(module, name, value)
    return set_flag


def _backend_flag(module, name):
    return (f"{module.__name__.removeprefix('torch.backends.')}.{name}", lambda: bool(getattr(module, name)),
            _set_backend_flag(module, name))


# (name in reports, read(), set(value, all values by name) or None when Python cannot set it back)
STATE = (
    ("grad mode", torch.is_grad_enabled, lambda v, _s: torch._C._set_grad_enabled(v)),
    ("inference mode", torch.is_inference_mode_enabled, None),
    ("deterministic algorithms", torch.are_deterministic_algorithms_enabled, _set_deterministic),
    ("deterministic algorithms warn_only", torch.is_deterministic_algorithms_warn_only_enabled,
     lambda v, s: _set_deterministic(s["deterministic algorithms"], s)),
    # before the TF32 flags: setting the precision sets them too
    ("float32 matmul precision", torch.get_float32_matmul_precision,
     lambda v, _s: torch.set_float32_matmul_precision(v)),
    _backend_flag(torch.backends.cudnn, "deterministic"),
    _backend_flag(torch.backends.cudnn, "benchmark"),
    _backend_flag(torch.backends.cudnn, "enabled"),
    _backend_flag(torch.backends.cudnn, "allow_tf32"),
    _backend_flag(torch.backends.mkldnn, "enabled"),
    ("cuda.matmul.allow_tf32", lambda: bool(torch.backends.cuda.matmul.allow_tf32),
     _set_backend_flag(torch.backends.cuda.matmul, "allow_tf32")),
    ("default dtype", torch.get_default_dtype, lambda v, _s: torch.set_default_dtype(v)),
    ("default device", _global_default_device, lambda v, _s: torch.set_default_device(v)),
    ("number of threads", torch.get_num_threads, lambda v, _s: torch.set_num_threads(v)),
    ("print options", _print_options, _set_print_options),
    ("anomaly detection", lambda: (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
     lambda v, _s: torch.set_anomaly_enabled(*v)),
    ("warn always", torch.is_warn_always_enabled, lambda v, _s: torch.set_warn_always(v)),
)


@dataclass(frozen=True, eq=False)
class GlobalStateSnapshot:
    """The global state at one moment (compare with `check_global_state`)."""

    values: dict[str, Any]
    python_rng_state: Any
    torch_rng_state: torch.Tensor

    def flags(self) -> dict[str, Any]:
        """The flag-like state (everything but the RNG states), by name."""
        return self.values


class Unreadable(str):
    """A state whose reader raised (torch refuses to report the matmul precision once the legacy and
    the new TF32 APIs were mixed): compared by the error's text, never written back."""


def _read(read):
    try:
        return read()
    except Exception as e:
        return Unreadable(f"unreadable ({type(e).__name__})")


def global_state_snapshot() -> GlobalStateSnapshot:
    return GlobalStateSnapshot(values={name: _read(read) for name, read, _ in STATE},
                               python_rng_state=random.getstate(), torch_rng_state=torch.get_rng_state())


def check_global_state(before: GlobalStateSnapshot) -> list[str]:
    """What changed since `before`, one readable line per change (empty list: nothing changed)."""
    now = global_state_snapshot()
    changes = [f"{name} changed: {old!r} -> {now.values[name]!r}"
               for name, old in before.values.items() if old != now.values[name]]
    if before.python_rng_state != now.python_rng_state:
        changes.append("Python random module state changed (random numbers were drawn or the seed was set)")
    if not torch.equal(before.torch_rng_state, now.torch_rng_state):
        changes.append("torch CPU RNG state changed (random numbers were drawn or the seed was set)")
    return changes


def restore_global_state(before: GlobalStateSnapshot) -> None:
    """Put back every part of `before` that changed and can be set from Python.

    Inference mode is entered and left only through its context manager, so a conversion that left
    it on is reported by `check_global_state` but cannot be switched off here.
    """
    for name, read, write in STATE:
        old = before.values[name]
        if write is not None and not isinstance(old, Unreadable) and _read(read) != old:
            write(old, before.values)
    random.setstate(before.python_rng_state)
    torch.set_rng_state(before.torch_rng_state)


# ---------------------------------------------------------------------------------------------
# The state a translation reads (recorded with a conversion, put back to replay it)


def translation_state() -> dict[str, Any]:
    """The global torch state that can change how a frame translates (grad mode decides which graphs
    resume functions inside a no_grad block build, autocast and the default dtype change op metadata),
    as plain values an execution record keeps."""
    return {
        "grad_enabled": torch.is_grad_enabled(),
        "inference_mode": torch.is_inference_mode_enabled(),
        "autocast_cpu_enabled": torch.is_autocast_enabled("cpu"),
        "autocast_cpu_dtype": torch.get_autocast_dtype("cpu"),
        "autocast_cache_enabled": torch.is_autocast_cache_enabled(),
        "default_dtype": torch.get_default_dtype(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "deterministic_warn_only": torch.is_deterministic_algorithms_warn_only_enabled(),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }


@contextlib.contextmanager
def applied_translation_state(state: dict[str, Any]) -> Iterator[None]:
    """Run the body under `state` (from translation_state(); missing keys stay as they are), then put
    back what was there before."""
    before = translation_state()
    wanted = {**before, **{k: v for k, v in state.items() if k in before}}
    with contextlib.ExitStack() as stack:
        if wanted["inference_mode"] != before["inference_mode"]:
            stack.enter_context(torch.inference_mode(wanted["inference_mode"]))
        stack.callback(_set_translation_state, before)
        _set_translation_state(wanted)
        yield


def _set_translation_state(state: dict[str, Any]) -> None:
    torch.set_grad_enabled(state["grad_enabled"])
    torch.set_autocast_enabled("cpu", state["autocast_cpu_enabled"])
    torch.set_autocast_dtype("cpu", state["autocast_cpu_dtype"])
    torch.set_autocast_cache_enabled(state["autocast_cache_enabled"])
    torch.set_default_dtype(state["default_dtype"])
    torch.use_deterministic_algorithms(state["deterministic_algorithms"], warn_only=state["deterministic_warn_only"])
    torch.set_float32_matmul_precision(state["float32_matmul_precision"])
