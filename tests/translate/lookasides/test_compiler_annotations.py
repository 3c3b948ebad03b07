"""Differential tests: annotations libraries write for torch.compile, honoured without running dynamo.

`torch.compiler.disable` (and torch._dynamo.disable) was traced into torch's wrapper (its eval-frame
switches broke the graph three times more); now the call is one break and the callee runs as plain
Python, as torch.compile does (2 graphs / 1 break). allow_in_graph, assume_constant_result and
is_compiling keep working in one graph."""
import torch

from tests.differential import check, randn

CALLS = []


@torch.compiler.disable
def host_logging(x):
    print("host-side", tuple(x.shape))
    CALLS.append(len(CALLS))
    return x + 1


def helper_calls(x):
    return host_logging(x) * 2


@torch.compiler.disable(recursive=False)
def not_recursive(x):
    print("not recursive")
    return helper_calls(x)


def around_disabled(x):
    y = torch.relu(x)
    return host_logging(y).sin()


def around_not_recursive(x):
    return not_recursive(x.cos()).exp()


def test_disabled_call_is_one_break_and_runs_as_python():
    check(around_disabled, randn(2, 3), graphs=2, breaks=1)


def test_disabled_not_recursive_runs_as_python():
    check(around_not_recursive, randn(2, 3), graphs=2, breaks=1)


def scaled(x):
    return x * 2 + 1


torch.compiler.allow_in_graph(scaled)


@torch.compiler.assume_constant_result
def table_size():
    return 2


def annotated(x):
    y = scaled(x)
    if torch.compiler.is_compiling():
        y = y + 0
    return y[:, :table_size()]


def test_allow_in_graph_assume_constant_and_is_compiling():
    check(annotated, randn(3, 4), graphs=1, breaks=0)
