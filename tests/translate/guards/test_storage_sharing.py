"""Input tensors that share memory only on a later call (translate/guards/identity.py's
guard_storage_sharing): a graph that writes into an input is built for the sharing it saw, so a call
where two inputs share a storage (or stop sharing one) must not reuse it.

Differential: each call's result against eager on fresh inputs of the same sharing, under aot_eager
(which reorders the write and the read when it believes them independent) and the eager backend.
"""
import pytest
import torch

import framejit


def write_then_read(a, b):
    a.add_(1)
    return b * 2


def separate():
    return torch.zeros(4), torch.zeros(4)


def one_storage():
    a = torch.zeros(4)
    return a, torch.empty(0).set_(a.untyped_storage(), 0, (4,), (1,))     # not a view: no autograd link


def view_pair():
    base = torch.zeros(8)
    return base[:4], base[:4].view(2, 2).flatten()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("order", [(separate, one_storage, separate), (one_storage, separate, one_storage),
                                   (separate, view_pair)], ids=["sep-shared-sep", "shared-sep-shared", "sep-view"])
def test_sharing_that_changes_between_calls(backend, order):
    framejit.reset()
    compiled = framejit.compile(write_then_read, backend=backend)
    for make in order:
        assert torch.equal(compiled(*make()), write_then_read(*make())), make.__name__


def test_no_guard_when_nothing_is_written():
    # only graphs that write into an input pay for the storage check
    framejit.reset()
    counter = framejit.backends.CompileCounter()
    compiled = framejit.compile(lambda a, b: a + b, backend=counter)
    compiled(*separate())
    compiled(*one_storage())
    assert counter.frame_count == 1
