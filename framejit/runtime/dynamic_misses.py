"""Automatic dynamic: what a miss teaches the shape memory (framejit/shapes/memory.py).

When an entry's guard fails because an input tensor's size changed (same rank) or a Python int changed,
the dimension (the int) is remembered by its source name, and the conversion the miss starts makes it
symbolic. The recompile reason then ends in ": now dynamic" ("x.shape[1] changed 16 -> 17: now dynamic").
"""
import torch


def learn_dynamic(memory, guard, env):
    """Teach `memory` from failing `guard` evaluated over the call's arguments `env`; True if it learned."""
    kind = guard.kind.name
    if kind not in ("TENSOR_MATCH", "DYN_TENSOR_MATCH", "CONST_MATCH") or guard.source is None:
        return False
    try:
        actual = eval(guard.source.expr(), env)
    except Exception:
        return False
    name = guard.source.name()
    if kind == "CONST_MATCH":
        expected = guard.expected
        if type(expected) in (int, float) and type(actual) is type(expected) and actual != expected:
            new = name not in memory.numbers
            memory.note_number(name)
            return new
        return False
    if not isinstance(actual, torch.Tensor) or isinstance(actual, torch.nn.Parameter):
        return False
    m = guard.expected
    if type(actual) is not m.type or actual.dtype != m.dtype or actual.device != m.device:
        return False
    before = tuple(n if n is not None else actual.shape[i] for i, n in enumerate(m.shape)) \
        if len(m.shape) == actual.dim() else m.shape
    known = set(memory.dims_of(name))
    changed = memory.note_sizes(name, before, tuple(actual.shape))
    return bool(set(changed) - known)
