"""Constants that are not equal to themselves: NaN floats and complexes, Decimal('NaN'), tuples of them.

Why this exists: a constant guard checks `type(v) is T and v == <expected>`; for `float('nan')` (a
default, a global, an item of an argument tuple) that is False on every call, so the function
recompiled on every call until its recompile limit sent it to plain Python. Such a constant is
checked with `same_constant` instead: the same type and equal, NaN matching NaN, item by item in a
tuple or frozenset. Only those guards pay for the call; every other constant keeps the inline `==`.
"""


def self_equal(x):
    """Does `x == x` hold for this constant all the way down (no NaN anywhere in it)?"""
    if type(x) in (tuple, frozenset):
        return all(self_equal(i) for i in x)
    try:
        return bool(x == x)
    except Exception:            # Decimal('sNaN') raises on comparison
        return False


def _nan(x):
    try:
        return bool(x != x)
    except Exception:
        return True


def same_constant(actual, expected):
    """actual equals expected as a constant guard means it, with NaN matching NaN (and sNaN sNaN)."""
    if type(actual) is not type(expected):
        return False
    if type(expected) is tuple:
        return len(actual) == len(expected) and all(same_constant(a, e) for a, e in zip(actual, expected))
    if type(expected) is frozenset:
        return self_equal(expected) and actual == expected or \
            len(actual) == len(expected) and sorted(map(repr, actual)) == sorted(map(repr, expected))
    if _nan(expected):
        return _nan(actual) and repr(actual) == repr(expected)
    return actual == expected
