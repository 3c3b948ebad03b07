"""What `framejit.compile(module)` returns, checked case by case against the module itself (issue 26):
hooks and every piece of module-keyed state see the original module. Each test builds two identical
models from one seed, compiles one, does the same thing to both and compares outputs, grads and state
(the FSDP2 and DDP cases run on 2 ranks in tests/distributed/test_dropin_distributed.py)."""
import copy
import io
import pickle
import warnings

import pytest
import torch
from torch.nn.utils import parametrize
from torch.nn.utils import parametrizations

import framejit


class Symmetric(torch.nn.Module):
    def forward(self, w):
        return w.triu() + w.triu(1).T


def model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))


X = torch.randn(3, 4, generator=torch.Generator().manual_seed(1))


@pytest.fixture(autouse=True)
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", framejit.GraphBreakWarning)
        yield


def test_parametrization_registered_on_the_original_after_compiling_reads_through_the_copy():
    eager, original = model(), model()
    compiled = framejit.compile(original)
    leaf, last = framejit.compile(original[0]), framejit.compile(original[2])    # compiled before
    compiled(X), leaf(X), last(X)
    for m in (eager, original):
        parametrize.register_parametrization(m[0], "weight", Symmetric())
        parametrize.register_parametrization(m[0], "bias", torch.nn.Identity())
        parametrizations.weight_norm(m[2])
    assert torch.equal(leaf.weight, eager[0].weight) and torch.equal(leaf.bias, eager[0].bias)
    assert torch.equal(last.weight, eager[2].weight)
    assert torch.allclose(compiled(X), eager(X)) and torch.allclose(leaf(X), eager[0](X))
    assert compiled.state_dict().keys() == eager.state_dict().keys()


def test_weight_norm_before_compiling_trains_as_eager():
    eager, original = model(), model()
    for m in (eager, original):
        torch.nn.utils.weight_norm(m[0])              # the old form: a forward pre-hook
        parametrizations.weight_norm(m[2])           # the new form: a parametrization
    compiled = framejit.compile(original)
    for m in (eager, compiled):
        m(X).square().sum().backward()
    assert torch.allclose(compiled(X), eager(X))
    assert torch.allclose(original[0].weight_g.grad, eager[0].weight_g.grad)
    assert torch.allclose(original[2].parametrizations.weight.original1.grad,
                          eager[2].parametrizations.weight.original1.grad)


def test_parametrizing_the_copy_is_refused_before_anything_changes():
    original = torch.nn.Linear(4, 4)
    compiled = framejit.compile(original)
    with pytest.raises(ValueError, match="on the original module"):
        parametrize.register_parametrization(compiled, "weight", Symmetric())
    assert "weight" in original._parameters and torch.allclose(compiled(X), torch.nn.functional.linear(
        X, original.weight, original.bias))


def test_hooks_registered_before_and_after_compiling_on_either_run_once_each():
    eager, original = model(), model()
    logs = {"eager": [], "compiled": []}

    def hooks(m, log, when):
        m.register_forward_pre_hook(lambda mod, args: log.append(f"pre {when}"))
        m.register_forward_hook(lambda mod, args, out: log.append(f"post {when}") or out * 2)
    hooks(eager, logs["eager"], "before")
    hooks(original, logs["compiled"], "before")
    compiled = framejit.compile(original)
    hooks(eager, logs["eager"], "after")
    hooks(compiled, logs["compiled"], "after")
    assert torch.allclose(compiled(X), eager(X))
    assert logs["compiled"] == logs["eager"] == ["pre before", "pre after", "post before", "post after"]
    handle = compiled.register_forward_hook(lambda mod, args, out: out + 1)
    assert torch.allclose(original(X), eager(X) + 1)   # hooks live in the one module both names reach
    handle.remove()


def test_optimizer_built_before_compiling_trains_the_compiled_model_as_eager():
    eager, original = model(), model()
    opts = [torch.optim.AdamW(m.parameters(), lr=0.1) for m in (eager, original)]
    compiled = framejit.compile(original)
    for step in range(3):
        for m, opt in ((eager, opts[0]), (compiled, opts[1])):
            m(X).square().mean().backward()
            opt.step()
            opt.zero_grad()
    for p, q in zip(eager.parameters(), original.parameters()):
        assert torch.allclose(p, q)
    assert opts[1].state_dict()["state"].keys() == opts[0].state_dict()["state"].keys()


def test_module_protocol_train_eval_to_isinstance_state_dict():
    original = model()
    compiled = framejit.compile(original)
    assert isinstance(compiled, torch.nn.Sequential)    # torch.compile's wrapper is not: framejit's is
    compiled.eval()
    assert not original.training and not original[0].training
    compiled.train()
    assert original.training and original[2].training
    compiled.to(torch.float64)
    assert original[0].weight.dtype == torch.float64
    assert torch.allclose(compiled(X.double()), original(X.double()))
    compiled.to(torch.float32)
    assert list(compiled.state_dict()) == list(original.state_dict())    # no "_orig_mod." prefix
    compiled.load_state_dict(model(seed=3).state_dict())
    assert torch.allclose(compiled(X), model(seed=3)(X))


@pytest.mark.parametrize("how", ["deepcopy", "pickle", "torch.save"])
def test_copies_and_saved_models_are_the_original_class(how):
    original = model()
    compiled = framejit.compile(original)
    compiled(X)
    if how == "deepcopy":
        again = copy.deepcopy(compiled)
    elif how == "pickle":
        again = pickle.loads(pickle.dumps(compiled))
    else:
        buffer = io.BytesIO()
        torch.save(compiled, buffer)
        buffer.seek(0)
        again = torch.load(buffer, weights_only=False)
    assert type(again) is torch.nn.Sequential
    assert torch.allclose(again(X), original(X))
    assert again[0].weight is not original[0].weight
