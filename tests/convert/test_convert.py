"""Graph breaks end to end: break functions, resume functions, and when a frame runs eagerly instead."""
import torch

import framejit
from tests.differential import check, randn


def nested_call_break(x):
    return str(print("nested")), x + 1


def keyword_call_break(x):
    y = x * 2
    print("kw", end="!\n", sep="")
    return y + 1


def branch_on_tensor(x):
    y = x.sin()
    if y.sum() > 0:
        return y * 2
    return y - 1


def two_breaks(x):
    a = x + 1
    print("one")
    b = a * 2
    print("two")
    return a, b - 1


def break_keeps_unbound_local(x, flag=False):
    if flag:
        z = 1
    y = x.cos()
    print("mid")
    try:
        return y + z
    except NameError:
        return y


def break_with_varargs(*xs, **kw):
    total = xs[0] + xs[1]
    print(sorted(kw))
    return total * kw["scale"]


def break_in_loop(x):
    # a while loop: a for loop over a known sequence now resumes in graphs (tests/convert/test_loop_breaks.py)
    i = 0
    while i < 3:
        x = x + i
        print(i)
        i += 1
    return x


def break_in_try(x):
    try:
        y = x + 1
        print("inside")
    finally:
        y = y * 2
    return y


def item_break(x):
    n = int(x.sum().item())
    return x * n


def test_nested_call_break_is_correct():
    check(nested_call_break, randn(3))


def test_keyword_call_break():
    check(keyword_call_break, randn(3), graphs=2, breaks=1)


def test_branch_on_tensor_both_sides():
    check(branch_on_tensor, torch.ones(3), breaks=1)
    check(branch_on_tensor, -torch.ones(3), breaks=1)


def test_two_breaks_three_graphs():
    check(two_breaks, randn(3), graphs=3, breaks=2)


def test_unbound_local_survives_a_break():
    check(break_keeps_unbound_local, randn(3))
    check(break_keeps_unbound_local, randn(3), True)


def test_varargs_function_breaks():
    check(break_with_varargs, randn(2), randn(2), scale=3.0, b=1)


def test_break_in_loop_runs_eagerly_and_correctly():
    check(break_in_loop, randn(3))
    out = framejit.explain(break_in_loop)(randn(3))
    assert any("inside a loop" in r for r in out.eager_reasons)


def test_break_in_try_runs_correctly():
    check(break_in_try, randn(3))


def test_item_is_a_break_and_data_flows():
    check(item_break, torch.arange(4.0), graphs=2, breaks=1)


def test_break_reason_has_caret_line():
    out = framejit.explain(keyword_call_break)(randn(3))
    (b,) = out.break_reasons
    assert "print" in b.reason
    assert 'print("kw", end="!\\n", sep="")' in b.where and "^^^" in b.where


def test_each_break_is_warned_once():
    import warnings
    from framejit.observe.break_warnings import GraphBreakWarning

    def warned_fn(x):
        y = x + 1
        print("warn me")
        return y

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = framejit.compile(warned_fn)
        f(randn(2))
        f(randn(3))            # recompiles: same break, no second warning
        framejit.reset()
        framejit.compile(warned_fn)(randn(2))
    breaks = [w for w in caught if issubclass(w.category, GraphBreakWarning)]
    assert len(breaks) == 1
    assert "print" in str(breaks[0].message) and breaks[0].filename == __file__


def test_warned_reasons_are_bounded():
    from framejit.observe.break_warnings import WarnedOnce
    w = WarnedOnce(limit=3)
    assert all(w.first_time(i) for i in range(10))
    assert len(w) == 3 and not w.first_time(9) and w.first_time(0)


class _Node:
    pass


def cycle_across_break(x):
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    a.t = x * 2
    print("break")
    return a.t + 1, a.other.other is a


def test_object_cycle_live_at_a_break():
    check(cycle_across_break, randn(2), graphs=2, breaks=1)


def test_break_with_assert_rewritten_locals():
    def body(x):
        y = x + 1
        assert y.shape == (2,)          # pytest rewrites this into @py_assert locals
        print("after assert")
        return y * 2

    out = framejit.compile(body)(torch.ones(2))
    assert torch.equal(out, torch.full((2,), 4.0))


def test_autocast_at_entry_is_guarded():
    def mm(x, w):
        return x @ w

    f = framejit.compile(mm)
    x, w = randn(2, 4), randn(4, 4, seed=1)
    assert f(x, w).dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert f(x, w).dtype == mm(x, w).dtype == torch.bfloat16


def test_autocast_guard_only_where_autocast_changes_the_graph():
    def elementwise(x):
        return torch.relu(x * 2 + 1)

    def mm(x, w):
        return x @ w

    assert not any("autocast" in g for g in framejit.explain(elementwise)(randn(2, 4)).guards)
    assert any("autocast" in g for g in framejit.explain(mm)(randn(2, 4), randn(4, 4)).guards)
    f = framejit.compile(elementwise)
    x = randn(2, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.equal(f(x), elementwise(x)) and f(x).dtype == elementwise(x).dtype


def _helper_with_print(x):
    y = x.sin()
    print("inside helper")
    return y.cos()


def calls_helper_that_breaks(x):
    a = x + 1
    b = _helper_with_print(a)
    return b * 2


def test_callee_with_a_break_runs_compiled():
    # caller: graph before the call, graph after; callee (compiled wrapper): graph before and after its print
    check(calls_helper_that_breaks, randn(3), graphs=4)
    out = framejit.explain(calls_helper_that_breaks)(randn(3))
    assert out.graph_count == 4
    assert any("inside helper" in (b.where or "") for b in out.break_reasons)


# ---- breaks inside try blocks and in functions with cells -------------------------------------------

def _noisy(y):
    print("noisy")
    return y + 1


def _raises(y):
    print("raising")
    raise KeyError("k")


def test_a_break_at_a_call_inside_try_finally_splits_and_runs_the_finally():
    from tests.differential import check
    log = []

    def f(x):
        y = x * 2
        try:
            z = _noisy(y)
            w = z * 3
        finally:
            log.append("finally")
        return w + y
    check(f, torch.randn(3), graphs=3, breaks=2)


def test_an_exception_from_the_call_at_a_break_inside_try_runs_the_frames_own_handler():
    from tests.differential import check

    def f(x):
        y = x + 1
        try:
            _raises(y)
            return y
        except KeyError as e:
            return x - len(str(e))
    check(f, torch.randn(3), breaks=3)


def test_a_break_with_args_star_call_inside_try_splits():
    from tests.differential import check

    def f(x, *args):
        try:
            out = _noisy(x, *args)
        finally:
            x = x * 0
        return out * 2 + x
    check(f, torch.randn(2), graphs=2, breaks=2)


def test_a_break_in_a_function_whose_cells_only_comprehensions_captured_splits():
    from tests.differential import check

    def f(x, k):
        scale = 2.0
        d = {i: x * scale + i for i in range(k)}
        print("mid")
        scale = scale + 1
        return sum(v * scale for v in d.values()), scale
    check(f, torch.randn(3), 3, graphs=2, breaks=1)


def test_a_break_after_a_lambda_captured_a_cell_runs_the_function_as_plain_python():
    from tests.differential import check

    def f(x):
        fns = [lambda: n]
        n = 1
        print("mid")
        n = 5
        return x * fns[0]()
    check(f, torch.randn(3), graphs=0, breaks=1)


# ---- a frame that runs as plain Python, with its breaking call routed to the compiled callee ------

class _Layer(torch.nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, h, scale=1.0):
        h = self.lin(h) * self.k
        print("layer")
        return h + scale


class _Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([_Layer(2.0), _Layer(3.0)])

    def forward(self, x, **kw):
        for layer in self.layers:
            x = layer(x, **kw)
        return x


def test_a_layer_loop_that_cannot_be_split_still_runs_its_layers_compiled():
    from tests.differential import check
    torch.manual_seed(0)
    model = _Stack()
    counter = framejit.CompileCounter()
    compiled = framejit.compile(model, backend=counter)
    x = torch.randn(2, 3)
    torch.testing.assert_close(compiled(x, scale=0.5), model(x, scale=0.5))
    # per layer its graph before the print (guarded on the layer), and one shared resume graph after it
    assert counter.frame_count == 3
    explained = framejit.explain(model)(x)
    assert any("compiled wrapper" in r for r in explained.eager_reasons)
    check(lambda x: model(x), x, grads=True)


def _helper(h, k):
    print("helper")
    return h * k + 1


def _fails(h, k):
    print("fails")
    if k == 2:
        raise ValueError("k")
    return h + k


def test_a_loop_calling_a_breaking_helper_keeps_the_helpers_graphs_and_its_exceptions():
    from tests.differential import check

    def f(x):
        for k in range(3):
            x = _helper(x, k)
        return x
    counter = framejit.CompileCounter()
    x = torch.randn(3)
    torch.testing.assert_close(framejit.compile(f, backend=counter)(x), f(x))
    assert counter.frame_count >= 2

    def g(x):
        out = []
        for k in range(4):
            try:
                out.append(_fails(x, k))
            except ValueError as e:
                out.append(str(e))
        return out
    check(g, torch.randn(2))


def test_a_method_call_in_a_loop_is_routed_too():
    from tests.differential import check

    class Box:
        def step(self, h):
            h = h * 2
            print("step")
            return h + 1

    box = Box()

    def f(x):
        for _ in range(2):
            x = box.step(x)                 # LOAD_METHOD: [function, self] at run time
        return x
    check(f, torch.randn(3))
    counter = framejit.CompileCounter()
    x = torch.randn(3)
    torch.testing.assert_close(framejit.compile(f, backend=counter)(x), f(x))
    assert counter.frame_count >= 1         # Box.step's graphs
    assert any("compiled wrapper" in r for r in framejit.explain(f)(x).eager_reasons)


# ---- breaks inside grad-mode blocks ------------------------------------------------------------------

def _report(t):
    print("grad mode", torch.is_grad_enabled())
    return t + 1


def test_a_break_inside_no_grad_splits_and_keeps_grad_modes_and_gradients():
    from tests.differential import check

    def f(x, w):
        y = x @ w
        with torch.no_grad():
            z = _report(y * 2)
            z = z + 1
        return y + z, torch.is_grad_enabled()
    check(f, torch.randn(3, 3), torch.randn(3, 3, requires_grad=True), grads=True, graphs=3, breaks=2)
    assert torch.is_grad_enabled()


def test_nested_grad_blocks_around_a_break():
    from tests.differential import check

    def f(x, w):
        with torch.no_grad():
            a = x * w
            with torch.enable_grad():
                b = _report(a * w)
            c = b * 2
        return a, b, c
    check(f, torch.randn(3), torch.randn(3, requires_grad=True), grads=True)


def test_an_exception_from_a_break_inside_no_grad_restores_the_grad_mode():
    from tests.differential import check

    def f(x):
        try:
            with torch.no_grad():
                y = x * 2
                _raises(y)
        except KeyError:
            return x + 1, torch.is_grad_enabled()
        return y, torch.is_grad_enabled()
    check(f, torch.randn(3))
    compiled = framejit.compile(f)
    compiled(torch.randn(3))
    assert torch.is_grad_enabled()


def test_a_break_inside_autocast_splits_the_graph_and_leaves_autocast_as_eager_does():
    from tests.differential import check

    def f(x):
        with torch.autocast("cpu"):
            y = _report(x * 2)          # graph, the call as Python inside the block, the block's end
        return y
    check(f, torch.randn(3), graphs=2)
    assert not torch.is_autocast_enabled("cpu")


def test_a_tracing_backend_given_a_graph_that_ends_a_no_grad_block_leaves_grad_mode_alone():
    import warnings

    from framejit.observe.conversion import GlobalStateChanged

    def f(x):
        with torch.no_grad():
            y = _report(x * 2)          # the resume function's graph ends the block: grad mode back on
            z = y + 1
        return z * x
    x = torch.randn(3, requires_grad=True)
    compiled = framejit.compile(f, backend="aot_eager")
    with warnings.catch_warnings():
        warnings.simplefilter("error", GlobalStateChanged)
        out = compiled(x)
    torch.testing.assert_close(out, f(x))
    assert torch.is_grad_enabled() and out.requires_grad


def test_a_break_inside_try_hands_the_resume_function_cell_variables_by_value():
    def f(x):
        scale = 3.0
        try:
            y = _report(x * 2)          # a break at a call inside a try block
        except KeyError:
            y = x
        grow = lambda t: t * scale      # noqa: E731 (`scale` is a cell variable, captured after the break)
        return grow(y), scale
    counter = framejit.CompileCounter()
    compiled = framejit.compile(f, backend=counter)
    x = torch.randn(3)
    for _ in range(3):
        got, want = compiled(x), f(x)
        torch.testing.assert_close(got[0], want[0])
        assert got[1] == want[1]
    frames = counter.frame_count
    compiled(x)
    assert counter.frame_count == frames       # the resume function is not guarded on a fresh cell
