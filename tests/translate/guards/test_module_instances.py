"""One capture serves every instance of a module class with the same structure (issue 12).

A fresh instance, a deep copy, or the next block of a model hits the entry the first instance made;
instances that differ in what the graph depends on (a hyperparameter, train/eval, a hook, a submodule's
type, a parameter's shape or requires_grad) do not share it; a change to one instance between calls is
seen; nothing keeps a dead instance alive. Every test compares with eager, and counts conversions.
"""
import copy
import gc
import warnings
import weakref

import pytest
import torch
import torch.nn as nn

import framejit
from tests.differential import randn


class Norm(nn.Module):
    def __init__(self, n, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * x * torch.rsqrt(var + self.eps)


class Block(nn.Module):
    """A hand-written transformer-ish block: a norm with a hyperparameter, an MLP, dropout (training
    flag), a buffer."""

    def __init__(self, n=8, eps=1e-5, act=None):
        super().__init__()
        self.norm = Norm(n, eps)
        self.up = nn.Linear(n, 2 * n)
        self.act = act if act is not None else nn.GELU()
        self.down = nn.Linear(2 * n, n)
        self.drop = nn.Dropout(0.0)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, n))
        self.residual = True

    def forward(self, x):
        h = self.down(self.act(self.up(self.norm(x))))
        h = self.drop(h) * self.scale
        return x + h if self.residual else h


def _block(seed, **kwargs):
    torch.manual_seed(seed)
    return Block(**kwargs)


def probe(module, x):
    return module(x) * 2


def _state(compiled):
    return compiled._framejit_state if hasattr(compiled, "_framejit_state") else type(compiled).forward._framejit_state


# ---- one conversion for many instances ------------------------------------------------------------

def test_a_probe_with_a_fresh_instance_per_call_converts_once():
    counter = framejit.CompileCounter()
    compiled = framejit.compile(probe, backend=counter)
    for seed in range(5):
        m = _block(seed)
        x = randn(3, 8, seed=seed)
        torch.testing.assert_close(compiled(m, x), probe(m, x))
    assert counter.frame_count == 1


def test_a_compiled_fresh_module_per_call_converts_once():
    # while one compiled module of the class lives (its entries die with the last one that uses them)
    counter = framejit.CompileCounter()
    x = randn(3, 8)
    first = framejit.compile(_block(0), backend=counter)
    first(x)
    for seed in range(1, 5):
        m = _block(seed)
        torch.testing.assert_close(framejit.compile(m, backend=counter)(x), m(x))
    assert counter.frame_count == 1


def test_compiling_a_deep_copy_converts_nothing_new():
    counter = framejit.CompileCounter()
    m = _block(0)
    x = randn(3, 8)
    compiled = framejit.compile(m, backend=counter)
    torch.testing.assert_close(compiled(x), m(x))
    twin = copy.deepcopy(m)
    with torch.no_grad():
        twin.up.weight.mul_(3)                          # its own parameters are read on each call
    torch.testing.assert_close(framejit.compile(twin, backend=counter)(x), twin(x))
    assert counter.frame_count == 1


def _run_blocks(blocks, x):
    for b in blocks:
        x = b(x)
    return x


def test_regional_compilation_of_twelve_blocks_converts_once_with_equal_outputs_and_gradients():
    eager_blocks = [_block(i) for i in range(12)]
    copies = copy.deepcopy(eager_blocks)
    counter = framejit.CompileCounter()
    compiled = [framejit.compile(b, backend=counter) for b in copies]
    x = randn(4, 8, requires_grad=True)
    out_e = _run_blocks(eager_blocks, x)
    out_c = _run_blocks(compiled, x)
    torch.testing.assert_close(out_c, out_e)
    out_e.pow(2).sum().backward()
    out_c.pow(2).sum().backward()
    for be, bc in zip(eager_blocks, copies):
        for (name, pe), (_, pc) in zip(be.named_parameters(), bc.named_parameters()):
            torch.testing.assert_close(pc.grad, pe.grad, msg=name)
    torch.testing.assert_close(_run_blocks(compiled, x * 2), _run_blocks(eager_blocks, x * 2))
    assert counter.frame_count == 1
    # torch.compile on the same blocks, for comparison: framejit converts no more often
    from torch._dynamo.testing import CompileCounter
    tc_counter = CompileCounter()
    torch._dynamo.reset()
    tc_blocks = [torch.compile(b, backend=tc_counter) for b in copy.deepcopy(eager_blocks)]
    torch.testing.assert_close(_run_blocks(tc_blocks, x), out_e)
    assert counter.frame_count <= tc_counter.frame_count


def test_regional_compilation_of_a_tiny_llama_converts_once():
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=12,
                                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32,
                                      attn_implementation="eager")
    torch.manual_seed(0)
    eager = transformers.LlamaModel(config)
    model = copy.deepcopy(eager)
    counter = framejit.CompileCounter()
    for i, layer in enumerate(model.layers):
        model.layers[i] = framejit.compile(layer, backend=counter)
    ids = torch.randint(0, 64, (2, 7), generator=torch.Generator().manual_seed(1))
    out_e = eager(input_ids=ids, use_cache=False).last_hidden_state
    out_c = model(input_ids=ids, use_cache=False).last_hidden_state
    torch.testing.assert_close(out_c, out_e)
    out_e.sum().backward()
    out_c.sum().backward()
    for (name, pe), (_, pc) in zip(eager.named_parameters(), model.named_parameters()):
        torch.testing.assert_close(pc.grad, pe.grad, msg=name)
    assert counter.frame_count == 1


class Chatty(Block):
    def forward(self, x):
        x = super().forward(x)
        print("block")                                      # a graph break in each block
        return x * 2


def test_the_layers_of_a_model_share_their_entries_when_each_layer_breaks(capsys):
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.blocks = nn.ModuleList(Chatty() for _ in range(6))

        def forward(self, x):
            for b in self.blocks:                          # the loop runs as Python, each layer compiled
                x = b(x)
            return x

    counter = framejit.CompileCounter()
    m = Stack()
    compiled = framejit.compile(m, backend=counter)
    x = randn(2, 8)
    torch.testing.assert_close(compiled(x), m(x))
    torch.testing.assert_close(compiled(x + 1), m(x + 1))
    assert capsys.readouterr().out == "block\n" * 24
    # the block before its break (for an input without and with grad) and after it: not per layer
    assert counter.frame_count == 3
    from torch._dynamo.testing import CompileCounter
    tc_counter = CompileCounter()
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(m, backend=tc_counter)(x), m(x))
    assert counter.frame_count <= tc_counter.frame_count


# ---- instances that must not share ----------------------------------------------------------------

def _differs(make_other):
    counter = framejit.CompileCounter()
    compiled = framejit.compile(probe, backend=counter)
    a = _block(0)
    b = make_other()
    x = randn(3, 8)
    torch.testing.assert_close(compiled(a, x), probe(a, x))
    torch.testing.assert_close(compiled(b, x), probe(b, x))
    torch.testing.assert_close(compiled(a, x), probe(a, x))
    torch.testing.assert_close(compiled(b, x), probe(b, x))
    return counter.frame_count


def test_a_different_eps_does_not_share():
    assert _differs(lambda: _block(0, eps=0.5)) == 2


def test_training_and_eval_instances_do_not_share():
    def other():
        b = _block(0)
        b.drop.p = 0.5
        return b.train(False)
    counter = framejit.CompileCounter()
    compiled = framejit.compile(probe, backend=counter)
    a, b = _block(0), other()
    a.drop.p = 0.5
    a.train()
    x = randn(3, 8)
    torch.manual_seed(3)
    expected_a = probe(a, x)
    torch.manual_seed(3)
    torch.testing.assert_close(compiled(a, x), expected_a)
    torch.testing.assert_close(compiled(b, x), probe(b, x))
    assert counter.frame_count == 2


def test_an_instance_with_a_hook_does_not_share():
    def other():
        b = _block(0)
        b.up.register_forward_hook(lambda mod, args, out: out * 10)
        return b
    assert _differs(other) == 2


def test_a_different_submodule_type_does_not_share():
    assert _differs(lambda: _block(0, act=nn.ReLU())) == 2


def test_a_parameter_of_another_shape_does_not_share():
    def other():
        b = _block(0)
        b.norm.weight = nn.Parameter(torch.ones(1))
        return b
    assert _differs(other) == 2


def test_a_parameter_with_other_requires_grad_does_not_share():
    def other():
        b = _block(0)
        b.up.weight.requires_grad_(False)
        return b
    counter = framejit.CompileCounter()
    compiled = framejit.compile(probe, backend=counter)
    a, b = _block(0), other()
    x = randn(3, 8)
    for m in (a, b, a):
        out = compiled(m, x)
        ref = probe(m, x)
        torch.testing.assert_close(out, ref)
        assert out.requires_grad == ref.requires_grad
    out = compiled(b, x)
    out.sum().backward()
    assert b.up.weight.grad is None and b.up.bias.grad is not None
    assert counter.frame_count == 2


def test_a_plain_attribute_that_differs_does_not_share():
    def other():
        b = _block(0)
        b.residual = False
        return b
    assert _differs(other) == 2


def test_the_same_submodule_twice_does_not_share_with_two_distinct_ones():
    class Twice(nn.Module):
        def __init__(self, shared):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = self.a if shared else nn.Linear(4, 4)
            self.a.calls = self.b.calls = 0

        def forward(self, x):
            self.a.calls += 1                                  # seen through self.b only when shared
            return self.b(x) * (self.b.calls + 1)

    counter = framejit.CompileCounter()
    compiled = framejit.compile(probe, backend=counter)
    x = randn(2, 4)
    for shared in (False, True, False, True):
        torch.manual_seed(0)
        m_e = Twice(shared)
        torch.manual_seed(0)
        m_c = Twice(shared)
        torch.testing.assert_close(compiled(m_c, x), probe(m_e, x))
        assert (m_c.a.calls, m_c.b.calls) == (m_e.a.calls, m_e.b.calls)
    assert counter.frame_count == 2


# ---- mutation of one instance between calls -------------------------------------------------------

def test_a_replaced_parameter_or_changed_attribute_of_one_instance_is_seen():
    counter = framejit.CompileCounter()
    compiled = framejit.compile(probe, backend=counter)
    a, b = _block(0), _block(1)
    x = randn(3, 8)
    for m in (a, b):
        torch.testing.assert_close(compiled(m, x), probe(m, x))
    a.up.weight = nn.Parameter(torch.randn(16, 8))              # same shape: the new values are used
    torch.testing.assert_close(compiled(a, x), probe(a, x))
    torch.testing.assert_close(compiled(b, x), probe(b, x))
    b.norm.eps = 0.25                                           # a hyperparameter the graph depends on
    torch.testing.assert_close(compiled(b, x), probe(b, x))
    torch.testing.assert_close(compiled(a, x), probe(a, x))
    a.down = nn.Linear(16, 8, bias=False)                       # a submodule replaced
    torch.testing.assert_close(compiled(a, x), probe(a, x))
    torch.testing.assert_close(compiled(b, x), probe(b, x))


def test_a_compiled_module_sees_changes_to_its_own_instance_after_a_copy_shared_the_entry():
    counter = framejit.CompileCounter()
    m = _block(0)
    twin = copy.deepcopy(m)
    cm, ct = framejit.compile(m, backend=counter), framejit.compile(twin, backend=counter)
    x = randn(3, 8)
    torch.testing.assert_close(cm(x), m(x))
    torch.testing.assert_close(ct(x), twin(x))
    twin.residual = False
    torch.testing.assert_close(ct(x), twin(x))
    torch.testing.assert_close(cm(x), m(x))
    with torch.no_grad():
        m.up.weight.add_(1.0)                                    # values: read on every call
    torch.testing.assert_close(cm(x), m(x))
    torch.testing.assert_close(ct(x), twin(x))


# ---- lifetime and limits --------------------------------------------------------------------------

def test_a_shared_entry_keeps_no_dead_instance_alive():
    counter = framejit.CompileCounter()
    compiled = framejit.compile(probe, backend=counter)
    x = randn(3, 8)
    gc.collect()
    gc.disable()
    try:
        refs = []
        for seed in range(3):
            m = _block(seed)
            compiled(m, x)
            refs.append((weakref.ref(m), weakref.ref(m.up.weight), weakref.ref(m.up)))
            del m
        for ref in refs:
            assert all(r() is None for r in ref)
        m = _block(5)
        cm = framejit.compile(m, backend=counter)
        cm(x)
        ref = weakref.ref(m), weakref.ref(m.up.weight)
        del m, cm
        assert all(r() is None for r in ref)
    finally:
        gc.enable()
    assert counter.frame_count == 2                             # probe, and Block.forward


def test_many_instances_that_each_need_an_entry_never_end_in_eager():
    from framejit.runtime.compiled import SHARED_CODE_LIMIT
    counter = framejit.CompileCounter()
    # dynamic=False: each instance's float eps must stay a constant of its own entry (automatic dynamic
    # would make it a graph input after one recompile, and all would share two entries)
    compiled = framejit.compile(probe, backend=counter, recompile_limit=2, dynamic=False)
    x = randn(3, 8)
    alive = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)          # no recompile-limit warning
        for k in range(SHARED_CODE_LIMIT * 2 + 4):
            m = _block(0, eps=0.1 * (k + 1))                   # each a graph of its own
            alive.append(m)
            torch.testing.assert_close(compiled(m, x), probe(m, x))
    assert compiled._framejit_state.eager_reason is None
    assert counter.frame_count == len(alive)


def test_the_recompile_reason_names_what_differs_in_the_other_instance():
    # dynamic=False: with automatic dynamic the reason also says the float eps is `now dynamic`
    compiled = framejit.compile(probe, backend=framejit.CompileCounter(), dynamic=False)
    x = randn(3, 8)
    compiled(_block(0), x)
    compiled(_block(0, eps=0.5), x)
    assert list(compiled._framejit_state.recompile_reasons) == ["recompiled probe: module.norm.eps changed 1e-05 -> 0.5"]


def _closure_over(module):
    def run(x):
        return module(x) + 1
    return run


def test_closures_over_other_instances_and_modules_in_star_args_share_the_entry():
    counter = framejit.CompileCounter()
    x = randn(3, 8)
    alive = []
    for seed in range(3):
        m = _block(seed)
        fn = framejit.compile(_closure_over(m), backend=counter)
        alive.append(fn)
        torch.testing.assert_close(fn(x), _closure_over(m)(x))
    assert counter.frame_count == 1

    def chain(x, *modules):
        for m in modules:
            x = m(x)
        return x

    counter = framejit.CompileCounter()
    compiled = framejit.compile(chain, backend=counter)
    for seed in range(3):
        a, b = _block(seed), _block(seed + 10)
        torch.testing.assert_close(compiled(x, a, b), chain(x, a, b))
    a = _block(0)
    torch.testing.assert_close(compiled(x, a, a), chain(x, a, a))      # one module twice: its own entry
    assert counter.frame_count == 2


def test_an_instance_whose_submodule_has_its_own_forward_does_not_share():
    def other():
        b = _block(0)
        b.up.forward = lambda x: torch.zeros(x.shape[0], 16)   # an instance-level forward wins in eager
        return b
    assert _differs(other) == 2


def test_a_forward_set_on_a_submodule_of_the_same_instance_is_seen():
    counter = framejit.CompileCounter()
    m = _block(0)
    compiled = framejit.compile(m, backend=counter)
    x = randn(3, 8)
    torch.testing.assert_close(compiled(x), m(x))
    m.up.forward = lambda x: torch.zeros(x.shape[0], 16)
    torch.testing.assert_close(compiled(x), m(x))
    del m.up.forward
    torch.testing.assert_close(compiled(x), m(x))


SPECIAL = _block(7)


def _is_special(m, x):
    return x + 1 if m is SPECIAL else x - 1


def _special_in(m, x):
    seen = {m: 1}
    return x + (1 if SPECIAL in seen else 0)


@pytest.mark.parametrize("fn", [_is_special, _special_in])
def test_an_instance_compared_with_a_global_module_of_its_class_does_not_share_when_it_is_that_module(fn):
    compiled = framejit.compile(fn, backend=framejit.CompileCounter())
    x = torch.zeros(2)
    for m in (_block(0), SPECIAL, _block(1), SPECIAL):
        torch.testing.assert_close(compiled(m, x), fn(m, x))
