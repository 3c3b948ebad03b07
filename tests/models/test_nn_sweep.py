"""Every torch.nn module class (default or smallest usual constructor arguments, a small input) is one
graph under framejit wherever torch.compile gets one graph with no break, and returns eager's result.

torch.compile's answer is stored data (tests/models/nn_sweep_expected.py, refreshed by
`.venv/bin/python bench/nn_sweep.py --refresh`): running it here would make the suite slow."""
import warnings

import pytest
import torch

import framejit
from bench.nn_sweep import inputs, make
from tests.models.nn_sweep_expected import TORCH_COMPILE

ONE_GRAPH = sorted(name for name, row in TORCH_COMPILE.items() if row[3] == 1 and row[4] == 0)
# in eval mode these return their input (or a view of it) and run no op: framejit makes no graph where
# torch.compile makes an empty one
NO_OP = {"AlphaDropout", "Dropout", "Dropout2d", "FeatureAlphaDropout", "Flatten"}


def test_the_sweep_covers_the_module_zoo():
    assert len(TORCH_COMPILE) >= 100, "bench/nn_sweep.py builds fewer torch.nn classes than expected"


@pytest.mark.parametrize("name", ONE_GRAPH)
def test_one_graph_where_torch_compile_has_one(name):
    ctor, shape, n = TORCH_COMPILE[name][:3]
    args = inputs(shape, n)
    framejit.reset()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = make(name, ctor)(*args)
        report = framejit.explain(make(name, ctor))(*args)
        got = framejit.compile(make(name, ctor))(*args)
    assert (report.graph_count, report.graph_break_count) == (0 if name in NO_OP else 1, 0), \
        f"nn.{name}: {report.graph_count} graphs, {report.graph_break_count} breaks: {report.break_reasons[:2]}"
    torch.testing.assert_close(got, expected, equal_nan=True)
