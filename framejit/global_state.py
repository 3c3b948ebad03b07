"""Snapshot and compare the global torch/Python state a conversion must leave untouched.

Why this exists: converting a frame runs framejit's own code (fake tensor
propagation, backend compilers) inside the user's process. If that code flips
grad mode, consumes random numbers or changes matmul precision, the user's
program silently changes behaviour. The converter (observe.py) takes a snapshot before every
conversion, checks it afterwards and restores it (reporting a framejit bug) if it changed:

    before = global_state_snapshot()
    convert(...)
    changed = check_global_state(before)   # [] when nothing changed, else one line per change

Comparisons are cheap: a few flag reads, random.getstate() tuple equality and
one torch.equal on the ~5 KB CPU generator state.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass
from typing import Any, Iterator

import torch


@dataclass(frozen=True, eq=False)
class GlobalStateSnapshot:
    """The global state at one moment (compare with `check_global_state`)."""

    grad_enabled: bool
    inference_mode: bool
    deterministic_algorithms: bool
    deterministic_warn_only: bool
    cudnn_deterministic: bool
    cudnn_benchmark: bool
    float32_matmul_precision: str
    default_dtype: torch.dtype
    python_rng_state: Any
    torch_rng_state: torch.Tensor

    def flags(self) -> dict[str, Any]:
        """The flag-like fields (everything but the RNG states), by name."""
        return {
            "grad mode": self.grad_enabled,
            "inference mode": self.inference_mode,
            "deterministic algorithms": self.deterministic_algorithms,
            "deterministic algorithms warn_only": self.deterministic_warn_only,
            "cudnn.deterministic": self.cudnn_deterministic,
            "cudnn.benchmark": self.cudnn_benchmark,
            "float32 matmul precision": self.float32_matmul_precision,
            "default dtype": self.default_dtype,
        }


def global_state_snapshot() -> GlobalStateSnapshot:
    return GlobalStateSnapshot(
        grad_enabled=torch.is_grad_enabled(),
        inference_mode=torch.is_inference_mode_enabled(),
        deterministic_algorithms=torch.are_deterministic_algorithms_enabled(),
        deterministic_warn_only=torch.is_deterministic_algorithms_warn_only_enabled(),
        cudnn_deterministic=bool(torch.backends.cudnn.deterministic),
        cudnn_benchmark=bool(torch.backends.cudnn.benchmark),
        float32_matmul_precision=torch.get_float32_matmul_precision(),
        default_dtype=torch.get_default_dtype(),
        python_rng_state=random.getstate(),
        torch_rng_state=torch.get_rng_state(),
    )


def check_global_state(before: GlobalStateSnapshot) -> list[str]:
    """What changed since `before`, one readable line per change (empty list: nothing changed)."""
    now = global_state_snapshot()
    changes = [
        f"{name} changed: {old!r} -> {new!r}"
        for (name, old), new in zip(before.flags().items(), now.flags().values())
        if old != new
    ]
    if before.python_rng_state != now.python_rng_state:
        changes.append("Python random module state changed (random numbers were drawn or the seed was set)")
    if not torch.equal(before.torch_rng_state, now.torch_rng_state):
        changes.append("torch CPU RNG state changed (random numbers were drawn or the seed was set)")
    return changes


def restore_global_state(before: GlobalStateSnapshot) -> None:
    """Put back every part of `before` that can be set from Python.

    Inference mode is entered and left only through its context manager, so a conversion that left
    it on is reported by `check_global_state` but cannot be switched off here.
    """
    torch.set_grad_enabled(before.grad_enabled)
    torch.use_deterministic_algorithms(before.deterministic_algorithms, warn_only=before.deterministic_warn_only)
    torch.backends.cudnn.deterministic = before.cudnn_deterministic
    torch.backends.cudnn.benchmark = before.cudnn_benchmark
    torch.set_float32_matmul_precision(before.float32_matmul_precision)
    torch.set_default_dtype(before.default_dtype)
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
