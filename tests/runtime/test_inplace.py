"""framejit.compile(module, inplace=True): the module stays the same object (what FSDP, optimizers and
hooks key by), its forward runs compiled, its hooks run as plain Python exactly as eagerly."""
import copy

import pytest
import torch

import framejit


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 8)
        self.b = torch.nn.Linear(8, 2)

    def forward(self, x, scale=1.0):
        return self.b(torch.relu(self.a(x)) * scale)


def _pair():
    torch.manual_seed(0)
    eager = Net()
    return eager, copy.deepcopy(eager)


def test_the_module_is_compiled_itself_and_trains_like_eager():
    eager, model = _pair()
    counter = framejit.CompileCounter()
    params = list(model.parameters())
    assert framejit.compile(model, inplace=True, backend=counter) is model
    assert type(model) is Net and list(model.parameters()) == params and model.state_dict().keys() == eager.state_dict().keys()
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (eager, model)]
    for step in range(3):
        x = torch.randn(5, 4, generator=torch.Generator().manual_seed(step))
        outs = []
        for m, opt in zip((eager, model), opts):
            opt.zero_grad()
            out = m(x, scale=2.0)
            out.sum().backward()
            opt.step()
            outs.append(out)
        assert torch.allclose(outs[0], outs[1])
        for p, q in zip(eager.parameters(), model.parameters()):
            assert torch.allclose(p, q)
    assert counter.frame_count == 1                     # one conversion, then cache hits


def test_hooks_run_as_plain_python_around_the_compiled_forward_as_eagerly():
    eager, model = _pair()
    framejit.compile(model, inplace=True)
    for m in (eager, model):
        log = m.log = []
        m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        m.register_forward_hook(lambda mod, args, out, log=log: log.append(out.shape) or out + 1)
    x = torch.randn(3, 4)
    assert torch.allclose(eager(x), model(x))
    assert eager.log == model.log == [torch.Size([3, 2])]


def test_a_submodule_compiled_in_place_is_inlined_by_a_compiled_caller():
    torch.manual_seed(0)
    outer = torch.nn.Sequential(Net(), torch.nn.Tanh())
    reference = copy.deepcopy(outer)
    framejit.compile(outer[0], inplace=True)
    explained = framejit.explain(outer)(torch.ones(2, 4))
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    assert torch.allclose(explained.result, reference(torch.ones(2, 4)))


def test_compiling_in_place_again_replaces_and_del_forward_undoes():
    _, model = _pair()
    first = framejit.CompileCounter()
    second = framejit.CompileCounter()
    framejit.compile(model, inplace=True, backend=first)
    framejit.compile(model, inplace=True, backend=second)
    model(torch.randn(2, 4))
    assert (first.frame_count, second.frame_count) == (0, 1)
    del model.forward
    assert "forward" not in vars(model)
    model(torch.randn(2, 4))
    assert second.frame_count == 1


def test_what_cannot_be_compiled_in_place_is_refused_saying_why():
    _, model = _pair()
    with pytest.raises(TypeError, match="inplace must be a bool"):
        framejit.compile(model, inplace=1)
    with pytest.raises(TypeError, match="compiles an nn.Module in place"):
        framejit.compile(lambda x: x, inplace=True)
    framejit.compile(model, inplace=True)
    with pytest.raises(TypeError, match="compiled in place"):
        framejit.compile(model)
    copy_of = framejit.compile(Net())
    with pytest.raises(TypeError, match="already a compiled copy"):
        framejit.compile(copy_of, inplace=True)
    own = Net()
    own.forward = lambda x: x
    with pytest.raises(TypeError, match="instance-level `forward`"):
        framejit.compile(own, inplace=True)
