"""Differential tests: the Python introspection libraries run on their hot path (issue 25, class 3).

diffusers' Attention asks `inspect.signature(self.processor.__call__).parameters.keys()` on every
call; its dtype helper tests a frozenset read from a module dict; its models return BaseOutput
dataclasses (OrderedDict subclasses, like transformers' ModelOutput). Each was a graph break (diffusers'
VAE: 5 graphs / 11 breaks, torch.compile 1/0); each is now answered in the graph."""
import dataclasses
import inspect
from collections import OrderedDict

import pytest
import torch
from torch import nn

from tests.differential import check, randn


class Processor:
    def __call__(self, attn, hidden_states, encoder_hidden_states=None, **kwargs):
        return attn.fc(hidden_states)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(4, 4)
        self.processor = Processor()

    def forward(self, x, **kwargs):
        names = set(inspect.signature(self.processor.__call__).parameters.keys())
        unused = [k for k, _ in kwargs.items() if k not in names]
        first = next(iter(inspect.signature(self.processor.__call__).parameters))
        return self.processor(self, x), unused, len(names), first, "attn" in names


def test_signature_of_a_bound_method():
    attention = Attention()
    check(lambda x: attention(x, scale=2.0, encoder_hidden_states=None), randn(2, 4), graphs=1, breaks=0)


UNSUPPORTED = {torch.float64: frozenset({"mps", "npu"}), torch.float32: frozenset()}


def adjust(x, dtype):
    unsupported = UNSUPPORTED.get(dtype)
    if unsupported and x.device.type in unsupported:
        return x.half()
    return x * 2, bool(UNSUPPORTED[torch.float32]), "cpu" in UNSUPPORTED[torch.float64]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_frozenset_truth_and_membership(dtype):
    check(adjust, randn(3), dtype, graphs=1, breaks=0)


def test_frozenset_change_is_noticed():
    import framejit
    compiled = framejit.compile(adjust)
    compiled(randn(2), torch.float64)
    UNSUPPORTED[torch.float64] = frozenset({"cpu"})
    try:
        assert compiled(randn(2), torch.float64).dtype == torch.float16
    finally:
        UNSUPPORTED[torch.float64] = frozenset({"mps", "npu"})


outputs = pytest.importorskip("diffusers.utils.outputs")


@dataclasses.dataclass
class SampleOutput(outputs.BaseOutput):
    sample: torch.Tensor
    extra: torch.Tensor | None = None


class Distribution:
    def __init__(self, mean):
        self.mean = mean

    def mode(self):
        return self.mean


@dataclasses.dataclass
class LatentOutput(outputs.BaseOutput):
    latent_dist: Distribution


def build_outputs(x):
    out = SampleOutput(sample=x * 2)
    both = SampleOutput(x + 1, x - 1)
    latent = LatentOutput(latent_dist=Distribution(x.sin()))
    return (out.sample, out[0], out["sample"], list(both.keys()), both.to_tuple(), both[1:], "extra" in out,
            latent.latent_dist.mode(), len(latent), out)


def test_diffusers_base_output_built_and_returned():
    result = check(build_outputs, randn(3), graphs=1, breaks=0)
    assert type(result[-1]) is SampleOutput and isinstance(result[-1], OrderedDict)


def test_diffusers_base_output_dict_form_still_breaks():
    check(lambda x: SampleOutput({"sample": x})["sample"] + 1, randn(2))
