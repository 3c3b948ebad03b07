"""A sequence value made real (values/protocol.py's as_python: str(), repr(), format, a container
printed) keeps its kind: a torch.Size (a symbolic shape is a SeqValue of kind torch.Size under dynamic
shapes) stays a torch.Size, a named tuple that named tuple. Before the fix both became plain tuples:
str(x.shape) gave '(4, 3)' once the size was dynamic, str(P(1, 2)) gave '(1, 2)' always."""
import collections
import typing

import pytest
import torch

from tests.differential import check_calls

P = collections.namedtuple("P", "a b")


class Q(typing.NamedTuple):
    a: int
    b: int = 2


def shape_as_text(x):
    return str(x.shape), repr(x.shape), f"{x.shape}", "%s" % (x.shape,), str(x.size()), \
        str([x.shape, x.size(1)]), str({"s": x.shape})


def named_tuple_as_text(x):
    p, q = P(1, 2), Q(3)
    return str(p), repr(q), f"{p}", str([p, q]), "{}".format(q), x + p.a


@pytest.mark.parametrize("dynamic", [None, True, False])
@pytest.mark.parametrize("fn", [shape_as_text, named_tuple_as_text], ids=lambda f: f.__name__)
def test_sequence_made_real_keeps_its_kind(fn, dynamic):
    calls = [(torch.randn(b, 3, generator=torch.Generator().manual_seed(b)),) for b in (2, 4, 3, 5)]
    compiled, _ = check_calls(fn, calls, dynamic=dynamic)
    assert compiled._framejit_state.eager_reason is None
