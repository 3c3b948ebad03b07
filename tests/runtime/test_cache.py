"""The compile cache (runtime/cache.py): keyed by identity, owned by the compiled functions, bounded.

* Equal code objects are different functions: the same source exec'd into two globals must not share
  entries (nor read each other's globals).
* A compiled function that dies frees its graphs; its inputs and modules are freed when the call
  returns, as in eager (no reference cycle waiting for the cyclic GC).
* No cap on shared entries sends a new module instance or closure to plain Python for good, and
  framejit.reset() makes every function convert again, leaving nothing behind.
"""
import gc
import linecache
import warnings
import weakref

import pytest
import torch

import framejit
from framejit.runtime import cache
from tests.differential import check_together, randn

SOURCE = "def f(x):\n    return x * K + K\n"
SOURCE_WITH_BREAK = "def f(x):\n    y = x * K\n    print(end='')\n    return y + K\n"


def _exec_twice(source):
    first, second = {"K": 2.0}, {"K": 3.0}
    exec(source, first)
    exec(source, second)
    assert first["f"].__code__ == second["f"].__code__ and first["f"].__code__ is not second["f"].__code__
    return first["f"], second["f"]


@pytest.mark.parametrize("source", [SOURCE, SOURCE_WITH_BREAK], ids=["plain", "break"])
def test_equal_code_objects_exec_d_into_different_globals_do_not_share_entries(source):
    check_together(list(_exec_twice(source)), randn(3))


def test_equal_code_objects_as_callees_that_break():
    first, second = _exec_twice(SOURCE_WITH_BREAK)

    def calls_first(x):
        return first(x) - 1

    def calls_second(x):
        return second(x) - 1

    check_together([calls_first, calls_second], randn(3))


# ---- lifetime ---------------------------------------------------------------------------------------

def _plain():
    def f(x):
        return x.cos() + 1
    return f


def _with_break():
    def f(x):
        y = x.cos()
        print(end="")
        return y * 2
    return f


def _raising():
    def f(x):
        y = x + 1
        raise ValueError(f"no {y.shape}")
    return f


@pytest.fixture
def no_cyclic_gc():
    """Everything below must be freed by reference counting alone, as in eager. (One conversion first:
    the first FakeTensorMode of a process imports torch modules whose import leaves a frame cycle.)"""
    framejit.compile(_with_break())(torch.ones(1))
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize("make", [_plain, _with_break, _raising])
def test_the_input_and_the_function_are_freed_when_the_call_returns(no_cyclic_gc, make):
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(weakref.ref(gm))
        return gm.forward

    fn = make()
    compiled = framejit.compile(fn, backend=backend)
    x = torch.randn(3)
    try:
        compiled(x)
    except ValueError:
        pass
    refs = {"input": weakref.ref(x), "function": weakref.ref(fn), "compiled function": weakref.ref(compiled),
            "its state": weakref.ref(compiled._framejit_state)}
    del x, fn, compiled
    alive = [name for name, ref in refs.items() if ref() is not None]
    assert not alive, f"still alive without the cyclic GC: {alive}"
    gc.collect()
    assert graphs and all(g() is None for g in graphs), "a dead compiled function keeps its graphs"


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x).relu()


class Scaled(Small):
    def __init__(self, k):
        super().__init__()
        self.k = float(k)                 # a value the graph depends on: instances of other k do not share

    def forward(self, x):
        return self.lin(x).relu() * self.k


def test_a_compiled_module_and_its_input_are_freed_when_dropped(no_cyclic_gc):
    model = Small()
    compiled = framejit.compile(model)
    x = torch.randn(2, 3)
    compiled(x)
    refs = {"input": weakref.ref(x), "module": weakref.ref(model), "weight": weakref.ref(model.lin.weight)}
    del model, compiled, x
    alive = [name for name, ref in refs.items() if ref() is not None]
    assert not alive, f"still alive without the cyclic GC: {alive}"


def test_a_module_passed_to_a_compiled_function_is_freed_with_its_entries(no_cyclic_gc):
    def apply(module, x):
        return module(x) * 2

    compiled = framejit.compile(apply)
    refs = []
    for _ in range(3):
        model = Small()
        assert torch.equal(compiled(model, torch.ones(3)), apply(model, torch.ones(3)))
        refs.append(weakref.ref(model))
        del model
    assert all(r() is None for r in refs), "the entries of a compiled function keep the modules it was called with"
    # the identity entries went with their modules; the shared one (translate/guards/instance_guards.py)
    # serves any Small and holds none
    assert len(compiled._framejit_state.entries) == 1
    assert not compiled._framejit_state.results[0].dies_with


def _churn(kind, i):
    # a new code object each time (exec, under a new name: equal code objects would share one state in
    # a cache keyed by equality); the values are tensors, so torch's own fake-tensor dispatch
    # cache (keyed by constant arguments, bounded by framejit at 20,000) does not grow with them
    if kind == "exec":
        namespace = {"K": torch.full((), float(i))}
        exec(f"def f{i}(x):\n    return x * K + 1\n", namespace)
        fn = namespace[f"f{i}"]
    elif kind == "break":
        namespace = {"K": torch.full((), float(i))}
        exec(f"def f{i}(x):\n    y = x * K\n    print(end='')\n    return y + 1\n", namespace)
        fn = namespace[f"f{i}"]
    elif kind == "closure":
        fn = _scale(torch.full((), float(i)))
    else:
        fn = torch.nn.Linear(4, 4)
    framejit.compile(fn)(torch.ones(4))


def _scale(k):
    def f(x):
        return x * k + 1
    return f


@pytest.mark.parametrize("kind", ["exec", "break", "closure", "module"])
def test_compiling_and_dropping_functions_keeps_memory_flat(kind):
    """Test-sized version of bench/memory_churn.py: objects alive after many compile-call-drop cycles.
    The warm-up fills the bounded stores of the report's last dead frames and of the metrics first;
    the compile-time table (bounded at 256 functions) is cleared at both ends."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(70):
            _churn(kind, i)
        framejit.clear_metrics()
        gc.collect()
        before = len(gc.get_objects())
        for i in range(70, 130):
            _churn(kind, i)
        framejit.clear_metrics()
        gc.collect()
    grown = len(gc.get_objects()) - before
    assert grown < 60, f"{grown} objects more after 60 compile-call-drop cycles ({kind})"


# ---- bounds and reset -------------------------------------------------------------------------------

def test_no_shared_entry_cap_sends_new_module_instances_to_plain_python():
    counter = framejit.CompileCounter()
    x = torch.randn(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)                # no recompile-limit warning
        models = []
        for k in range(cache_limit() + 6):                           # more than 8 * the limit of 2
            model = Scaled(k)                                        # each needs an entry of its own
            models.append(model)                                     # all alive: none is a dead instance
            # dynamic=False: each model's float k must stay a constant of its own entry (automatic
            # dynamic would make it a graph input after one recompile, and the models would share it)
            compiled = framejit.compile(model, backend=counter, recompile_limit=2, dynamic=False)
            torch.testing.assert_close(compiled(x), model(x))
            assert compiled.forward._framejit_state.eager_reason is None
    assert counter.frame_count == len(models)


def test_new_modules_in_the_place_of_dead_ones_do_not_inherit_their_recompile_count():
    # each dead module's entries go (test above); a new module at a dead one's address must not count
    # as that module for the recompile limit
    def apply(module, x):
        return module(x) * 2

    counter = framejit.CompileCounter()
    # dynamic=False: each model's float k must stay a constant (automatic dynamic shares it)
    compiled = framejit.compile(apply, backend=counter, recompile_limit=2, dynamic=False)
    x = torch.randn(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for k in range(12):
            model = Scaled(k)                                        # each needs an entry of its own
            torch.testing.assert_close(compiled(model, x), apply(model, x))
            del model
    assert counter.frame_count == 12
    # no identity entry is left (their modules died); shared entries hold no module
    assert not any(r.dies_with for r in compiled._framejit_state.results)


def cache_limit():
    from framejit.runtime.compiled import SHARED_CODE_LIMIT
    return SHARED_CODE_LIMIT * 2


def test_closures_beyond_the_shared_cap_still_compile():
    counter = framejit.CompileCounter()
    x = torch.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fns = [_scale(float(k)) for k in range(cache_limit() + 6)]
        for f in fns:
            compiled = framejit.compile(f, backend=counter, recompile_limit=2, dynamic=False)   # cells stay constants
            assert torch.equal(compiled(x), f(x))
    assert counter.frame_count == len(fns)
    assert len(compiled._framejit_state.entries) <= cache_limit()   # the oldest were forgotten


def test_reset_makes_a_function_that_hit_the_recompile_limit_convert_again():
    counter = framejit.CompileCounter()

    def f(x):
        return x + 1

    compiled = framejit.compile(f, backend=counter, recompile_limit=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled(torch.ones(2))
        compiled(torch.ones(3))                 # the limit: plain Python from now on
    assert counter.frame_count == 1
    framejit.reset()
    compiled(torch.ones(4))
    assert counter.frame_count == 2, "reset() left the recompile limit's decision in place"


def test_recompiling_across_reset_leaves_nothing_behind():
    def f(x):
        return x.sin() * 2

    compiled = framejit.compile(f)
    compiled(torch.ones(2))
    framejit.reset()
    framejit.clear_metrics()              # bounded stores of their own (test_metrics.py)
    gc.collect()
    before_lines, before_objects = len(linecache.cache), len(gc.get_objects())
    for _ in range(20):
        compiled(torch.ones(2))
        framejit.reset()
    framejit.clear_metrics()
    gc.collect()
    assert len(linecache.cache) <= before_lines, "each graph's source stays in linecache"
    assert len(gc.get_objects()) - before_objects < 20


def test_a_state_is_found_by_identity_and_dies_with_its_functions():
    first, second = _exec_twice(SOURCE)
    a, b = framejit.compile(first), framejit.compile(second)
    assert a._framejit_state is not b._framejit_state
    assert framejit.compile(first)._framejit_state is a._framejit_state
    a(torch.ones(2))
    state = weakref.ref(a._framejit_state)
    del a
    gc.collect()
    assert state() is None
    assert all(st.code is not first.__code__ for _, st in cache.all_states())
