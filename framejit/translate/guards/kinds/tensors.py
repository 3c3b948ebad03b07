"""The tensor kinds: TENSOR_MATCH (type, dtype, device, exact shape and strides, requires_grad, leaf or not,
inference or not) and DYN_TENSOR_MATCH (the same with symbolic dimensions, whose ranges and relations are the
SHAPES guard's).

Leaf-ness (`leaf_checked`) is part of both for a tensor that requires grad, once the conversion depended on it
(`GuardSet.require_leaf`): it read `x.is_leaf` (values/attrs.py), or a graph writes the input in place
(translate/guards/identity.py's guard_written_leaves: a leaf that requires grad refuses the write). A
conversion's fakes are leaves exactly when the inputs were, so an entry converted for `w * 2` answered
`is_leaf` False for a leaf `w` of the same layout (fuzz seed 622600). Not checked otherwise: 12 identical
blocks, the first called on a leaf and the rest on non-leaves, stay one conversion. A view whose history
autograd refuses to read (graph/fake_inputs.py: a multi-output view whose base was written) has leaf None,
checked without raising.

Inference-ness is part of both: eagerly an inference tensor (made under torch.inference_mode) refuses an
in-place write outside inference mode (after the kernel wrote it), a write through a view of it, and being
saved for backward, and a conversion's fakes are inference tensors exactly when the inputs were, so an
entry built for a normal tensor must not take an inference tensor of the same layout, nor the reverse
(fuzz seed 509934).

Both render a native check first (guards/tensor_words.py: one call reading the TensorImpl) that falls
back to the plain attribute reads when it cannot tell.
"""
from dataclasses import dataclass

import torch

from .guard_kind import GuardKind, register, source_name


@dataclass(frozen=True)
class TensorMeta:
    type: type
    dtype: torch.dtype
    device: torch.device
    shape: tuple
    stride: tuple
    requires_grad: bool
    inference: bool = False
    leaf: object = True         # True/False, None: unreadable (`autograd_leaf`); True without requires_grad
    leaf_checked: bool = False  # does the check test `leaf` (GuardSet.require_leaf)?

    @staticmethod
    def of(t):
        return TensorMeta(type(t), t.dtype, t.device, tuple(t.shape), tuple(t.stride()), t.requires_grad,
                          t.is_inference(), autograd_leaf(t))


def autograd_leaf(t):
    """`t.is_leaf` for a tensor that requires grad, None when autograd refuses to read its history; True for
    a tensor that does not require grad (always a leaf)."""
    if not t.requires_grad:
        return True
    try:
        return t.is_leaf
    except RuntimeError:
        return None


@dataclass(frozen=True)
class DynamicTensorMeta:
    """What a tensor with symbolic dimensions is guarded on: `shape` holds None at each dynamic dim (its
    range and relations are the SHAPES guard's, framejit/shapes/guard_text.py); a contiguous tensor's
    strides follow from its sizes, a non-contiguous one's are SHAPES facts (`x.stride(0) == __fj_sym1`)."""
    type: type
    dtype: torch.dtype
    device: torch.device
    shape: tuple
    requires_grad: bool
    contiguous: bool = True    # False: the strides are checked by the SHAPES guard (shapes/symbols.py)
    inference: bool = False
    leaf: object = True         # as TensorMeta's
    leaf_checked: bool = False

    @staticmethod
    def of(t, dims):
        return DynamicTensorMeta(type(t), t.dtype, t.device,
                                 tuple(None if d in dims else n for d, n in enumerate(t.shape)), t.requires_grad,
                                 t.is_contiguous(), t.is_inference(), autograd_leaf(t))


def _contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def _stride_check(v, m, bind):
    """Exact strides, as cheaply as they can be checked once the shape matched: nothing for 0-d tensors;
    `is_contiguous()` (no tuple built) for contiguous tensors whose every dim is > 1, where contiguity
    fixes each stride exactly; `stride() == ...` otherwise (size-0/1 dims leave strides free)."""
    if not m.shape:
        return ""
    if m.stride == _contiguous_strides(m.shape) and all(d > 1 for d in m.shape):
        return f" and {v}.is_contiguous()"
    return f" and {v}.stride() == {bind(m.stride)}"


def _native_tensor_check(meta):
    from ..tensor_words import input_check
    return input_check(meta)


def _type_words(m):
    return f"{m.type.__name__} {str(m.dtype).replace('torch.', '')} {m.device}"


def _inference_words(m):
    leaf = "" if not (m.requires_grad and m.leaf_checked) else \
        " leaf" if m.leaf else " non-leaf" if m.leaf is False else " history-unreadable"
    return leaf + (" inference" if m.inference else "")


def _inference_miss(name, m, actual):
    if actual.is_inference() != m.inference:
        return f"{name}.is_inference() changed {m.inference} -> {not m.inference}"
    leaf = autograd_leaf(actual)
    if m.leaf_checked and leaf != m.leaf:
        return f"{name}.is_leaf changed {_leaf_words(m.leaf)} -> {_leaf_words(leaf)}"
    return None


def _leaf_words(leaf):
    return "unreadable" if leaf is None else str(leaf)


def _leaf_check(v, m, bind):
    """The leaf-ness test of a tensor that requires grad (nothing for one that does not: a leaf)."""
    if not (m.requires_grad and m.leaf_checked):
        return ""
    if m.leaf is None:
        return f" and {bind(autograd_leaf)}({v}) is None"
    return f" and {v}.is_leaf is {m.leaf}"


class TensorMatch(GuardKind):
    name = "TENSOR_MATCH"
    check_steps = 6

    def describe(self, g):
        m = g.expected
        return (f"{source_name(g)}: Tensor {_type_words(m)} shape={list(m.shape)} stride={list(m.stride)} "
                f"requires_grad={m.requires_grad}{_inference_words(m)}")

    def render(self, g, e, bind):
        m = g.expected
        v = e if e.isidentifier() else "__fj_t"
        native = _native_tensor_check(m)
        if native is not None:               # one native call; the getters only if it can't tell
            first = f"{bind(native[0])}({v if v == e else f'(__fj_t := {e})'}, {bind(native[1])})"
            head = f"type({v}) is {bind(m.type)}"
        else:
            head = f"type({v}) is {bind(m.type)}" if v == e else f"type(__fj_t := {e}) is {bind(m.type)}"
        device = f"{v}.is_cpu" if m.device.type == "cpu" else f"{v}.device == {bind(m.device)}"
        plain = (f"{head} and {v}.dtype is {bind(m.dtype)} and {device}"
                 f" and {v}.shape == {bind(torch.Size(m.shape))}{_stride_check(v, m, bind)}"
                 f" and {v}.requires_grad is {m.requires_grad}{_leaf_check(v, m, bind)}"
                 f" and {v}.is_inference() is {m.inference}")
        return plain if native is None else f"({first} or ({plain}))"

    def miss(self, g, name, actual):
        if not isinstance(actual, torch.Tensor):
            return f"{name} is no longer a tensor (got {type(actual).__name__})"
        now, was = TensorMeta.of(actual), g.expected
        for f in ("type", "dtype", "device", "shape", "stride", "requires_grad"):
            a, b = getattr(was, f), getattr(now, f)
            if a != b:
                a, b = (a.__name__, b.__name__) if f == "type" else (a, b)
                if f == "shape" and len(a) == len(b):
                    for i, (p, q) in enumerate(zip(a, b)):
                        if p != q:
                            return f"{name}.shape[{i}] changed {p} -> {q}"
                return f"{name}.{f} changed {a} -> {b}"
        return _inference_miss(name, was, actual)

    def module_covered(self, plan, g):
        return isinstance(plan.tensors.get(g.source), torch.nn.Parameter)   # a buffer keeps its checks

    def version_deps(self, vplan, g):
        return vplan.buffer_deps(g.source)


TENSOR_MATCH = register(TensorMatch)


class DynTensorMatch(GuardKind):
    name = "DYN_TENSOR_MATCH"

    def describe(self, g):
        m = g.expected
        shape = ", ".join("*" if n is None else str(n) for n in m.shape)
        layout = "contiguous" if m.contiguous else "strides in the shape guards"
        return (f"{source_name(g)}: Tensor {_type_words(m)} shape=[{shape}] (* dynamic) {layout} "
                f"requires_grad={m.requires_grad}{_inference_words(m)}")

    def render(self, g, e, bind):
        m = g.expected
        v = e if e.isidentifier() else "__fj_t"
        head = f"type({v}) is {bind(m.type)}" if v == e else f"type(__fj_t := {e}) is {bind(m.type)}"
        device = f"{v}.is_cpu" if m.device.type == "cpu" else f"{v}.device == {bind(m.device)}"
        sizes = "".join(f" and {v}.size({i}) == {n}" for i, n in enumerate(m.shape) if n is not None)
        layout = f" and {v}.is_contiguous()" if m.contiguous else ""     # else: strides in SHAPES
        plain = (f"{head} and {v}.dtype is {bind(m.dtype)} and {device} and {v}.dim() == {len(m.shape)}{sizes}"
                 f"{layout} and {v}.requires_grad is {m.requires_grad}{_leaf_check(v, m, bind)}"
                 f" and {v}.is_inference() is {m.inference}")
        from ..tensor_words import dynamic_input_check
        native = dynamic_input_check(m)
        if native is None:
            return plain
        # one native call for all but the symbolic sizes and the strides; the getters only if it can't tell
        first = f"{bind(native[0])}({v if v == e else f'(__fj_t := {e})'}, {bind(native[1])})"
        return f"(({first}{layout}) or ({plain}))"

    def miss(self, g, name, actual):
        m = g.expected
        if not isinstance(actual, torch.Tensor):
            return f"{name} is no longer a tensor (got {type(actual).__name__})"
        if type(actual) is not m.type:
            return f"{name}.type changed {m.type.__name__} -> {type(actual).__name__}"
        for f in ("dtype", "device", "requires_grad"):
            if getattr(actual, f) != getattr(m, f):
                return f"{name}.{f} changed {getattr(m, f)} -> {getattr(actual, f)}"
        if actual.dim() != len(m.shape):
            return f"{name}.dim() changed {len(m.shape)} -> {actual.dim()}"
        for i, n in enumerate(m.shape):
            if n is not None and actual.shape[i] != n:
                return f"{name}.shape[{i}] changed {n} -> {actual.shape[i]}"
        if m.contiguous and not actual.is_contiguous():
            return f"{name} is no longer contiguous (stride {tuple(actual.stride())})"
        return _inference_miss(name, m, actual)


DYN_TENSOR_MATCH = register(DynTensorMatch)
