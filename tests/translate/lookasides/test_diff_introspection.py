"""Differential tests: tensor introspection, constant sequence arithmetic, grad mode set as a function,
id() of identity-guarded objects.

Tensor.type() (name, dtype and string forms), is_nested, x.__class__.__name__, type(x).__name__ in
conditions; `(1, 2) + tuple_of_values` with tensors around; `torch.set_grad_enabled(False)` and
`torch._C._set_grad_enabled` called as functions (the mode stays switched after the call, as eagerly;
gradients compared); `id(module)` used as a cache key.
"""
import pytest
import torch

from tests.differential import CASE_FIELDS, case, check, randn, run_case

ONE = dict(fullgraph=True, graphs=1)

x34 = randn(3, 4, seed=1)
g34 = randn(3, 4, seed=2, requires_grad=True)
i34 = torch.arange(12).reshape(3, 4)


def tensor_type_forms(x):
    name = x.type()
    d = x.type(torch.float64)
    same = x.type(torch.float32)
    s = x.type("torch.IntTensor")
    return name, d, same is x, s, d.type()


def tensor_type_in_condition(x):
    if x.type() == "torch.LongTensor":
        return x * 2
    return x + 1


def nested_and_class_names(x):
    out = x + 1
    if not x.is_nested and x.__class__.__name__ == "Tensor" and type(x).__name__ == "Tensor":
        out = out * 2
    return out, x.__class__ is torch.Tensor


def parameter_class_name(p, x):
    return x * 2 if p.__class__.__name__ == "Parameter" else x


def constant_tuple_plus_values(x):
    shape = (1, 2) + tuple(x.shape)
    t = (1, 2) + (3,)
    more = [0] + list(x.shape)
    return x.reshape(shape[2:]) * len(t * 2), shape, more, torch.Size([2]) + tuple(x.shape)


def set_grad_enabled_as_function(x):
    torch.set_grad_enabled(False)
    y = x * 2
    torch.set_grad_enabled(True)
    return y * x, y.requires_grad


def set_grad_enabled_left_off(x):
    y = x.sin()
    torch.set_grad_enabled(False)
    z = y * 2
    return y, z, torch.is_grad_enabled()


def c_set_grad_enabled(x):
    torch._C._set_grad_enabled(False)
    y = x.cos()
    torch._C._set_grad_enabled(True)
    return y + x


LAYER = torch.nn.Linear(4, 4)
SEEN = {}


def id_of_module_as_key(x):
    key = id(LAYER)
    SEEN[key] = SEEN.get(key, 0) + 1
    return LAYER(x), key == id(LAYER)


CASES = [
    case(tensor_type_forms, x34, **ONE),
    case(tensor_type_in_condition, i34, **ONE),
    case(nested_and_class_names, x34, **ONE),
    case(parameter_class_name, torch.nn.Parameter(randn(2)), x34, **ONE),
    case(constant_tuple_plus_values, x34, **ONE),
    case(set_grad_enabled_as_function, g34, grads=True, **ONE),
    case(set_grad_enabled_left_off, g34, **ONE),
    case(set_grad_enabled_left_off, g34, backend="aot_eager", **ONE, name="left_off_aot_eager"),
    case(c_set_grad_enabled, g34, grads=True, **ONE),
    case(id_of_module_as_key, x34, **ONE),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    try:
        run_case(fn, args, kwargs, options)
    finally:
        torch.set_grad_enabled(True)


def test_set_grad_enabled_graph_count_matches_torch_compile():
    import torch._dynamo

    torch._dynamo.reset()
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch.compile(set_grad_enabled_as_function, backend=counting)(g34.detach().clone().requires_grad_())
    torch._dynamo.reset()
    check(set_grad_enabled_as_function, g34, graphs=len(graphs), fullgraph=True)


class Plugin:
    pass


class FirstPlugin(Plugin):
    pass


def count_plugins(x):
    names = [c.__name__ for c in Plugin.__subclasses__()]
    return x * len(names), names


def test_subclasses_in_one_graph():
    check(count_plugins, x34, **ONE)


def test_subclasses_noticed_when_a_class_appears():
    from tests.differential import check_script, outcome

    import gc

    def script(f):
        gc.collect()                # a class made by the eager run is gone before the compiled run
        seen = [outcome(f, x34)]
        extra = type("SecondPlugin", (Plugin,), {})
        seen.append(outcome(f, x34))
        del extra
        gc.collect()
        seen.append(outcome(f, x34))
        return seen

    check_script(count_plugins, script)


import functools

SCALE = [2]


@functools.lru_cache(maxsize=None)
def cached_scale(n):
    return n * SCALE[0]


def uses_lru_cache(x):
    return x * cached_scale(3)


def test_lru_cache_call_matches_eager_including_stale_entries():
    """The cache is state: a stale entry (SCALE changed after it was filled) is what eager returns, and
    after cache_clear() the function answers anew. The call is answered at translation and guarded by
    calling it again (lookasides/lru_cached_calls.py); its hit counters (cache_info) are not reproduced."""
    from tests.differential import check_script, outcome

    def script(f):
        cached_scale.cache_clear()
        seen = [outcome(f, x34)]
        SCALE[0] = 5                 # the cached entry for 3 is stale now, and eager still returns it
        seen.append(outcome(f, x34))
        cached_scale.cache_clear()
        seen.append(outcome(f, x34))
        SCALE[0] = 2
        return seen

    check_script(uses_lru_cache, script)
