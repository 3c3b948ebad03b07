"""Differential test: translating a call to a builtin bound method must not compare its owner with ==.

A bound builtin method's __self__ can be any object: a list subclass or a tensor subclass whose __eq__
(or __torch_function__) is user code with effects. Deciding how to translate the call (e.g. "is this a
classmethod of int/float/str?") must look at the owner by identity, never run its __eq__; the
compiled call reads how many times __eq__ ran, which eager leaves at 0."""
from tests.differential import check, randn

EQ_CALLS = []


class NoisyList(list):
    def __eq__(self, other):
        EQ_CALLS.append(type(other).__name__)
        return False

    __hash__ = object.__hash__


def count_on_noisy_list(x, items):
    n = items.count(1)
    return x * n, len(EQ_CALLS)


def test_list_subclass_method_owner_not_compared():
    EQ_CALLS.clear()
    check(count_on_noisy_list, randn(3, seed=1), NoisyList([1, 1, 2]))
