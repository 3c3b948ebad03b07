"""Differential tests: torch's symbolic-shape helpers answered at translation
(translate/lookasides/symbolic_helpers.py).

Library code written for torch.compile asks `guard_or_true(n > 1)`, `statically_known_true(...)`,
`sym_eq(shape, other)`, `is_concrete_int(n)`... of sizes; each was a graph break (torch.fx is never
inlined). Now each is answered as eagerly on the plain number, on static sizes and on dynamic ones (one graph
for every size, the answer guarded where it depends on a size)."""
import torch
from torch.fx.experimental.symbolic_shapes import (expect_true, guard_bool, guard_int, guard_or_false, guard_or_true,
                                                   guard_size_oblivious, is_concrete_int, statically_known_false,
                                                   statically_known_true, sym_and, sym_eq, sym_or)

from tests.differential import check, check_calls, randn


def library_code(x):
    b, n = x.shape
    if guard_or_true(b > 1) and not guard_or_false(n == 0):
        x = x * 2
    if guard_size_oblivious(b != 1) and statically_known_true(n == n) and not statically_known_false(n >= 0):
        x = x + 1
    if guard_bool(sym_and(b > 0, n > 0)) and sym_or(b > 100, n > 1) and expect_true(n > 0):
        x = x - 3
    if sym_eq(x.shape, (b, n)) and is_concrete_int(3):
        x = x.reshape(b * n)
    return x, is_concrete_int(b)


def test_guard_int_specializes():
    def f(x):
        return x.reshape(guard_int(x.shape[0]) * x.shape[1]) * guard_int(2)
    check(f, randn(3, 4), graphs=1, breaks=0)
    calls = [(randn(s, 4, seed=s),) for s in (3, 5, 3)]
    _, counter = check_calls(f, calls, dynamic=True)
    assert counter.frame_count == 2      # guard_int pins the size, as int() does


def test_static_sizes_one_graph():
    check(library_code, randn(3, 4), graphs=1, breaks=0)


def test_dynamic_sizes_one_graph_for_every_size():
    calls = [(randn(s, t, seed=s),) for s, t in ((3, 4), (5, 7), (6, 2))]
    _, counter = check_calls(library_code, calls, dynamic=True)
    assert counter.frame_count == 1


def branchy(x):
    if guard_or_false(x.shape[0] > 4):
        return x.sum(0)
    return x * 2


def test_dynamic_answer_is_guarded():
    """The branch a size decides is guarded: sizes on the other side get their own graph, with eager's result."""
    calls = [(randn(s, 3, seed=s),) for s in (6, 7, 2, 4)]
    _, counter = check_calls(branchy, calls, dynamic=True)
    assert counter.frame_count == 2


class OptionalSqueeze(torch.nn.Module):
    """A module in the style of torch.nn internals: a size test through guard_or_false."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if guard_or_false(y.shape[0] == 1):
            y = y.squeeze(0)
        return y


def test_module_one_graph():
    torch.manual_seed(0)
    check(OptionalSqueeze(), randn(1, 4), graphs=1, breaks=0, grads=True)
