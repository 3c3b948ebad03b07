"""Diagnostics never raise, and say each cause once (issue 25, class 6).

explain(), the HTML report and recompile reasons describe objects of the user's program and of
libraries; some of those raise when looked at (torch.classes answers every attribute with a
RuntimeError, as einops' cold-process explain() met; a module whose __getattr__ raises; a broken repr).
The compiled call must still behave as eager, and the diagnostic must say what it could not show. A
break deep in nested calls is one cause: one GraphBreakWarning, naming the cause and where it was
reached from.
"""

import types
import warnings

import pytest
import torch

import framejit
from framejit.tools.report import report_html

from ..differential import compare


class RaisingModule(types.ModuleType):
    """A module whose every missing attribute, and whose repr, raise something else than AttributeError."""

    def __getattr__(self, name):
        raise RuntimeError(f"no attribute {name!r} here, and not an AttributeError either")

    def __repr__(self):
        raise RuntimeError("this module cannot be shown")


class RaisingObject:
    def __getattr__(self, name):
        raise RuntimeError(f"Tried to instantiate class '{name}'")

    def __repr__(self):
        raise RuntimeError("repr raises")


def uses(x, thing):
    if thing is not None:
        return x.sin() + 1
    return x


RAISING_THINGS = {
    "torch.classes": lambda: torch.classes,
    "a torch.classes namespace": lambda: torch.classes.framejit_test_namespace,
    "a module whose attributes raise": lambda: RaisingModule("raising_module"),
}


@pytest.mark.parametrize("name", list(RAISING_THINGS))
def test_explain_survives_objects_that_raise_when_described(name):
    thing = RAISING_THINGS[name]()
    out = framejit.explain(uses)(torch.ones(3), thing)
    assert torch.equal(out.result, uses(torch.ones(3), thing))
    text = str(out)
    assert out.graph_count == 1
    assert all(isinstance(g, str) for g in out.guards)
    assert any("could not be shown" in g for g in out.guards), out.guards
    assert "Guards:" in text


@pytest.mark.parametrize("name", list(RAISING_THINGS))
def test_the_report_survives_them(name):
    framejit.reset()
    thing = RAISING_THINGS[name]()
    compiled = framejit.compile(uses)
    compiled(torch.ones(3), thing)
    page = report_html()
    assert "<html" in page.lower() and "uses" in page


def test_a_recompile_whose_reason_cannot_be_shown_still_runs_like_eager():
    """The miss is explained inside the user's call: a raising description there made the call raise
    (torch.classes -> a namespace of it: RuntimeError from the call itself)."""
    framejit.reset()
    compiled = framejit.compile(uses)
    for thing in (torch.classes, torch.classes.framejit_test_namespace, RaisingModule("m1"), RaisingModule("m2"),
                  RaisingObject(), RaisingObject()):
        # (these objects cannot be deep-copied, so differential.check cannot take them: they are not
        # changed by the call, and the tensor is fresh for each run)
        x = torch.randn(3)
        compare(uses(x.clone(), thing), compiled(x.clone(), thing))
    out = framejit.explain(uses)(torch.ones(3), torch.classes)
    assert out.graph_count == 1


def test_a_recompile_reason_says_what_it_could_not_show():
    framejit.reset()
    compiled = framejit.compile(uses)
    compiled(torch.ones(3), torch.classes)
    compiled(torch.ones(3), torch.classes.framejit_test_namespace)
    reasons = [m.recompile_reason for m in framejit.metrics() if m.recompile_reason]
    assert reasons and "could not be shown" in reasons[-1], reasons


# --- one cause, one warning ---------------------------------------------------------------------------


def leaf(x):
    torch._dynamo.graph_break()          # a break that stays a break: the user asked for it
    return x + 1


def middle(x):
    return leaf(x) * 2


def upper(x):
    return middle(x) - 1


def outermost(x):
    return upper(x.sin()).cos()


def other_leaf(x):
    print("a second, different cause")
    return x * 3


def two_causes(x):
    return other_leaf(upper(x))


def _break_warnings(fn, *args):
    framejit.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = framejit.compile(fn)(*args)
    return out, [str(w.message) for w in caught if issubclass(w.category, framejit.GraphBreakWarning)]


def test_a_break_four_calls_deep_is_one_warning_with_its_chain():
    x = torch.randn(4)
    framejit.observe.break_warnings.WARNED._seen.clear()
    out, messages = _break_warnings(outermost, x)
    assert torch.allclose(out, outermost(x))
    assert len(messages) == 1, messages
    (message,) = messages
    assert "graph_break" in message and "in leaf" in message          # the cause and its line
    assert "reached from outermost" in message and "upper(x.sin())" in message     # where it was met


def test_distinct_causes_still_warn_once_each_and_never_again():
    x = torch.randn(4)
    framejit.observe.break_warnings.WARNED._seen.clear()
    out, messages = _break_warnings(two_causes, x)
    assert torch.allclose(out, two_causes(x))
    assert len(messages) == 2, messages
    assert sum("graph_break" in m for m in messages) == 1 and sum("print" in m for m in messages) == 1
    out, messages = _break_warnings(outermost, x)           # the same cause, reached another way
    assert messages == []
