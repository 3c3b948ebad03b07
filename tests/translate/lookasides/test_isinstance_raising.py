"""isinstance() whose check itself raises (a TypedDict, a subscripted generic) inside the frame.

Why this exists: the isinstance lookaside answered by calling the real check at translation, and a
TypeError from it escaped as a framejit failure (the whole frame then ran as plain Python);
huggingface_hub's strict-dataclass validators do exactly this, inside `try/except TypeError`, for
transformers configs with TypedDict fields (Phi-3's rope_parameters). The call must raise in the
program, where its handler catches it, as eagerly.
"""
import typing

import framejit
from tests.differential import check, randn


def no_framejit_failure(fn, *args):
    """The frame is converted (graphs around the raising call), not given up as a framejit failure."""
    framejit.reset()
    report = framejit.explain(fn)(*args)
    assert not any("failed to convert" in r for r in report.eager_reasons), report.eager_reasons


class Rope(typing.TypedDict):
    rope_type: str


def checked(x, value):
    try:
        ok = isinstance(value, Rope)
    except TypeError:
        ok = None
    return x * (3 if ok is None else 2)


LIST_OF_INT = list[int]


def checked_generic(x, value):
    try:
        return x + isinstance(value, LIST_OF_INT)
    except TypeError as exc:
        return x - len(str(exc))


def test_isinstance_raising_typeerror_is_raised_in_the_program():
    check(checked, randn(3), {"rope_type": "default"})
    no_framejit_failure(checked, randn(3), {"rope_type": "default"})


def test_isinstance_of_subscripted_generic_raises_alike():
    x = randn(3)                      # (check() cannot snapshot a global holding a generic alias)
    expected = checked_generic(x, [1, 2])
    no_framejit_failure(checked_generic, x, [1, 2])
    assert (framejit.compile(checked_generic)(x, [1, 2]) == expected).all()
