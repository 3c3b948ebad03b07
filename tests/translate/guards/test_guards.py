"""Guards and the cache: what recompiles and what does not, the recompile limit and its warning."""
import warnings

import pytest
import torch

import framejit

SCALE = 2.0
WEIGHT = torch.ones(3)


def scaled(x):
    return x * SCALE + WEIGHT


def two(x, y):
    return x @ y


def compiled(fn, **kw):
    counter = framejit.CompileCounter()
    return framejit.compile(fn, backend=counter, **kw), counter


def test_same_inputs_do_not_recompile():
    f, c = compiled(two)
    for _ in range(5):
        f(torch.randn(2, 3), torch.randn(3, 4))
    assert c.frame_count == 1


@pytest.mark.parametrize("change", ["shape", "dtype", "requires_grad", "stride"])
def test_tensor_property_change_recompiles(change):
    f, c = compiled(two)
    x, y = torch.randn(2, 3), torch.randn(3, 4)
    f(x, y)
    if change == "shape":
        x = torch.randn(5, 3)
    elif change == "dtype":
        x, y = x.double(), y.double()
    elif change == "requires_grad":
        x = x.clone().requires_grad_(True)
    else:
        x = torch.randn(3, 2).t()
    out = f(x, y)
    assert torch.allclose(out, x @ y)
    assert c.frame_count == 2


def test_global_constant_change_recompiles():
    global SCALE
    f, c = compiled(scaled)
    x = torch.randn(3)
    f(x)
    f(x)
    assert c.frame_count == 1
    old = SCALE
    try:
        SCALE = 3.0
        assert torch.allclose(f(x), x * 3.0 + WEIGHT)
        assert c.frame_count == 2
    finally:
        SCALE = old


def test_global_tensor_replaced_recompiles_and_inplace_update_does_not():
    global WEIGHT
    f, c = compiled(scaled)
    x = torch.randn(3)
    f(x)
    WEIGHT.add_(1)                      # same tensor, new values: no recompile, new result
    assert torch.allclose(f(x), x * SCALE + WEIGHT)
    assert c.frame_count == 1
    old = WEIGHT
    try:
        WEIGHT = torch.zeros(3, dtype=torch.float64)
        assert torch.allclose(f(x), x * SCALE + WEIGHT)
        assert c.frame_count == 2
    finally:
        WEIGHT = old


def test_python_constant_argument_recompiles_only_when_it_changes():
    def f(x, n):
        return x * n

    cf, c = compiled(f)
    x = torch.randn(3)
    cf(x, 2)
    cf(x, 2)
    assert c.frame_count == 1
    assert torch.equal(cf(x, 3), x * 3)
    assert c.frame_count == 2
    assert torch.equal(cf(x, 2.0), x * 2.0)   # 2.0 is not 2: a different type recompiles
    assert c.frame_count == 3


def test_grad_mode_is_guarded():
    f, c = compiled(two)
    x, y = torch.randn(2, 3, requires_grad=True), torch.randn(3, 4)
    assert f(x, y).requires_grad
    with torch.no_grad():
        assert not f(x, y).requires_grad
    assert c.frame_count == 2


def test_recompile_limit_warns_once_naming_the_guard_and_runs_eagerly():
    f, c = compiled(two, recompile_limit=2, dynamic=False)     # static sizes: each new size recompiles
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 6):
            x, y = torch.randn(n, 3), torch.randn(3, 2)
            assert torch.allclose(f(x, y), x @ y)
    assert c.frame_count == 2
    limit = [w for w in caught if "recompile limit" in str(w.message)]
    assert len(limit) == 1
    assert "x.shape[0] changed" in str(limit[0].message)


def test_guards_are_readable_in_explain():
    out = framejit.explain(scaled)(torch.randn(3))
    text = "\n".join(out.guards)
    assert "x: Tensor" in text and "shape=[3]" in text
    assert "SCALE == 2.0" in text
    assert "WEIGHT: Tensor" in text


def test_dead_function_frees_its_cache():
    import gc
    import weakref

    namespace = {}
    exec("def inner(x):\n    return x + 1\n", namespace)   # a code object nothing else holds
    fn = namespace.pop("inner")
    cf = framejit.compile(fn)
    cf(torch.ones(1))
    ref = weakref.ref(fn.__code__)
    del fn, cf
    gc.collect()
    assert ref() is None


def test_global_torch_state_read_by_the_frame_is_guarded():
    def reads_state():
        return torch.is_grad_enabled(), torch.get_default_dtype()

    def makes_default_dtype_tensor(x):
        return x.double() + torch.ones(2)

    f, c = compiled(reads_state)
    assert f() == reads_state()
    with torch.no_grad():
        assert f() == reads_state()
    old = torch.get_default_dtype()
    g, _ = compiled(makes_default_dtype_tensor)
    x = torch.ones(2)
    g(x)
    try:
        torch.set_default_dtype(torch.float64)
        assert f() == reads_state()
        assert g(x).dtype == makes_default_dtype_tensor(x).dtype
    finally:
        torch.set_default_dtype(old)


def test_recompile_limit_is_per_function_not_per_shared_code():
    def decorate(inner):
        def wrapper(x):
            return inner(x) + 1
        return wrapper

    fns = [decorate(lambda x, k=k: x * k) for k in range(12)]     # twelve functions, one code object
    counter = framejit.CompileCounter()
    compiled = [framejit.compile(f, backend=counter, recompile_limit=2) for f in fns]
    x = torch.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                               # no "recompile limit" warning
        for f, c in zip(fns, compiled):
            assert torch.equal(c(x), f(x))
    assert counter.frame_count == 12


class BreakingLayer(torch.nn.Module):
    def __init__(self, index=0):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.index = index                # a value the graph depends on (as transformers' layer_idx can be)

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 1e9:                 # a data-dependent branch: the layer splits, and its model
            y = y * 0                     # calls it through its compiled wrapper
        return y.relu() + x + self.index


class DeepModel(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.layers = torch.nn.ModuleList(BreakingLayer(i) for i in range(n))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def test_the_recompile_limit_counts_per_module_instance_so_every_layer_keeps_its_graphs():
    torch.manual_seed(0)
    model = DeepModel(12)                 # more layers than the limit, each with its own `index`: entries of its own
    counter = framejit.CompileCounter()
    # dynamic=False: each layer's int `index` must stay a constant of its own entry (automatic dynamic
    # would make it a graph input after one recompile, and the layers would share two entries)
    compiled = framejit.compile(model, backend=counter, recompile_limit=4, dynamic=False)
    x = torch.randn(2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)               # no "recompile limit" warning
        torch.testing.assert_close(compiled(x), model(x))
        frames = counter.frame_count
        torch.testing.assert_close(compiled(x), model(x))
    assert frames >= 12 and counter.frame_count == frames


@pytest.mark.parametrize("make", [
    lambda: torch.randn(4, 3).t(),                  # same shape (3, 4), transposed strides
    lambda: torch.randn(3, 8)[:, ::2],              # same shape, strided
    lambda: torch.randn(1, 4).expand(3, 4),         # same shape, zero stride
    lambda: torch.randn(3, 1, 4).transpose(0, 1).reshape(1, 3, 4)[0],   # contiguous again
])
def test_strides_are_checked_exactly(make):
    def f(x):
        return x.contiguous().view(-1) * 2

    cf, c = compiled(f)
    base = torch.randn(3, 4)
    cf(base)
    other = make()
    assert other.shape == base.shape
    assert torch.equal(cf(other), f(other))
    expected = 1 if other.stride() == base.stride() else 2
    assert c.frame_count == expected


def test_size_one_dims_keep_exact_stride_checks():
    def f(x):
        return x + 1

    cf, c = compiled(f)
    a = torch.randn(1, 4)
    cf(a)
    b = torch.randn(4, 1).t()          # shape (1, 4), stride (1, 1): contiguous but different stride
    assert torch.equal(cf(b), f(b))
    assert c.frame_count == 2


def _scaled_by_default(x, a=2.0, b=None):
    return x * a if b is None else x * a + b


def test_replacing_an_inlined_functions_defaults_recompiles():
    def caller(x):
        return _scaled_by_default(x)

    cf, c = compiled(caller)
    x = torch.ones(2)
    assert torch.equal(cf(x), x * 2)
    old = _scaled_by_default.__defaults__
    try:
        _scaled_by_default.__defaults__ = (3.0, 1.0)
        assert torch.equal(cf(x), caller(x))
        assert c.frame_count == 2
    finally:
        _scaled_by_default.__defaults__ = old
    out = framejit.explain(caller)(x)
    assert not any("(default 0)" in g for g in out.guards)       # one guard on the tuple, not per item


def test_dead_function_with_a_graph_break_frees_its_cache():
    import gc
    import weakref

    namespace = {"torch": torch}
    exec("def broken(x):\n    y = x + 1\n    print('break')\n    return y * 2\n", namespace)
    fn = namespace.pop("broken")
    cf = framejit.compile(fn)
    cf(torch.ones(1))
    ref = weakref.ref(fn.__code__)
    del fn, cf, namespace
    gc.collect()
    assert ref() is None


def by_kinds(x, kinds):
    for k in kinds:
        if k is True:
            x = x + 1
        elif k is None:
            x = x * 3
        elif type(k) is str:
            x = x - len(k)
        elif type(k) is int:
            x = x * k
        else:
            x = x * 5                  # a str subclass: eager takes this branch, so must the compiled call
    return x


class Text(str):
    pass


@pytest.mark.parametrize("change", [
    lambda ks: ks.__setitem__(0, "abcd"),      # another value
    lambda ks: ks.__setitem__(1, 1),           # 1 == True, but another type
    lambda ks: ks.__setitem__(0, Text("ab")),  # an equal str of another type
    lambda ks: ks.append(2),                   # longer
    lambda ks: ks.pop(),                       # shorter
    lambda ks: ks.__setitem__(3, 0),           # None -> 0
], ids=["value", "bool_to_int", "str_subclass", "append", "pop", "none_to_int"])
def test_a_list_of_strings_ints_and_none_is_one_check_that_sees_every_change(change):
    from framejit.translate.guards.kinds.objects import native_same_atoms as _native_same_atoms
    f, c = compiled(by_kinds)
    x = torch.ones(2)
    kinds = ["ab", True, 3, None]
    torch.testing.assert_close(f(x, kinds), by_kinds(x, kinds))
    if _native_same_atoms() is not None:
        code = "\n".join(framejit.explain(by_kinds)(x, kinds).transformed_code)
        assert "len(kinds)" not in code and "kinds[0]" not in code, code    # one native call
    torch.testing.assert_close(f(x, list(kinds)), by_kinds(x, kinds))      # an equal list: no recompile
    assert c.frame_count == 1
    change(kinds)
    torch.testing.assert_close(f(x, kinds), by_kinds(x, kinds))
    assert c.frame_count == 2
    torch.testing.assert_close(f(x, tuple(kinds)), by_kinds(x, tuple(kinds)))   # a tuple is another type
