"""The kinds about process state rather than a source: GRAD_MODE, STATE_MATCH (the value a torch state
query returned: the default dtype, CPU autocast, the default device...) and NATIVE_STATE, several of
those read by one native call (guard_set.fuse_state_guards, guards/native_state.py).
"""
import torch

from .guard_kind import FusedKind, GuardKind, register


class GradMode(GuardKind):
    name = "GRAD_MODE"

    def describe(self, g):
        return f"torch.is_grad_enabled() is {g.expected}"

    def render(self, g, e, bind):
        return f"__fj_grad_enabled() is {g.expected}"

    def explain_miss(self, g, env):
        actual = torch.is_grad_enabled()
        return None if actual is g.expected else f"grad mode changed {g.expected} -> {actual}"


GRAD_MODE = register(GradMode)


class StateMatch(GuardKind):
    name = "STATE_MATCH"

    def key(self, source, expected):
        return self, expected[0]         # one guard per state query

    def describe(self, g):
        fn, value = g.expected
        return f"{fn.__module__.split('.')[0]}.{fn.__name__}() == {value!r}"

    def render(self, g, e, bind):
        fn, value = g.expected
        call = f"{bind(fn)}()"
        if fn.__name__ == "is_cpu_autocast_enabled":       # skip the Python wrapper on the fast path
            call = f"{bind(torch.is_autocast_enabled)}('cpu')"
        if fn.__name__ == "default_device" and value == torch.device("cpu"):
            # no torch function mode active (one C call) already means the CPU
            return f"(not {bind(torch._C._len_torch_function_stack)}() or {call} == {bind(value)})"
        return f"{call} is {value!r}" if isinstance(value, bool) else f"{call} == {bind(value)}"

    def explain_miss(self, g, env):
        fn, value = g.expected
        now = fn()
        return None if now == value else f"{fn.__name__}() changed {value!r} -> {now!r}"


STATE_MATCH = register(StateMatch)


class NativeState(FusedKind):
    name = "NATIVE_STATE"

    def render(self, g, e, bind):
        from ..native_state import bits_term
        return bits_term(g.expected[0], bind)


NATIVE_STATE = register(NativeState)
