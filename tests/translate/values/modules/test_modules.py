"""nn.Module calls inside a compiled frame: hooks, containers, attributes, buffers, guards.

Each test builds a small module, runs it eagerly and through framejit, and checks the outputs (and
graph/break counts); the guard tests then change the module the way users do (train/eval, a new
hook, a replaced parameter or submodule, requires_grad) and check the compiled call notices.
"""
import copy

import pytest
import torch
import torch.nn as nn

import framejit
from tests.differential import check, randn

ONE = dict(graphs=1, breaks=0)


def _seeded(factory):
    torch.manual_seed(0)
    return factory()


class Block(nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.act = nn.GELU()

    def forward(self, x):
        return self.act(self.lin(x)) + x


class Containers(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Block() for _ in range(3)])
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 2)})
        self.register_buffer("scale", torch.arange(4.0))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        x = x + self.layers[-1](x) + self.layers[0](x)
        for layer in self.layers[1:]:
            x = layer(x)
        x = self.seq(x) * self.scale + self.seq[1:](x)
        outs = [self.heads[k](x) for k in self.heads]
        outs += [head(x) for name, head in self.heads.items() if name != "a"]
        outs.append(torch.full((1,), float(len(self.layers) + len(self.seq) + ("a" in self.heads))))
        return outs


CONTAINERS = _seeded(Containers)


def test_module_containers_iterate_index_slice_len_contains():
    def fn(x):
        return CONTAINERS(x)
    check(fn, randn(2, 4), **ONE)


SHARED = _seeded(lambda: nn.Linear(4, 4))


def test_submodule_called_several_times_shares_its_parameters():
    def fn(x):
        return SHARED(SHARED(x)) + SHARED(x)
    out = check(fn, randn(3, 4), **ONE)
    assert out.shape == (3, 4)


class TrainFlag(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.0)

    def forward(self, x):
        y = self.drop(self.lin(x))
        return y * 2 if self.training else y - 1


def test_training_flag_is_a_guarded_constant():
    m = _seeded(TrainFlag).eval()
    compiled = framejit.compile(m, backend=framejit.CompileCounter())
    x = randn(2, 4)
    torch.testing.assert_close(compiled(x), m(x))
    m.train()
    torch.testing.assert_close(compiled(x), m(x))
    m.eval()
    torch.testing.assert_close(compiled(x), m(x))
    assert type(compiled).forward._framejit_state.conversions == 2


def test_batchnorm_updates_running_stats_in_place_like_eager():
    eager = _seeded(lambda: nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))).train()
    compiled_model = copy.deepcopy(eager)
    compiled = framejit.compile(compiled_model)
    for seed in range(3):
        x = randn(8, 4, seed=seed)
        torch.testing.assert_close(compiled(x), eager(x))
    bn_e, bn_c = eager[1], compiled_model[1]
    torch.testing.assert_close(bn_c.running_mean, bn_e.running_mean)
    torch.testing.assert_close(bn_c.running_var, bn_e.running_var)
    assert bn_c.num_batches_tracked.item() == bn_e.num_batches_tracked.item() == 3
    assert type(compiled).forward._framejit_state.conversions == 1


class Doubler(nn.Module):
    def forward(self, x, scale=1.0):
        return x * 2 * scale


def _hooked():
    m = Doubler()
    m.register_forward_pre_hook(lambda mod, args: (args[0] + 1,))
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {**kwargs, "scale": 3.0}), with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: out - args[0])
    m.register_forward_hook(lambda mod, args, kwargs, out: out * kwargs["scale"], with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: None)
    return m


HOOKED = _hooked()


def test_forward_pre_hooks_and_hooks_run_in_order_with_and_without_kwargs():
    def fn(x):
        return HOOKED(x)
    check(fn, randn(2, 3), **ONE)


def test_a_hook_registered_after_compiling_is_noticed_and_removing_it_too():
    m = Doubler()
    compiled = framejit.compile(m)
    x = randn(2, 3)
    torch.testing.assert_close(compiled(x), m(x))
    handle = m.register_forward_hook(lambda mod, args, out: out + 100)
    torch.testing.assert_close(compiled(x), m(x))
    handle.remove()
    torch.testing.assert_close(compiled(x), m(x))
    assert compiled(x).max() < 50


def test_hook_calls_in_nested_modules():
    inner = Doubler()
    calls = []

    def record(mod, args, out):
        return out + 1

    inner.register_forward_hook(record)
    outer = nn.Sequential(nn.Linear(3, 3), inner)
    torch.manual_seed(0)

    def fn(x):
        return outer(x)
    check(fn, randn(2, 3), **ONE)
    assert not calls


class CustomCall(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.enabled = True

    def __call__(self, *args, **kwargs):
        if not self.enabled:
            return args[0]
        return nn.Module.__call__(self, *args, **kwargs) + 1

    def forward(self, x):
        return self.lin(x)


CUSTOM = _seeded(CustomCall)


def test_a_python_call_override_is_inlined():
    def fn(x):
        return CUSTOM(x) * 2
    check(fn, randn(2, 3), **ONE)


def test_an_instance_level_forward_wins_over_the_class_forward():
    m = _seeded(lambda: nn.Linear(3, 3))
    m.forward = lambda x: x * 5

    def fn(x):
        return m(x)
    check(fn, randn(2, 3), **ONE)


class Regularized(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = nn.Sequential(nn.Linear(3, 3), nn.LayerNorm(3))
        self.register_buffer("offset", torch.ones(3))

    def forward(self, x):
        y = self.b(self.a(x)) + self.offset
        reg = sum((p ** 2).sum() for p in self.parameters())
        names = [n for n, _ in self.named_parameters()]
        n_buffers = len(list(self.buffers()))
        n_modules = len([m for m in self.modules()]) + len(list(self.children()))
        return y, reg, len(names) + n_buffers + n_modules, [n for n, _ in self.named_children()]


REGULARIZED = _seeded(Regularized)


def test_parameters_named_parameters_buffers_modules_children():
    def fn(x):
        return REGULARIZED(x)
    check(fn, randn(2, 3), **ONE)


def test_parameters_buffers_and_inputs_get_gradients_like_eager():
    def fn(x):
        return CONTAINERS(x)
    check(fn, randn(2, 4, requires_grad=True), grads=True, **ONE)
    eager_model = copy.deepcopy(CONTAINERS)
    compiled_model = copy.deepcopy(CONTAINERS)
    x = randn(2, 4)
    sum(o.sum() for o in eager_model(x)).backward()
    sum(o.sum() for o in framejit.compile(compiled_model)(x)).backward()
    for (name, pe), (_, pc) in zip(eager_model.named_parameters(), compiled_model.named_parameters()):
        torch.testing.assert_close(pc.grad, pe.grad, msg=name)


class Configured(nn.Module):
    class Config:
        def __init__(self):
            self.hidden = 4
            self.act = "relu"
            self.extra = None

    def __init__(self):
        super().__init__()
        self.config = self.Config()
        self.lin = nn.Linear(self.config.hidden, self.config.hidden)

    def forward(self, x):
        act = getattr(torch, getattr(self.config, "act", "tanh"))
        y = act(self.lin(x))
        if getattr(self.config, "extra", None) is not None:
            y = y + 1
        return y * self.config.hidden


def test_config_attributes_are_read_and_guarded():
    m = _seeded(Configured)
    compiled = framejit.compile(m)
    x = randn(2, 4)
    torch.testing.assert_close(compiled(x), m(x))
    m.config.extra = 1
    torch.testing.assert_close(compiled(x), m(x))
    m.config.act = "sigmoid"
    torch.testing.assert_close(compiled(x), m(x))


# ---- what the guards must notice --------------------------------------------------------------------

def _compiled_block():
    m = _seeded(Block)
    counter = framejit.CompileCounter()
    return m, framejit.compile(m, backend=counter), counter


def test_a_replaced_parameter_is_used_on_the_next_call():
    m, compiled, counter = _compiled_block()
    x = randn(2, 4)
    compiled(x)
    m.lin.weight = nn.Parameter(torch.ones(4, 4))
    torch.testing.assert_close(compiled(x), m(x))


def test_a_reshaped_parameter_recompiles():
    m, compiled, counter = _compiled_block()
    x = randn(2, 4)
    compiled(x)
    with torch.no_grad():
        m.lin.weight.data = torch.ones(4, 4).t().contiguous()[:, :4]
        m.lin.weight.data = torch.ones(4, 8)[:, ::2]
    torch.testing.assert_close(compiled(x), m(x))
    assert counter.frame_count == 2


def test_a_swapped_submodule_is_used_on_the_next_call():
    m, compiled, counter = _compiled_block()
    x = randn(2, 4)
    compiled(x)
    m.act = nn.Tanh()
    torch.testing.assert_close(compiled(x), m(x))
    assert counter.frame_count == 2


def test_requires_grad_flip_recompiles_and_grads_follow():
    m, compiled, counter = _compiled_block()
    x = randn(2, 4)
    compiled(x).sum().backward()
    assert m.lin.weight.grad is not None
    m.lin.weight.grad = None
    m.lin.weight.requires_grad_(False)
    out = compiled(x)
    assert counter.frame_count == 2
    out.sum().backward()
    assert m.lin.weight.grad is None and m.lin.bias.grad is not None


def test_a_deleted_and_appended_modulelist_entry_changes_the_unrolled_loop():
    m = _seeded(Containers)
    compiled = framejit.compile(m)
    x = randn(2, 4)
    compiled(x)
    m.layers.append(_seeded(Block))
    for a, b in zip(compiled(x), m(x)):
        torch.testing.assert_close(a, b)
    del m.layers[0]
    for a, b in zip(compiled(x), m(x)):
        torch.testing.assert_close(a, b)


def test_compiling_predicates():
    def fn(x):
        a = torch.compiler.is_compiling()
        b = torch.compiler.is_dynamo_compiling()
        c = torch.jit.is_scripting() or torch.jit.is_tracing()
        d = torch.compiler.is_exporting()
        return x + (10 * a + 100 * b + 1000 * c + 10000 * d)
    compiled = framejit.compile(fn)
    assert compiled(torch.zeros(1)).item() == 110
    assert fn(torch.zeros(1)).item() == 0


# ---- the module watch (translate/guards/module_guards.py / translate/guards/module_watch.py) ------------------------------------------

def test_steady_calls_do_not_move_the_module_epoch_and_unrelated_modules_do_not_either():
    from framejit.translate.guards.module_watch import EPOCH
    m, compiled, counter = _compiled_block()
    x = randn(2, 4)
    compiled(x)
    before = EPOCH[0]
    for _ in range(3):
        compiled(x)
    nn.Linear(3, 3).weight.requires_grad_(False)          # not watched: no effect
    assert EPOCH[0] == before


def test_requires_grad_attribute_assignment_recompiles():
    m, compiled, counter = _compiled_block()
    x = randn(2, 4)
    compiled(x)
    m.lin.bias.requires_grad = False
    out = compiled(x)
    assert counter.frame_count == 2
    out.sum().backward()
    assert m.lin.bias.grad is None and m.lin.weight.grad is not None


def test_module_to_another_dtype_is_noticed():
    m, compiled, counter = _compiled_block()
    compiled(randn(2, 4))
    m.to(torch.float64)
    x = randn(2, 4, dtype=torch.float64)
    torch.testing.assert_close(compiled(x), m(x))
    assert counter.frame_count == 2


def test_moduledict_pop_is_noticed():
    class Heads(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleDict({"a": nn.Linear(3, 3), "b": nn.Linear(3, 3)})

        def forward(self, x):
            return sum(h(x) for h in self.heads.values())

    m = _seeded(Heads)
    compiled = framejit.compile(m)
    x = randn(2, 3)
    torch.testing.assert_close(compiled(x), m(x))
    m.heads.pop("a")
    torch.testing.assert_close(compiled(x), m(x))


def test_a_reshaped_buffer_is_checked_on_every_call():
    class WithBuffer(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scale", torch.ones(4))

        def forward(self, x):
            return x * self.scale

    m = WithBuffer()
    counter = framejit.CompileCounter()
    compiled = framejit.compile(m, backend=counter)
    torch.testing.assert_close(compiled(randn(2, 4)), randn(2, 4))
    m.scale.data = torch.full((2, 1), 3.0)              # plain tensors: metadata is not watched, it is guarded
    x = randn(2, 4)
    torch.testing.assert_close(compiled(x), x * 3)
    assert counter.frame_count == 2


def test_a_parameter_replaced_through_the_original_module_of_a_compiled_module_is_noticed():
    m = _seeded(Block)
    compiled = framejit.compile(m)              # a new object sharing m.__dict__
    x = randn(2, 4)
    compiled(x)
    m.lin = nn.Linear(4, 4)
    torch.testing.assert_close(compiled(x), m(x))


def test_global_forward_hooks_run_before_the_module_hooks_and_removal_is_noticed():
    from torch.nn.modules import module as torch_module
    m = Doubler()
    m.register_forward_hook(lambda mod, args, out: out * 10)
    compiled = framejit.compile(m)
    x = randn(2, 3)
    torch.testing.assert_close(compiled(x), m(x))
    pre = torch_module.register_module_forward_pre_hook(lambda mod, args: (args[0] + 1,))
    post = torch_module.register_module_forward_hook(lambda mod, args, out: out - 1)
    try:
        expected = m(x)
        torch.testing.assert_close(compiled(x), expected)
        explained = framejit.explain(m)(x)
        assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    finally:
        pre.remove()
        post.remove()
    torch.testing.assert_close(compiled(x), m(x))


def test_a_global_hook_registered_after_compiling_runs_for_inlined_submodules():
    from torch.nn.modules import module as torch_module
    m = _seeded(Block)
    compiled = framejit.compile(m)
    x = randn(2, 4)
    compiled(x)

    def called(mod, args, out):
        seen.append(type(mod).__name__)
    for run in (m, compiled, framejit.compile(lambda x: m(x))):
        seen = []
        handle = torch_module.register_module_forward_hook(called)
        try:
            run(x)
        finally:
            handle.remove()
        assert seen == ["Linear", "GELU", "Block"], (run, seen)


class Resetting(nn.Module):
    """Re-assigns plain attributes in forward, like transformers' Swin layers."""

    def __init__(self):
        super().__init__()
        self.shift = 0
        self.scale = 2

    def forward(self, x, shift):
        y = x * self.scale
        self.shift = shift if x.shape[0] > 100 else 0
        return y + self.shift


def test_a_forward_reassigning_the_same_attribute_value_keeps_the_fast_path():
    from framejit.translate.guards.module_watch import EPOCH
    m = Resetting()
    compiled = framejit.compile(m)
    x = randn(2, 3)
    torch.testing.assert_close(compiled(x, 5), m(x, 5))
    before = EPOCH[0]
    for _ in range(3):
        torch.testing.assert_close(compiled(x, 5), x * 2)
    assert EPOCH[0] == before and m.shift == 0
    m.scale = 3                                  # a real change is still noticed
    assert EPOCH[0] != before
    torch.testing.assert_close(compiled(x, 5), x * 3)


class ResettingInner(nn.Module):
    """Holds a submodule whose attribute forward re-assigns, and one counting its own stores."""

    def __init__(self):
        super().__init__()
        self.inner = Resetting()

    def forward(self, x):
        self.inner.shift = 0
        return x * self.inner.scale + self.inner.shift


STORES = []


class CountingStores(Resetting):
    def __setattr__(self, name, value):
        STORES.append(name)
        super().__setattr__(name, value)


def test_reassigned_submodule_attributes_are_stored_to_the_current_submodule_and_real_changes_kept():
    m = ResettingInner()
    compiled = framejit.compile(m)
    x = randn(2, 3)
    torch.testing.assert_close(compiled(x), x * 2)
    torch.testing.assert_close(compiled(x), x * 2)
    m.inner.shift = 7                            # the next call must set it back
    torch.testing.assert_close(compiled(x), x * 2)
    assert m.inner.shift == 0
    old = m.inner
    m.inner = Resetting()                        # the store goes to the new submodule
    m.inner.shift, m.inner.scale = 9, 4
    torch.testing.assert_close(compiled(x), x * 4)
    assert m.inner.shift == 0 and old.shift == 0


def test_a_module_with_its_own_setattr_sees_every_store():
    m = CountingStores()
    compiled = framejit.compile(m)
    x = randn(2, 3)
    STORES.clear()
    m(x, 5)
    eager_stores = list(STORES)
    compiled(x, 5)
    STORES.clear()
    for _ in range(3):
        torch.testing.assert_close(compiled(x, 5), x * 2)
    assert STORES == 3 * eager_stores and eager_stores == ["shift"]


def test_inputs_of_one_type_are_still_checked_for_aliasing_when_other_types_are_not():
    def f(a, b, d, t):
        a.append(1.0)
        d["n"] = len(b)
        return t * len(b)

    compiled = framejit.compile(f)
    t = torch.ones(2)
    for make in (lambda: ([], [], {}), lambda: ([0.0],) * 2 + ({},), lambda: ([], [], {})):
        eager_args, compiled_args = make(), make()
        expected = f(*eager_args, t)
        got = compiled(*compiled_args, t)
        torch.testing.assert_close(got, expected)
        assert compiled_args[2] == eager_args[2] and compiled_args[1] == eager_args[1]


class ClassCounter(nn.Module):
    calls = 0

    def forward(self, x):
        type(self).calls += 1
        assert type(self) is ClassCounter
        return x * type(self).calls


def test_forward_runs_on_the_compiled_module_itself_and_class_attributes_read_through_type_are_guarded():
    m = ClassCounter()
    compiled = framejit.compile(m)
    x = randn(2, 3)
    ClassCounter.calls = 0
    eager = [m(x) for _ in range(3)]
    ClassCounter.calls = 0
    got = [compiled(x) for _ in range(3)]
    for a, b in zip(got, eager):
        torch.testing.assert_close(a, b)
    assert ClassCounter.calls == 3


def test_a_class_attribute_read_through_type_of_an_argument_is_guarded():
    class Config:
        scale = 2.0

    def f(obj, x):
        return x * type(obj).scale

    compiled = framejit.compile(f)
    obj, x = Config(), randn(3)
    torch.testing.assert_close(compiled(obj, x), x * 2.0)
    Config.scale = 5.0
    torch.testing.assert_close(compiled(obj, x), x * 5.0)


def test_global_hooks_with_kwargs_run_and_their_removal_leaves_the_plain_path():
    from torch.nn.modules import module as torch_module
    m = _seeded(Block)
    compiled = framejit.compile(m)
    x = randn(2, 4)
    torch.testing.assert_close(compiled(x), m(x))
    seen = []
    handle = torch_module.register_module_forward_hook(
        lambda mod, args, kwargs, out: seen.append((type(mod).__name__, kwargs)), with_kwargs=True)
    try:
        compiled(x)
        compiled_seen, seen[:] = list(seen), []
        m(x)
        assert compiled_seen == seen and seen
    finally:
        handle.remove()
    assert torch_module._global_forward_hooks_with_kwargs              # torch leaves the id behind
    seen.clear()
    torch.testing.assert_close(compiled(x), m(x))
    assert seen == []


# ---- torch.nn modules made inside the frame ---------------------------------------------------------

def loss_made_in_forward(logits, labels):
    loss_fct = nn.CrossEntropyLoss()                   # as transformers' heads compute their loss
    smooth = nn.CrossEntropyLoss(reduction="sum", ignore_index=1, label_smoothing=0.1)
    act = nn.GELU(approximate="tanh")
    return loss_fct(act(logits), labels) + smooth(logits, labels) + nn.MSELoss()(logits, logits.tanh())


def test_a_loss_module_made_in_the_frame_is_inlined_in_one_graph_with_eager_gradients():
    check(loss_made_in_forward, randn(4, 3, requires_grad=True), torch.tensor([0, 2, 1, 1]), grads=True, **ONE)


def returns_a_fresh_module(x):
    drop = nn.Dropout(0.0)
    return drop(x) * 2, drop


def test_a_module_made_in_the_frame_that_escapes_is_a_new_object_on_every_call():
    counter = framejit.CompileCounter()
    f = framejit.compile(returns_a_fresh_module, backend=counter)
    x = torch.randn(3)
    (a, drop_a), (_, drop_b) = f(x), f(x)
    torch.testing.assert_close(a, x * 2)
    assert type(drop_a) is nn.Dropout and drop_a.p == 0.0 and drop_a.training
    assert drop_a is not drop_b                     # eager makes one per call too
    assert counter.frame_count == 1


def stores_into_a_fresh_module(x):
    act = nn.ReLU()
    act.scale = 2.0
    return act(x) * act.scale


def makes_a_module_with_parameters(x):
    torch.manual_seed(0)                    # (eager draws its weights; framejit must not draw more)
    return nn.Linear(3, 3)(x)


@pytest.mark.parametrize("fn", [stores_into_a_fresh_module, makes_a_module_with_parameters])
def test_modules_made_in_the_frame_that_cannot_be_inlined_still_run_as_in_eager(fn):
    # a graph break where the new module is live: the resume function is guarded on that module's
    # identity, so these recompile on every call (up to the limit) but must still match eager
    f = framejit.compile(fn)
    x = torch.randn(2, 3)
    for _ in range(3):
        got, want = f(x), fn(x)
        torch.testing.assert_close(got, want)


def test_a_global_buffer_registration_hook_still_sees_every_loss_module_made():
    from torch.nn.modules.module import register_module_buffer_registration_hook
    seen = []
    counter = framejit.CompileCounter()
    f = framejit.compile(loss_made_in_forward, backend=counter)
    logits, labels = torch.randn(4, 3), torch.tensor([0, 2, 1, 1])
    torch.testing.assert_close(f(logits, labels), loss_made_in_forward(logits, labels))
    handle = register_module_buffer_registration_hook(lambda module, name, buffer: seen.append(name))
    try:
        got = [f(logits, labels) for _ in range(2)]
        by_compiled = list(seen)
        want = loss_made_in_forward(logits, labels)
    finally:
        handle.remove()
    for g in got:
        torch.testing.assert_close(g, want)
    assert by_compiled == ["weight"] * 4                # two weighted losses per call, as in eager:
    assert seen[4:] == ["weight"] * 2


def test_a_module_with_weights_made_in_the_frame_is_not_built_at_translation():
    import warnings

    from framejit.observe.conversion import GlobalStateChanged
    f = framejit.compile(makes_a_module_with_parameters)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GlobalStateChanged)   # building it would draw from the RNG
        torch.testing.assert_close(f(torch.ones(2, 3)), makes_a_module_with_parameters(torch.ones(2, 3)))
