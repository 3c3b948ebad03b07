"""Differential tests: a transformers ModelOutput from outside the frame (an argument, as `generate()`
passes `encoder_outputs`) is read like one made in the frame (translate/values/dicts/model_outputs.py).

It is matched by its class and keys, never by identity (each call brings a new one), and `.keys()`,
`.items()`, `.values()`, `to_tuple()`, `out[k]`, `out[i]`, `len`, `in`, `.get` are answered in the graph.
Writing to it (`out[k] = v`, `out.k = v`) runs as plain Python at a break, so the caller's object changes
exactly as eagerly; on a ModelOutput made in the frame, item assignment stays in the graph.
"""
import pytest
import torch

from tests.differential import CASE_FIELDS, case, randn, run_case

transformers = pytest.importorskip("transformers")
from transformers.modeling_outputs import BaseModelOutput, BaseModelOutputWithPooling  # noqa: E402

x3 = randn(3, seed=1)
ONE = dict(graphs=1, breaks=0)


def _out():
    return BaseModelOutputWithPooling(last_hidden_state=randn(3, seed=2), pooler_output=randn(3, seed=3))


def reads(x, out):
    keys = list(out.keys())
    total = sum(v.sum() for v in out.values())
    for k, v in out.items():
        x = x + v * len(k)
    a, b = out.to_tuple()
    return x + total + a + b + out["pooler_output"] + out[0] + len(out) + ("pooler_output" in out), keys, \
        out.get("hidden_states"), out.last_hidden_state


def returned_as_is(x, out):
    return out, x + out.last_hidden_state


def item_assignment_on_an_input(x, out):
    out["hidden_states"] = (x,)
    return out.hidden_states[0] + out.last_hidden_state


def item_assignment_in_the_frame(x):
    out = BaseModelOutput(last_hidden_state=x * 2)
    out["hidden_states"] = (x + 1,)
    out["attentions"] = (x,)
    return list(out.keys()), out.to_tuple(), out


@pytest.mark.parametrize(CASE_FIELDS, [
    case(reads, x3, _out(), **ONE),
    case(returned_as_is, x3, _out(), **ONE),
    case(item_assignment_on_an_input, x3, _out()),
    case(item_assignment_in_the_frame, x3, **ONE),
])
def test_model_outputs(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)
