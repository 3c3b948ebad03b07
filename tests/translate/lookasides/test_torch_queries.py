"""Differential tests: torch's own queries answered at translation (translate/lookasides/torch_queries.py).

torch.nn's MultiheadAttention and TransformerEncoderLayer ask `torch.overrides.has_torch_function` and
read the dispatch-mode stack before choosing their fast path; library functions guard on
`has_torch_function_unary/variadic`. Each was a graph break (TransformerEncoderLayer ran with no graph
at all); now each is answered and the module is one graph, with eager's results."""
import pytest
import torch
from torch import nn
from torch.overrides import has_torch_function, has_torch_function_unary, has_torch_function_variadic
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

from tests.differential import check, randn


def _seeded(make):
    torch.manual_seed(0)
    return make()


def library_function(x, w):
    if has_torch_function_variadic(x, w):
        return "dispatched"
    if has_torch_function_unary(x) or has_torch_function((x, w, None, 3)):
        return "dispatched"
    return (x @ w).relu(), len(_get_current_dispatch_mode_stack())


def test_has_torch_function_family_on_plain_tensors():
    check(library_function, randn(3, 4), randn(4, 2), graphs=1, breaks=0)


@pytest.mark.parametrize("make,inputs", [
    (lambda: nn.MultiheadAttention(16, 4, batch_first=True), lambda: (randn(2, 6, 16),) * 3),
    (lambda: nn.TransformerEncoderLayer(16, 4, 32, batch_first=True), lambda: (randn(2, 6, 16),)),
    (lambda: nn.TransformerDecoderLayer(16, 4, 32, batch_first=True), lambda: (randn(2, 6, 16), randn(2, 3, 16, seed=1))),
], ids=["mha", "encoder_layer", "decoder_layer"])
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_torch_nn_fast_path_checks_are_one_graph(make, inputs, grad):
    module = _seeded(make).eval()

    def run(*args):
        with torch.set_grad_enabled(grad):
            return module(*args)
    check(run, *inputs(), graphs=1, breaks=0)


class WithTorchFunction(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {})


def test_subclass_with_torch_function_still_answers_true():
    def asks(t):
        return has_torch_function_unary(t.as_subclass(WithTorchFunction)), has_torch_function((t, 1))
    check(asks, randn(3, 4))


def log_usage(obj):
    """torchvision.utils._log_api_usage_once's shape."""
    module = obj.__module__
    if not module.startswith("torchvision"):
        module = f"torchvision.internal.{module}"
    name = obj.__name__ if isinstance(obj, type(log_usage)) else obj.__class__.__name__
    torch._C._log_api_usage_once(f"{module}.{name}")


def stochastic_depth(x, p, training):
    """torchvision.ops.stochastic_depth's shape: logs its use, then drops rows at random."""
    if not torch.jit.is_scripting() and not torch.jit.is_tracing():
        log_usage(stochastic_depth)
    if not training or p == 0.0:
        return x
    noise = torch.empty([x.shape[0]] + [1] * (x.ndim - 1)).bernoulli_(1 - p)
    return x * noise.div_(1 - p)


@pytest.mark.parametrize("training", [False, True])
def test_api_usage_logging_and_stochastic_depth_are_one_graph(training):
    def blocks(x):
        for i in range(3):
            x = x + stochastic_depth(x.relu(), 0.1 * i, training)
        return x
    check(blocks, randn(4, 5), graphs=1, breaks=0)
