"""Constants that are not equal to themselves: NaN floats and complexes, Decimal('NaN'), tuples of them.

Why this exists: a constant guard checks `type(v) is T and v == <expected>`; for `float('nan')` (a
default, a global, an item of an argument tuple) that is False on every call, so the function
recompiled on every call until its recompile limit sent it to plain Python. Such a constant is
checked with `same_constant` instead: the same type and equal, NaN matching NaN, item by item in a
tuple or frozenset. Only those guards pay for the call; every other constant keeps the inline `==`.

`same_keys` is the DICT_KEYS guard's check when a dict's keys are not all plain strings: `1`, `True`
and `1.0`, or a str-Enum member and its string, are equal keys with equal hashes, and still different
keys to the code that reads them (values/dicts/constant_keys.py).
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


def same_keys(actual, expected):
    """The keys of a dict, in order, are `expected` with the same type at every level (the DICT_KEYS
    guard's check when a key is not a plain str)."""
    return len(actual) == len(expected) and all(_same_key(a, e) for a, e in zip(actual, expected))


def _same_key(a, e):
    if type(a) is not type(e):
        return False
    if type(e) is tuple:
        return len(a) == len(e) and all(_same_key(x, y) for x, y in zip(a, e))
    if type(e) is frozenset:            # the same members, each of the same type
        if len(a) != len(e):
            return False
        by_type = {(type(x), x) for x in e}
        return all((type(x), x) in by_type for x in a)
    if type(e) is float and e != e:
        return a != a
    return a == e
