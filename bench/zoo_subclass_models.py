"""The tensor-subclass entries of bench/zoo_ecosystem.py (issue 25, class 7): models whose tensors are
wrapper subclasses with their own __torch_dispatch__, as quantized / low-precision weight formats and
logging tensors are written. The subclasses themselves are the tests' (tests/translate/values/tensors/
dispatch_subclasses.py). Kept apart from zoo_ecosystem_models.py, which registers them by importing this.
"""
import torch.nn.functional as F
from torch import nn

from bench.zoo_ecosystem_models import entry, randn


def _dispatch_subclasses():
    """The two wrapper subclasses of the tests (an int8 weight with a scale; a tensor logging its ops)."""
    from tests.translate.values.tensors import dispatch_subclasses
    return dispatch_subclasses


class Int8LinearMLP(nn.Module):
    """A quantized-weight model as torchao-style formats write it: Linear weights of a __torch_dispatch__
    wrapper subclass (int8 data + per-row scale, dequantized on use)."""

    def __init__(self):
        super().__init__()
        Int8Weight = _dispatch_subclasses().Int8Weight
        self.up, self.down = nn.Linear(8, 16), nn.Linear(16, 8)
        for lin in (self.up, self.down):
            lin.weight = nn.Parameter(Int8Weight.quantize(lin.weight.detach()), requires_grad=False)

    def forward(self, x):
        return self.down(F.gelu(self.up(x))) + x


@entry("dispatch_int8_linear", "tensor subclasses", lambda s: (randn(s, 2, 8),))
def _b():
    return Int8LinearMLP()


class LoggedInputs(nn.Module):
    """A function of a tensor whose wrapper subclass logs every aten op it sees (the log is compared)."""

    def forward(self, x, bias):
        return (x * 2 + bias).sum(-1), x.shape


def _logged_call(model, seed):
    logged = _dispatch_subclasses().LoggedTensor
    x, bias = randn(seed, 3, 4), randn(seed + 7, 4)
    out, shape = model(logged(x), bias)
    return out.elem, shape, list(logged.log[-3:])


@entry("dispatch_logging_tensor", "tensor subclasses", lambda s: (), run=_logged_call)
def _b():
    return LoggedInputs()
