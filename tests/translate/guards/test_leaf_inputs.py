"""A tensor input that requires grad is a leaf or not, and an entry converted for one must not take the other.

Eagerly, what a frame does with an input that requires grad can depend on whether autograd made it (a
non-leaf: `w * 2`) or the user did (a leaf): `x.is_leaf`, an in-place write (a leaf that requires grad
refuses it), `x.requires_grad_(False)` (a non-leaf refuses it), `x.retain_grad()`. A conversion folds those
from its fakes, which are leaves exactly when the inputs were. Fuzz seed 622600: a flag computed from
`.is_leaf` of a value passed across a break was False for the first call's non-leaf, and the second call's
resume function (another batch size: a dynamic fake, which was always a leaf) said True. Then the guard did
not hold leaf-ness either: an entry converted for a non-leaf answered for a leaf of the same layout.

Each case runs the function on a leaf, a non-leaf, other shapes (the dynamic-shapes entry) and again, in
both orders, under every tracing backend.
"""
import pytest
import torch

from tests.differential import check_script, outcome

BACKENDS = ["eager", "aot_eager"]


def read_is_leaf(x):
    return x.is_leaf, x * 2


def flag_through_a_break(x):
    y = x * 4
    print("break")
    return y.is_leaf, x.is_leaf, y + 1


def write_in_place(x):
    x.mul_(2)
    return x + 1


def drop_requires_grad(x):
    x.requires_grad_(False)
    return x * 3


def retain_then_use(x):
    x.retain_grad()
    return (x * x).sum()


def leaf_branch(x):
    if x.is_leaf:
        return x * 2
    return x - 1


CASES = [read_is_leaf, flag_through_a_break, write_in_place, drop_requires_grad, retain_then_use, leaf_branch]


def _make(kind, rows, i):
    w = torch.arange(rows * 3.0).reshape(rows, 3) + i
    if kind == "leaf":
        return w.requires_grad_()
    return w.requires_grad_() * 1.5          # a non-leaf that requires grad


def _script(kinds):
    def script(f):
        seen = []
        for i, (kind, rows) in enumerate(kinds):
            x = _make(kind, rows, i)
            seen.append(outcome(f, x))
            seen.append((x.detach().clone(), x.requires_grad))
        return seen
    return script


SCRIPTS = {
    "nonleaf_then_leaf": [("nonleaf", 3), ("leaf", 3), ("nonleaf", 3)],
    "leaf_then_nonleaf": [("leaf", 3), ("nonleaf", 3), ("leaf", 3)],
    "nonleaf_other_sizes": [("nonleaf", 3), ("nonleaf", 1), ("nonleaf", 5), ("leaf", 2), ("nonleaf", 4)],
    "leaf_other_sizes": [("leaf", 3), ("leaf", 1), ("leaf", 5), ("nonleaf", 2), ("leaf", 4)],
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("script", sorted(SCRIPTS))
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_leaf_and_nonleaf_inputs(fn, script, backend):
    check_script(fn, _script(SCRIPTS[script]), backend=backend)


def test_guard_says_why():
    """The recompile explanation names leaf-ness, for static and dynamic entries."""
    import dataclasses
    import types
    from framejit.translate.guards.kinds.tensors import (DYN_TENSOR_MATCH, TENSOR_MATCH, DynamicTensorMeta,
                                                         TensorMeta)
    leaf = torch.ones(2, requires_grad=True)
    nonleaf = leaf * 2
    assert (TensorMeta.of(leaf).leaf, TensorMeta.of(nonleaf).leaf, TensorMeta.of(torch.ones(2)).leaf) == \
        (True, False, True)
    static = types.SimpleNamespace(expected=dataclasses.replace(TensorMeta.of(nonleaf), leaf_checked=True))
    assert TENSOR_MATCH.miss(static, "x", leaf) == "x.is_leaf changed False -> True"
    dynamic = types.SimpleNamespace(expected=dataclasses.replace(DynamicTensorMeta.of(leaf, {0}), leaf_checked=True))
    assert DYN_TENSOR_MATCH.miss(dynamic, "x", nonleaf) == "x.is_leaf changed True -> False"
    unchecked = types.SimpleNamespace(expected=TensorMeta.of(nonleaf))     # nothing depended on it
    assert TENSOR_MATCH.miss(unchecked, "x", leaf) is None


def test_blocks_called_on_a_leaf_then_non_leaves_share_one_conversion():
    """Leaf-ness is checked only where the conversion depends on it: a block that neither reads is_leaf
    nor writes its input converts once for a leaf and a non-leaf input."""
    import framejit
    block = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Tanh())
    counter = framejit.CompileCounter()
    compiled = framejit.compile(block, backend=counter)
    x = torch.randn(2, 3, requires_grad=True)
    torch.testing.assert_close(compiled(compiled(x)), block(block(x)))
    assert counter.frame_count == 1
