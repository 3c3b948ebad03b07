"""Differential tests: in-place writes between overlapping memory (translate/graph/overlap.py).

Eager mode refuses a write whose destination overlaps a source partially (`w.copy_(w.t())`) or
refers to one memory location through several elements (`x.expand(3, 3).add_(1)`). Fake tensors
do not check, and a backend that functionalizes the graph (aot_eager) computed a value instead: the
compiled call must raise the same exception, with every backend. Writes that eager allows (full
overlap `w.add_(w)`, disjoint views of one storage) stay in the graph.
"""
import pytest
import torch

from tests.differential import CASE_FIELDS, case, run_case

BACKENDS = ("eager", "aot_eager")


def square():
    return torch.arange(9.).reshape(3, 3)


def copy_transpose(w):
    w.copy_(w.t())
    return w


def copy_shifted(w):
    w[1:].copy_(w[:-1])
    return w


def add_transpose(w):
    w.add_(w.t())
    return w


def mul_transpose(w):
    w.mul_(w.t())
    return w


def out_transpose(w):
    torch.add(w, 1, out=w.t())
    return w


def unary_out_transpose(w):
    torch.sin(w, out=w.t())
    return w


def write_through_transpose(w):
    w.t().copy_(w)
    return w


def item_assignment(w):
    w[1:] = w[:-1]
    return w


def augmented_assignment(w):
    w += w.t()
    return w


def index_put_row(w):
    w.index_put_((torch.tensor([0]),), w[1])
    return w


def diagonal_from_row(w):              # allowed: eager does not judge a strided destination
    w.diagonal().copy_(w[0])
    return w


def broadcast_write(x):
    x.expand(3, 3).add_(1)
    return x


def aliasing_arguments(a, b):
    a.copy_(b)
    return a


LOG = []


def side_effect_before(w):             # the append happens before the write raises
    LOG.append(len(LOG))
    w.copy_(w.t())
    return w


def full_overlap(w):                   # allowed: the same memory, element for element
    w.add_(w)
    w.mul_(w[:])
    return w * 2


def disjoint_rows(w):                  # allowed: views of one storage that do not overlap
    w[0].copy_(w[1])
    w[2].add_(w[1])
    return w * 2


def _cases():
    out = []
    for backend in BACKENDS:
        for fn in (copy_transpose, copy_shifted, add_transpose, mul_transpose, out_transpose, unary_out_transpose,
                   write_through_transpose, item_assignment, augmented_assignment, index_put_row):
            out.append(case(fn, square(), name=f"{fn.__name__}-{backend}", backend=backend))
        out.append(case(broadcast_write, torch.arange(3.), name=f"broadcast_write-{backend}", backend=backend))
        out.append(case(side_effect_before, square(), name=f"side_effect_before-{backend}", backend=backend))
        base = square()
        out.append(case(aliasing_arguments, base, base.t(), name=f"aliasing_arguments-{backend}", backend=backend))
        for fn in (full_overlap, disjoint_rows, diagonal_from_row):
            out.append(case(fn, square(), name=f"{fn.__name__}-{backend}", backend=backend, graphs=1, breaks=0))
    return out


@pytest.mark.parametrize(CASE_FIELDS, _cases())
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)
