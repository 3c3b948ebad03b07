"""The accuracy mode (check_accuracy=True / FRAMEJIT_CHECK_ACCURACY=1) and the minifier.

A deliberately wrong backend adds 1e-2 to the output of one kind of op: the mode must name the graph and
the first differing output, write a record, and the minifier must name exactly that op. A right backend
must draw no warning, and the mode must not change what a call returns, prints, mutates or draws.
"""
import os
import warnings

import pytest
import torch
from torch import fx

import framejit
from framejit.config import Config
from framejit.testing import AccuracyWarning, minify

from tests.differential import check


def off_by_a_bit(*targets, amount=1e-2):
    """A backend that runs the graph as is, except that each node calling one of `targets` gets `amount`
    added to its output."""
    def backend(gm, example_inputs):
        for node in list(gm.graph.nodes):
            if node.op in ("call_function", "call_method") and node.target in targets:
                with gm.graph.inserting_after(node):
                    bumped = gm.graph.call_function(torch.add, (node, amount))
                node.replace_all_uses_with(bumped, delete_user_cb=lambda user: user is not bumped)
        gm.recompile()
        return gm.forward
    return backend


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        h = self.fc1(x)
        h = torch.nn.functional.gelu(h)
        h = torch.tanh(h) * h
        return self.fc2(h).softmax(-1), h.mean()


def _accuracy_warnings(run):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run()
    return result, [w.message for w in caught if issubclass(w.category, AccuracyWarning)]


def test_a_wrong_op_is_named_with_the_graph_output_and_record(tmp_path):
    torch.manual_seed(0)
    model = MLP()
    x = torch.randn(5, 8)
    compiled = framejit.compile(model, backend=off_by_a_bit(torch.tanh), check_accuracy=True, debug_dir=tmp_path)
    _, found = _accuracy_warnings(lambda: compiled(x))
    assert len(found) == 1
    report = found[0]
    assert "MLP.forward" in report.graph and report.graph in str(report)
    assert report.difference.startswith("output[0]")      # softmax is the first output and it moved
    assert [n.target for n in report.minified.nodes] == [torch.tanh]
    assert "tanh = torch.tanh(" in str(report)
    files = sorted(os.listdir(report.record))
    assert files == ["graph.py", "inputs.pt", "minified.py", "minified_inputs.pt", "report.txt"]
    assert "torch.tanh" in (report.record / "minified.py").read_text()
    inputs = torch.load(report.record / "minified_inputs.pt", weights_only=True)
    assert len(inputs) == 1 and inputs[0].shape == (5, 16)
    assert oct(os.stat(report.record).st_mode & 0o777) == "0o700"


def test_the_check_runs_on_the_first_call_only(tmp_path):
    def f(x):
        return torch.sin(x) + 1
    compiled = framejit.compile(f, backend=off_by_a_bit(torch.sin), check_accuracy=True, debug_dir=tmp_path)
    _, first = _accuracy_warnings(lambda: compiled(torch.randn(3)))
    _, second = _accuracy_warnings(lambda: compiled(torch.randn(3)))
    assert len(first) == 1 and second == []


def test_without_the_mode_nothing_is_checked(tmp_path):
    def f(x):
        return torch.sin(x) + 1
    compiled = framejit.compile(f, backend=off_by_a_bit(torch.sin), debug_dir=tmp_path)
    _, found = _accuracy_warnings(lambda: compiled(torch.randn(3)))
    assert found == [] and not (tmp_path / "accuracy").exists()


def test_the_environment_switch(monkeypatch):
    monkeypatch.setenv("FRAMEJIT_CHECK_ACCURACY", "1")
    assert Config.from_env().check_accuracy is True
    monkeypatch.setenv("FRAMEJIT_CHECK_ACCURACY", "0")
    assert Config.from_env().check_accuracy is False


def test_the_graph_after_a_break_is_named(tmp_path):
    def f(x):
        y = torch.cos(x) * 2
        print("between graphs")
        return torch.exp(y).sum()
    compiled = framejit.compile(f, backend=off_by_a_bit(torch.exp), check_accuracy=True, debug_dir=tmp_path)
    _, found = _accuracy_warnings(lambda: compiled(torch.randn(4)))
    assert len(found) == 1
    assert "resume" in found[0].graph or "f" in found[0].graph
    assert [n.target for n in found[0].minified.nodes] == [torch.exp]


def test_a_wrong_write_into_an_input_is_found(tmp_path):
    def f(x):
        x.mul_(3)

    def wrong_factor(gm, example_inputs):
        for node in gm.graph.nodes:
            if node.target == "mul_":
                node.args = (node.args[0], 3.03)
        gm.recompile()
        return gm.forward

    compiled = framejit.compile(f, backend=wrong_factor, check_accuracy=True, debug_dir=tmp_path)
    x = torch.randn(4)
    expected = x * 3.03
    _, found = _accuracy_warnings(lambda: compiled(x))
    assert len(found) == 1 and found[0].difference.startswith("input 0 (written by the graph)")
    assert torch.equal(x, expected)             # the mode reports; the compiled graph's write is what happened
    assert [n.target for n in found[0].minified.nodes] == ["mul_"]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_a_right_backend_draws_no_warning_and_keeps_semantics(monkeypatch, backend):
    monkeypatch.setenv("FRAMEJIT_CHECK_ACCURACY", "1")

    def f(x, buf):
        noise = torch.rand_like(x)                 # the check must not change the numbers drawn
        buf.add_(x.sum())                          # nor write the input twice
        out = torch.nn.functional.dropout(x, 0.5, training=True) + noise
        total = buf.sum().item()                   # a graph break: two graphs, both checked
        print("sum", round(total, 3))
        return out * buf * torch.rand(1)

    with warnings.catch_warnings():
        warnings.simplefilter("error", AccuracyWarning)
        check(f, torch.randn(4, 4), torch.zeros(4), backend=backend, graphs=2)


def test_minify_on_a_traced_graph_names_the_wrong_op():
    def g(a, b):
        c = a @ b
        d = torch.sigmoid(c)
        e = d * c
        f = torch.log1p(e.abs())
        return f.sum(0), e

    gm = fx.symbolic_trace(g)
    found = minify(gm, [torch.randn(6, 6), torch.randn(6, 6)], off_by_a_bit(torch.log1p))
    assert [n.target for n in found.nodes] == [torch.log1p]
    assert minify(gm, [torch.randn(6, 6), torch.randn(6, 6)], lambda gm, inputs: gm.forward) is None
