"""Differential tests: modules built inside forward, and tensors stored on a module in forward
(translate/values/modules/module_init_purity.py, modules.fresh_module, context.store_object_attr).

A library's or user's parameterless module class whose __init__ is pure (transformers' `ACT2FN["gelu"]`
builds a GELUActivation on every access: DeBERTa-v2's pooler) is made once at translation: one graph,
no recompile on the next call. An __init__ with effects outside the new object (printing, registering
itself in a global list, reading a global flag) is still run by the program itself, exactly. A tensor
assigned to a plain module attribute in forward (Phi-3 longrope's `self.long_inv_freq = ...`) is a side
effect replayed after the graph: the module holds eager's tensor after the call.
"""
import copy

import pytest
import torch

import framejit
from tests.differential import CASE_FIELDS, case, randn, run_case

activations = pytest.importorskip("transformers.activations")
x3 = randn(3, seed=1)
ONE = dict(graphs=1, breaks=0)
REGISTRY = []
FLAG = {"on": True}


class Scaled(torch.nn.Module):
    def __init__(self, factor=2.0, use_tanh=False):
        super().__init__()
        self.factor = factor
        self.act = torch.tanh if use_tanh else torch.sigmoid

    def forward(self, x):
        return self.act(x) * self.factor


class Registered(torch.nn.Module):
    def __init__(self):
        super().__init__()
        REGISTRY.append(1)                     # an effect outside the new object


class Loud(torch.nn.Module):
    def __init__(self):
        super().__init__()
        print("made")

    def forward(self, x):
        return x + 1


class FlagReader(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.on = FLAG["on"]                  # reads state that can change

    def forward(self, x):
        return x * 2 if self.on else x


def user_module_made_in_forward(x):
    return Scaled()(x) + Scaled(3.0, use_tanh=True)(x)


def hf_activation_made_in_forward(x):
    return activations.ACT2FN["gelu"](x) + activations.ACT2FN["gelu_new"](x)


def impure_inits_stay_exact(x):
    Registered()
    return Loud()(x) + FlagReader()(x) + len(REGISTRY)


@pytest.mark.parametrize(CASE_FIELDS, [
    case(user_module_made_in_forward, x3, **ONE),
    case(hf_activation_made_in_forward, x3, **ONE),
    case(impure_inits_stay_exact, x3),
])
def test_modules_made_in_forward(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


class LongRope(torch.nn.Module):
    """Phi-3's longrope pattern: a plain tensor attribute made on the first call, re-assigned after."""

    def __init__(self):
        super().__init__()
        self.register_buffer("inv_freq", torch.arange(4.0))

    def forward(self, x):
        long_inv_freq = getattr(self, "long_inv_freq", None)
        if long_inv_freq is None:
            long_inv_freq = self.inv_freq * 2
        self.long_inv_freq = long_inv_freq.to(x.device)
        self.calls = x.sum()
        return x[:, None] * self.long_inv_freq


def test_a_tensor_stored_on_the_module_in_forward_is_one_graph_and_visible_after_the_call():
    eager_module = LongRope()
    compiled_source = copy.deepcopy(eager_module)
    explained = framejit.explain(copy.deepcopy(eager_module))(x3)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons
    compiled = framejit.compile(compiled_source)
    for seed in (1, 2, 3):
        x = randn(3, seed=seed)
        torch.testing.assert_close(compiled(x), eager_module(x))
        torch.testing.assert_close(compiled_source.long_inv_freq, eager_module.long_inv_freq)
        torch.testing.assert_close(compiled_source.calls, eager_module.calls)
    assert "long_inv_freq" in compiled_source.__dict__ and "long_inv_freq" not in compiled_source._buffers


# ---- a wrapper of nn.Module.__init__ installed by someone else -------------------------------------

def test_modules_made_in_forward_convert_once_after_torch_compile_wrapped_module_init():
    # torch.compile, once it runs anything, replaces nn.Module.__init__ for the rest of the process with
    # a wrapper tagging each new module in its own table (nothing the program sees): the purity check
    # took that wrapper for an effect of every user __init__, so after any torch.compile in the process
    # (a test comparing with it) each such module was a graph break again
    torch.compile(torch.nn.Identity(), backend="eager")(x3)
    assert torch.nn.Module.__init__.__code__.co_filename.endswith("mutation_guard.py")      # the wrapper
    run_case(user_module_made_in_forward, (x3,), {}, ONE)
    run_case(hf_activation_made_in_forward, (x3,), {}, ONE)

CONSTRUCTED = []


def counting_user_modules(x):
    before = len(CONSTRUCTED)
    y = Scaled()(x) + Scaled(3.0, use_tanh=True)(x)
    return y + (len(CONSTRUCTED) - before)


def test_a_users_own_wrapper_of_module_init_with_an_effect_keeps_each_construction():
    # the neighbour that must stay exact: a wrapper of nn.Module.__init__ that is not torch's records
    # every construction in a global list; building the module once at translation would lose the count,
    # and the purity check must not run it at translation either (it did: one more entry than eager)
    module_init = torch.nn.Module.__init__

    def recording_init(self, *args, **kwargs):
        module_init(self, *args, **kwargs)
        CONSTRUCTED.append(type(self).__name__)

    torch.nn.Module.__init__ = recording_init
    try:
        run_case(counting_user_modules, (x3,), {}, {})
    finally:
        torch.nn.Module.__init__ = module_init
        CONSTRUCTED.clear()


def _register(module):
    CONSTRUCTED.append(type(module).__name__)


class SelfRegistering(torch.nn.Module):
    def __init__(self):
        super().__init__()
        _register(self)                       # a helper with an effect: seen only when it is called

    def forward(self, x):
        return x * 2


def self_registering_made_in_forward(x):
    before = len(CONSTRUCTED)
    y = SelfRegistering()(x)
    return y + (len(CONSTRUCTED) - before)


def test_an_init_calling_a_helper_with_an_effect_runs_it_only_in_the_program():
    try:
        run_case(self_registering_made_in_forward, (x3,), {}, {})
    finally:
        CONSTRUCTED.clear()
