"""Backends by name (eager, aot_eager, inductor), and what happens when a backend fails.

A backend receives the captured GraphModule and the real example inputs and returns a callable taking
the flat graph inputs. aot_eager (AOT autograd with no-op compilers) must keep forward and backward
exactly as eager, including buffers mutated in place; inductor is checked for correctness on a small
function and the two smallest zoo models that capture as one graph. A backend that raises becomes a
framejit.errors.BackendError carrying the graph; the call still succeeds eagerly, with one warning and a
record file of the frame.
"""
import copy
import warnings

import pytest
import torch
import torch.nn as nn

import framejit
from framejit.backends import BACKENDS, lookup_backend
from framejit.errors import BackendError
from tests.differential import check, randn


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def mlp(x, w, b):
    return torch.tanh(x @ w + b).sum(-1) * 2


def test_builtin_backends_are_registered_by_name():
    assert {"eager", "aot_eager", "inductor"} <= set(BACKENDS)
    with pytest.raises(ValueError, match="unknown backend 'nope'"):
        lookup_backend("nope")
    with pytest.raises(TypeError):
        lookup_backend(3)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_function_forward_and_backward(backend):
    check(mlp, randn(4, 3, requires_grad=True), randn(3, 5, requires_grad=True), randn(5, requires_grad=True),
          backend=backend, grads=True, graphs=1)


def test_aot_eager_returns_a_callable_on_flat_inputs():
    gm = torch.fx.symbolic_trace(lambda x, y: (x * y + 1,))
    x, y = torch.randn(3), torch.randn(3)
    fn = lookup_backend("aot_eager")(gm, [x, y])
    out = fn(x, y)
    torch.testing.assert_close(out[0], x * y + 1)


class NormNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.lin(x)).relu()


def test_aot_eager_training_updates_buffers_and_grads_like_eager():
    torch.manual_seed(0)
    eager = NormNet().train()
    compiled_model = copy.deepcopy(eager)
    compiled = framejit.compile(compiled_model, backend="aot_eager")
    for seed in range(2):
        x = randn(8, 4, seed=seed)
        compiled(x).square().sum().backward()
        eager(x).square().sum().backward()
    torch.testing.assert_close(compiled_model.bn.running_mean, eager.bn.running_mean)
    torch.testing.assert_close(compiled_model.bn.running_var, eager.bn.running_var)
    for (name, p), (_, q) in zip(eager.named_parameters(), compiled_model.named_parameters()):
        torch.testing.assert_close(q.grad, p.grad, msg=name)


def test_inductor_function():
    x, w, b = randn(4, 3), randn(3, 5), randn(5)
    compiled = framejit.compile(mlp, backend="inductor")
    torch.testing.assert_close(compiled(x, w, b), mlp(x, w, b), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["convnext", "resnet"])
def test_inductor_smallest_zoo_models(name):
    from bench import zoo
    entry = zoo.get(name)
    model = entry.build()
    inputs = entry.inputs()
    counter = framejit.CompileCounter("inductor")
    with torch.no_grad():
        out = framejit.compile(model, backend=counter)(**inputs)
        ref = model(**inputs)
    assert counter.frame_count == 1
    torch.testing.assert_close(out.logits, ref.logits, atol=1e-4, rtol=1e-4)


def broken_backend(gm, example_inputs):
    raise RuntimeError("this backend cannot compile anything")


def test_a_failing_backend_is_a_backend_error_with_the_graph_and_the_call_runs_eagerly(tmp_path):
    seen = []
    config = framejit.Config(debug_dir=tmp_path)
    from framejit.runtime.compiled import _compile

    def observer(fn, result, seconds):
        seen.append(result)

    compiled = _compile(mlp, broken_backend, False, config, observer)
    x, w, b = randn(4, 3), randn(3, 5), randn(5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = compiled(x, w, b)
    torch.testing.assert_close(out, mlp(x, w, b))
    messages = [str(w.message) for w in caught if "framejit" in str(w.message)]
    assert len(messages) == 1 and "BackendError" in messages[0] and "cannot compile anything" in messages[0]
    (result,) = seen
    assert result.kind == "eager"
    assert isinstance(result.exception, BackendError)
    assert isinstance(result.exception.graph_module, torch.fx.GraphModule)
    assert any(n.op == "call_function" for n in result.exception.graph_module.graph.nodes)
    assert result.record_path is not None and result.record_path.exists()
    assert str(result.record_path).startswith(str(tmp_path))
    with warnings.catch_warnings(record=True) as caught:      # from now on plain Python, no new warning
        warnings.simplefilter("always")
        torch.testing.assert_close(compiled(x, w, b), mlp(x, w, b))
    assert not [w for w in caught if "framejit" in str(w.message)]
