"""Differential tests: a Python int that changes every call (a sampler's timestep) settles into one
dynamic entry after one recompile, also when the frame makes a tensor of it (translate/lookasides/
symbolic_factories.py). torch.tensor(t) used to pin the symbolic int again: every step recompiled."""
import pytest
import torch

from tests.differential import check_calls, randn


def embed_timestep(x, t):
    ts = torch.tensor([t], dtype=torch.int64).expand(x.shape[0])
    freqs = torch.exp(-torch.arange(4, dtype=torch.float32))
    return x * (ts[:, None].float() * freqs).sin()


def scalar_factories(x, t):
    a = torch.tensor(t)
    b = torch.as_tensor(t, dtype=torch.float32)
    c = torch.tensor([t, 2 * t, 3])
    d = torch.tensor([t, 0.5])
    return x * a + b, c, d, a.dtype, d.dtype


def timestep_compare(x, t):
    if t >= 10:                      # a comparison in the callee, as schedulers make
        return x * torch.tensor(t)
    return x - torch.tensor([t])


@pytest.mark.parametrize("fn", [embed_timestep, scalar_factories, timestep_compare])
def test_decreasing_int_timesteps_settle_after_one_recompile(fn):
    calls = [(randn(2, 4, seed=i), t) for i, t in enumerate((75, 50, 25, 12))]
    _, counter = check_calls(fn, calls)
    assert counter.frame_count <= 2, f"{counter.frame_count} conversions for 4 timesteps"
