"""The runtime of a training graph's library pair (backends/training_runtime.py) and the decisions of
backends/training_library.py, without compiling C++: the pair here is AOT autograd's forward and backward fx
graphs run as Python, connected by the plan `training_library.build` makes (the compiling tests, with real
AOTInductor libraries, are in test_training_library.py: `make test-aoti`).

A two-layer MLP with an MSE loss and a buffer (an input without grad): loss and gradients equal eager's; an
in-place write of a saved tensor between forward and backward and a second backward without retain_graph
raise as eagerly; a backward that keeps the graph (retain_graph, create_graph) raises AOT autograd's
"donated buffers" error when a saved tensor is an intermediate, and a double backward its "does not
currently support double backward" otherwise (framejit's JIT inductor path does both); a graph
that writes an input and one that returns an input's memory are refused, one with a random op in its
forward draws eager's numbers; a "no"
entry sends a graph to the JIT path without scheduling a build. These failed before the modules existed
(ImportError).
"""
import pytest
import torch
import torch.fx

from framejit.backends import aoti_background, inductor_aoti, inductor_caches, training_library
from framejit.backends.training_runtime import DOUBLE_BACKWARD, LibraryPair, runner
from framejit.persist.store import DiskStore as Store


class MLP(torch.nn.Module):
    def forward(self, x, w1, b1, w2, b2, scale, y):
        h = torch.relu(torch.nn.functional.linear(x, w1, b1))
        return (torch.nn.functional.mse_loss(torch.nn.functional.linear(h, w2, b2) * scale, y),)


class Buffered(torch.nn.Module):            # a tensor the graph module holds (get_attr): AOT lifts it
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor([0.5, 2.0, 1.0]))

    def forward(self, x, w1, b1, w2, b2, y):
        h = torch.relu(torch.nn.functional.linear(x, w1, b1))
        return (torch.nn.functional.mse_loss(torch.nn.functional.linear(h, w2, b2) * self.scale, y),)


class HoldsParameter(torch.nn.Module):      # a parameter of the graph module itself: refused
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x, w1):
        return ((self.lin(x @ w1.t()[:, :4])).sum(),)


class Noisy(torch.nn.Module):
    def forward(self, x, w1):
        return (torch.nn.functional.dropout(x @ w1.t(), 0.5, training=True).sum(),)


class WritesInput(torch.nn.Module):
    def forward(self, x, w1):
        x.mul_(2)
        return ((x @ w1.t()).sum(),)


class ReturnsInput(torch.nn.Module):
    def forward(self, x, w1):
        return ((x @ w1.t()).sum(), w1.t())


def _inputs():
    g = torch.Generator().manual_seed(0)
    return [torch.randn(8, 4, generator=g), torch.randn(16, 4, generator=g).requires_grad_(),
            torch.randn(16, generator=g).requires_grad_(), torch.randn(3, 16, generator=g).requires_grad_(),
            torch.randn(3, generator=g).requires_grad_(), torch.tensor([0.5, 2.0, 1.0]), torch.randn(8, 3, generator=g)]


def _copies(inputs):
    return [x.detach().clone().requires_grad_(x.requires_grad) for x in inputs]


def _python_pair(module, inputs):
    """The pair with the fx graphs as its libraries (no C++), or why it is refused."""
    def load(graph):
        return lambda *args: tuple(graph(*args))
    gm = torch.fx.symbolic_trace(module)
    made, why = training_library.build(gm, inputs, lambda g, _: (g, None), load,
                                       {"fallback_random": True})      # as backends/inductor.py's EXACT
    if made is None:
        return None, why
    fw, bw, plan = made
    return runner(LibraryPair(load(fw), load(bw), plan, training_library.constants(gm))), None


def test_loss_and_gradients_are_eagers():
    inputs = _inputs()
    run, why = _python_pair(MLP(), inputs)
    assert why is None
    assert training_library.behaves_like_eager(torch.fx.symbolic_trace(MLP()), run, inputs) is None
    eager, compiled = _copies(inputs), _copies(inputs)
    expected, = MLP()(*eager)
    got, = run(*compiled)
    assert got.requires_grad and torch.allclose(got, expected)
    expected.backward()
    got.backward()
    for e, g in zip(eager, compiled):
        assert (e.grad is None) == (g.grad is None)
        if e.grad is not None:
            assert torch.allclose(e.grad, g.grad, atol=1e-6)


def test_a_buffer_of_the_graph_module():
    inputs = _inputs()
    del inputs[5]
    run, why = _python_pair(Buffered(), inputs)
    assert why is None and run.library_pair.plan["n_constants"] == 1
    assert training_library.behaves_like_eager(torch.fx.symbolic_trace(Buffered()), run, inputs) is None


def _outcome(fn):
    try:
        fn()
        return None
    except RuntimeError as e:
        return str(e).split(".")[0]


def test_between_forward_and_backward_as_eagerly():
    inputs = _inputs()
    run, _ = _python_pair(MLP(), inputs)

    def write_saved(f):
        args = _copies(inputs)
        loss, = f(*args)
        with torch.no_grad():
            args[3].mul_(1.0)               # w2, saved by the second linear
        loss.backward()

    def backward_twice(f):
        loss, = f(*_copies(inputs))
        loss.backward()
        loss.backward()

    for case in (write_saved, backward_twice):
        eager = _outcome(lambda: case(MLP()))
        assert eager is not None and _outcome(lambda: case(run)) == eager


class Product(torch.nn.Module):             # saves only its input x: no donated buffer
    def forward(self, x, w1):
        return ((x @ w1.t()).sum(),)


def test_keeping_the_graph_raises_as_aot_autograd_with_donated_buffers():
    inputs = _inputs()
    run, _ = _python_pair(MLP(), inputs)
    assert run.library_pair.plan["donates"]          # the MLP saves intermediates
    for keep in ({"retain_graph": True}, {"create_graph": True}):
        args = _copies(inputs)
        loss, = run(*args)
        with pytest.raises(RuntimeError, match="non-empty donated buffers"):
            torch.autograd.grad(loss, args[3], **keep)


def test_double_backward_raises_as_aot_autograd():
    inputs = [torch.randn(8, 4), torch.randn(16, 4, requires_grad=True)]
    run, _ = _python_pair(Product(), inputs)
    assert not run.library_pair.plan["donates"]
    args = _copies(inputs)
    loss, = run(*args)
    g, = torch.autograd.grad(loss, args[1], create_graph=True)
    assert g.requires_grad
    with pytest.raises(RuntimeError, match=DOUBLE_BACKWARD):
        g.sum().backward()
    loss, = run(*args)                  # no donated buffer: retain_graph keeps the saved tensors
    loss.backward(retain_graph=True)
    loss.backward()


def test_forward_draws_eagers_random_numbers():
    inputs = [torch.randn(8, 4), torch.randn(16, 4, requires_grad=True)]
    run, why = _python_pair(Noisy(), inputs)
    assert why is None
    assert training_library.behaves_like_eager(torch.fx.symbolic_trace(Noisy()), run, inputs) is None
    torch.manual_seed(5)
    expected, = Noisy()(*_copies(inputs))
    after = torch.rand(3)
    torch.manual_seed(5)
    got, = run(*_copies(inputs))
    assert torch.equal(got, expected) and torch.equal(torch.rand(3), after)


@pytest.mark.parametrize("module, why", [(WritesInput(), "writes an input"), (ReturnsInput(), "shares memory"),
                                         (HoldsParameter(), "parameter held by the graph module")])
def test_refused(module, why):
    inputs = [torch.randn(8, 4), torch.randn(16, 4, requires_grad=True)]
    run, reason = _python_pair(module, inputs)
    assert run is None and why in reason


def test_candidates():
    w = torch.randn(3, requires_grad=True)
    assert training_library.training_candidate([torch.randn(3), w])
    assert not training_library.training_candidate([torch.randn(3), torch.randn(3)])     # inference
    with torch.no_grad():
        assert not training_library.training_candidate([w])
    with torch.autocast("cpu"):
        assert not training_library.training_candidate([w])
    assert not training_library.training_candidate([w, 2])


def test_no_entry_means_the_jit_path_and_no_build(tmp_path, monkeypatch):
    monkeypatch.setenv("FRAMEJIT_CACHE_AOTI", "background")
    gm, inputs = torch.fx.symbolic_trace(MLP()), _inputs()
    store = Store(str(tmp_path))
    key = training_library.training_key(gm, inputs, None)
    store.put(key, inductor_aoti._NO, {"why_not": "refused"})
    pending = list(aoti_background._PENDING)
    assert inductor_caches._training_library(store, gm, inputs, None) is None
    assert aoti_background._PENDING == pending
    monkeypatch.setenv("FRAMEJIT_CACHE_AOTI", "0")
    assert inductor_caches._training_library(Store(str(tmp_path / "empty")), gm, inputs, None) is None
    assert aoti_background._PENDING == pending
