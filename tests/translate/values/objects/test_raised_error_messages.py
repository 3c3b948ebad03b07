"""The message of a Python error that a constant call or operation raised inside the frame.

Why this exists: when a builtin call on known values raises (isinstance of a TypedDict, int("x"),
a missing key, an index out of range, math.sqrt(-1)), framejit learns the real exception at capture
time and hands the program an exception value -- but it kept only the type, so `str(e)` or `e.args`
in the handler was a graph break. huggingface_hub's strict-dataclass validators do exactly this
(`errors.append(str(e))` for each Union member that fails), and transformers runs them on the first
call of Phi-3's longrope rotary embedding in train mode: one whole model ran in 9 graphs. The real
exception's arguments are constants: the program must see them, in one graph.
"""
import dataclasses
import math
import typing

import pytest
import torch

from tests.differential import CASE_FIELDS, case, randn, run_case

ONE = dict(fullgraph=True, graphs=1)
x3 = randn(3, seed=1)


class Rope(typing.TypedDict):
    rope_type: str


def isinstance_typeerror_message(x, value):
    try:
        isinstance(value, Rope)
    except TypeError as e:
        return x * len(str(e)), str(e)
    return x, ""


def int_parse_valueerror_args(x, text):
    try:
        return x + int(text), ()
    except ValueError as e:
        return x - 1, e.args


def missing_key_message(x, table):
    try:
        return x * table["missing"], ""
    except KeyError as e:
        return x + 1, str(e) + repr(e.args)


def index_error_message(x, items):
    try:
        return x * items[7], ""
    except IndexError as e:
        return x + 2, f"caught: {e}"


def math_domain_error(x):
    try:
        return x * math.sqrt(-1.0), ""
    except ValueError as e:
        return x + 1, str(e).upper()


def collect_errors_like_a_union_validator(x, value):
    """huggingface_hub.dataclasses._validate_union's shape: every failing member's message is kept."""
    errors = []
    for t in (Rope, int, float):
        try:
            if isinstance(value, t):
                return x, "ok"
            raise TypeError(f"expected {t.__name__}")
        except TypeError as e:
            errors.append(str(e))
    return x * len(errors), "; ".join(errors)


def str_index_valueerror(x, text):
    try:
        return x * text.index("z"), ""
    except ValueError as e:
        return x + 1, str(e)


CASES = [
    case(isinstance_typeerror_message, x3, {"rope_type": "default"}, **ONE),
    case(int_parse_valueerror_args, x3, "twelve", **ONE),
    case(missing_key_message, x3, {"present": 2.0}, **ONE),
    case(index_error_message, x3, [1.0, 2.0], **ONE),
    case(math_domain_error, x3, **ONE),
    case(collect_errors_like_a_union_validator, x3, "text", **ONE),
    case(str_index_valueerror, x3, "abc", **ONE),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


@dataclasses.dataclass
class Holder:
    value: object


def test_strict_dataclass_union_validation_in_one_graph():
    """A huggingface_hub strict dataclass whose Union field holds a TypedDict: validated in the frame."""
    hub = pytest.importorskip("huggingface_hub.dataclasses")

    @hub.strict
    @dataclasses.dataclass
    class Settings:
        rope: typing.Optional[typing.Union[Rope, dict]] = None

    def build_and_scale(x, rope):
        settings = Settings(rope=rope)
        return x * (2 if settings.rope is not None else 3)

    from tests.differential import check
    check(build_and_scale, x3, {"rope_type": "default"}, **ONE)
