"""Differential tests: objects made anew on every access or call are guarded by what makes them, never
by identity (translate/guards/identity.py).

A bound C method (`buf.append`, `od.keys`, `(1).__add__`, `dict.fromkeys`) is a new object each time the
attribute is read; a keys view, a slice, a ModelOutput a callee returns are new on every call. A guard on
their identity misses on every call (transformers' T5/BART/Whisper with the cache on recompiled on each
call: "<ModelOutput>.keys is a different object now"). Each case here runs twice on fresh copies and
must hit the cache on the second call.
"""
import copy

import pytest
import torch

import framejit

from tests.differential import CASE_FIELDS, case, randn, run_case

x3 = randn(3, seed=1)


class Sink:
    """A plain object holding state the frame takes C methods of."""

    def __init__(self):
        self.buf = [1, 2]
        self.names = "a b c"


def builtin_method_across_a_break(x, sink):
    push = sink.buf.append                    # builtin_function_or_method bound to a list
    y = x * 2                                 # a graph before the break, one after it: a conversion
    y.tolist()                                # that misses compiles a graph the harness counts
    push(3)
    return y + len(sink.buf)


def method_wrapper_across_a_break(x, sink):
    size = sink.buf.__len__                   # method-wrapper
    y = x * 2
    y.tolist()
    return y * size()


def class_bound_builtin_across_a_break(x):
    make = dict.fromkeys                      # a C classmethod bound to dict: new on every access
    y = x * 2
    y.tolist()
    return y + len(make("ab"))


def str_method_across_a_break(x, sink):
    names = sink.names.split                  # bound to a str
    y = x * 2
    y.tolist()
    return y + len(names())


def _keys_of_a_new_dict(x):
    x.tolist()                                # a graph break inside: the view is made for real
    return {"a": 1, "b": 2}.keys()


def keys_view_across_a_break(x):
    y = x * 2
    view = _keys_of_a_new_dict(y)
    return y + len(view)


def _slice_made_for_real(x, n):
    x.tolist()
    return slice(0, n)


def slice_across_a_break(x):
    y = x * 2
    s = _slice_made_for_real(y, 2)
    return y[s] * 2


def _model_output_of(x):
    from transformers.modeling_outputs import BaseModelOutput
    x.tolist()                                # made for real: on the resume function's stack
    return BaseModelOutput(last_hidden_state=x * 3)


def model_output_keys_across_a_break(x):
    """T5's shape: the encoder's output comes back from a call that broke, and its keys() is read."""
    y = x * 2
    out = _model_output_of(y)
    return y + len(out.keys()) + out.last_hidden_state


@pytest.mark.parametrize(CASE_FIELDS, [
    case(model_output_keys_across_a_break, x3),
    case(builtin_method_across_a_break, x3, Sink()),
    case(method_wrapper_across_a_break, x3, Sink()),
    case(class_bound_builtin_across_a_break, x3),
    case(str_method_across_a_break, x3, Sink()),
    case(keys_view_across_a_break, x3),
    case(slice_across_a_break, x3),
])
def test_fresh_objects_hit_the_cache(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)
    compiled = framejit.compile(fn)          # no conversion at all on the second call (resume functions too)
    compiled(*copy.deepcopy(args))
    before = len(framejit.metrics())
    compiled(*copy.deepcopy(args))
    assert [m.recompile_reason for m in framejit.metrics()[before:]] == []
