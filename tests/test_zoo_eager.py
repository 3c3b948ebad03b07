"""Checks that every model in bench/zoo.py is a sound test subject when run eagerly.

Why this exists: framejit's model-level tests compare compiled output with eager output, and
train through compiled models. That comparison is only meaningful if eager itself is
deterministic (seeded weights and inputs, no live dropout) and gives finite gradients.
"""

import math

import pytest
import torch

from bench import zoo


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Toy models gain nothing from intra-op threads, and on a busy 2-core box idle OpenMP workers
    spin and triple the run time; restore the caller's setting afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def output_tensors(output) -> list[torch.Tensor]:
    """Every tensor in a model output (ModelOutput, tuple, or tensor), in a fixed order."""
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, dict):  # ModelOutput is an OrderedDict of its non-None fields
        output = list(output.values())
    if isinstance(output, (list, tuple)):
        return [t for item in output for t in output_tensors(item)]
    return []


def test_zoo_is_large_and_covers_every_kind():
    assert len(zoo.ZOO) >= 12
    assert len(set(zoo.names())) == len(zoo.ZOO)
    assert {entry.kind for entry in zoo.ZOO} == {"decoder", "encoder", "encoder-decoder", "vision"}


def test_get_finds_by_name_and_explains_misses():
    assert zoo.get("gpt2").name == "gpt2"
    with pytest.raises(KeyError, match="known"):
        zoo.get("no-such-model")


@pytest.mark.parametrize("name", zoo.names())
def test_build_and_inputs_are_seeded(name):
    entry = zoo.get(name)
    first, second = entry.build(), entry.build()
    assert not first.training
    for (key, a), (_, b) in zip(first.state_dict().items(), second.state_dict().items()):
        assert torch.equal(a, b), key
    inputs_a, inputs_b = entry.inputs(), entry.inputs()
    assert inputs_a.keys() == inputs_b.keys()
    for key in inputs_a:
        assert isinstance(inputs_a[key], torch.Tensor), key
        assert torch.equal(inputs_a[key], inputs_b[key]), key


@pytest.mark.parametrize("name", zoo.names())
def test_forward_twice_is_identical(name):
    entry = zoo.get(name)
    model = entry.build()
    with torch.no_grad():
        first = output_tensors(model(**entry.inputs()))
        second = output_tensors(model(**entry.inputs()))
    assert first and len(first) == len(second)
    for a, b in zip(first, second):
        assert torch.equal(a, b)
        assert torch.isfinite(a).all() if a.is_floating_point() else True


def uses_batch_statistics(model: torch.nn.Module) -> bool:
    """True if train mode normalises with batch statistics (and updates running buffers)."""
    return any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules())


@pytest.mark.parametrize("name", zoo.names())
def test_train_mode_is_deterministic(name):
    entry = zoo.get(name)
    first, second = entry.build().train(), entry.build().train()
    for a, b in zip(output_tensors(first(**entry.inputs())), output_tensors(second(**entry.inputs()))):
        assert torch.equal(a, b)


@pytest.mark.parametrize("name", zoo.names())
def test_train_mode_matches_eval_and_gives_finite_grads(name):
    entry = zoo.get(name)
    model = entry.build()
    with torch.no_grad():
        eval_out = output_tensors(model(**entry.inputs()))
    model.train()
    output = model(**entry.inputs())
    if not uses_batch_statistics(model):
        # All dropout probabilities are zero, so train mode must compute the same thing as eval.
        for a, b in zip(eval_out, output_tensors(output)):
            torch.testing.assert_close(b.detach(), a, rtol=0, atol=0)
    loss = entry.loss(output)
    assert loss.dim() == 0 and math.isfinite(loss.item())
    loss.backward()
    missing = [n for n, p in model.named_parameters() if p.requires_grad and p.grad is None]
    assert not missing, f"loss does not reach {missing}"
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert all(torch.isfinite(g).all() for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)
