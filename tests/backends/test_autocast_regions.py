"""torch.autocast under the tracing backends (aot_eager, inductor) and the eager one: autocast blocks
inside a graph, blocks nested with no_grad / enable_grad / inference_mode, blocks a graph break
splits, autocast entered outside the compiled function, the decorator, nested dtypes, enabled=False,
checkpoint and backward under autocast (issue 23). backends/passes/state_regions.py runs every region where
autocast is on as its fx code, the switches between regions for real.

Differential (tests/differential.py's check, gradients included) plus: no conversion fell back.
"""
import pytest
import torch
import torch.utils.checkpoint as checkpoint

import framejit
from framejit.backends.passes.state_regions import regions
from tests.differential import check, randn

BF16 = torch.bfloat16


def autocast_in_no_grad_across_break(x, w):
    with torch.no_grad():
        with torch.autocast("cpu", dtype=BF16):
            y = x @ w
            print("break")
            z = y @ w
    return y, z


def no_grad_in_autocast_then_enable_grad(x, w):
    with torch.autocast("cpu", dtype=BF16):
        with torch.no_grad():
            y = x @ w
        print("break")
        with torch.enable_grad():
            z = (y @ w).relu()
    return y, z


def inference_mode_then_autocast_after_break(x, w):
    with torch.inference_mode():
        with torch.autocast("cpu", dtype=BF16):
            y = x @ w
    print("break")
    with torch.autocast("cpu", dtype=BF16):
        z = y.clone() @ w + x
    return z


def no_grad_inside_autocast(x, w):
    with torch.autocast("cpu", dtype=BF16):
        y = x @ w
        with torch.no_grad():
            z = y @ w
        q = z @ w
    return y, z, q


def autocast_after_no_grad_block(x, w):
    with torch.no_grad():
        y = x @ w
        with torch.autocast("cpu", dtype=BF16):
            z = y @ w
    with torch.autocast("cpu", dtype=BF16):
        q = x @ w
    return y, z, q


def nested_dtypes_and_disabled(x, w):
    with torch.autocast("cpu", dtype=BF16):
        y = x @ w
        with torch.autocast("cpu", enabled=False):
            z = y.float() @ w
        with torch.autocast("cpu", dtype=torch.float16):
            q = z @ w
    return y, z, q.float().sum()


@torch.autocast("cpu", dtype=BF16)
def autocast_decorator(x, w):
    y = x @ w
    with torch.no_grad():
        z = y @ w
    return y, z


def checkpoint_under_autocast(x, w):
    def block(t):
        return (t @ w).relu() @ w
    with torch.autocast("cpu", dtype=BF16):
        y = checkpoint.checkpoint(block, x, use_reentrant=False)
    return y


def enabled_false_with_grad(x, w):
    with torch.autocast("cpu", dtype=BF16, enabled=False):
        y = x @ w
    with torch.autocast("cpu", dtype=BF16):
        z = y @ w
    return y.sum() + z.float().sum()


def grad_work_inside_outer_autocast(x, w):
    with torch.no_grad():
        y = x @ w
    print("break")
    return y @ w, (x @ w).sum()


CASES = [
    (autocast_in_no_grad_across_break, 2), (no_grad_in_autocast_then_enable_grad, 2),
    (inference_mode_then_autocast_after_break, 2), (no_grad_inside_autocast, 1),
    (autocast_after_no_grad_block, 1), (nested_dtypes_and_disabled, 1),
    (checkpoint_under_autocast, None), (enabled_false_with_grad, 1),
]
EARLIER = set()


@pytest.fixture(autouse=True)
def _metrics_before():
    EARLIER.clear()
    EARLIER.update(id(m) for m in framejit.metrics())


def _no_fallback():
    failed = [(m.co_name, m.fail_type, m.fail_reason) for m in framejit.metrics()
              if m.fail_type is not None and id(m) not in EARLIER]
    assert failed == []


def _args():
    return randn(4, 4), randn(4, 4, seed=1, requires_grad=True)


@pytest.mark.filterwarnings("ignore::framejit.GraphBreakWarning")
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("fn, graphs", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_autocast_blocks_match_eager(fn, graphs, backend):
    check(fn, *_args(), backend=backend, grads=True)
    _no_fallback()


@pytest.mark.filterwarnings("ignore::framejit.GraphBreakWarning")
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_autocast_decorator(backend):
    """torch.autocast as a decorator: the wrapper's `with <autocast object>:` runs the function as plain
    Python today (a recorded eager fallback, not a failure); the values must match either way."""
    check(autocast_decorator, *_args(), backend=backend, grads=True)
    bugs = [(m.co_name, m.fail_type) for m in framejit.metrics()
            if m.fail_type not in (None, "eager fallback") and id(m) not in EARLIER]
    assert bugs == []


@pytest.mark.filterwarnings("ignore::framejit.GraphBreakWarning")
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_autocast_entered_outside_the_compiled_function(backend):
    with torch.autocast("cpu", dtype=BF16):
        check(grad_work_inside_outer_autocast, *_args(), backend=backend, grads=True)
    _no_fallback()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_backward_outside_autocast_of_a_graph_under_it(backend):
    """The gradient of a graph that ran under autocast, its backward called after the block."""
    def step(x, w):
        with torch.autocast("cpu", dtype=BF16):
            return (x @ w).relu() @ w

    def run(fn):
        x, w = _args()
        fn(x, w).float().sum().backward()
        return w.grad

    torch.testing.assert_close(run(framejit.compile(step, backend=backend)), run(step), rtol=0, atol=0)
    _no_fallback()


def test_autocast_regions_run_as_fx_code():
    graph = torch.fx.symbolic_trace(lambda x: x).graph   # placeholder and output only
    x = next(iter(graph.nodes))
    with graph.inserting_after(x):
        enter = graph.call_function(torch.amp.autocast_mode._enter_autocast, ("cpu", BF16, True, True))
    with graph.inserting_after(enter):
        mm = graph.call_function(torch.matmul, (x, x))
    with graph.inserting_after(mm):
        leave = graph.call_function(torch.amp.autocast_mode._exit_autocast, (enter,))
    with graph.inserting_after(leave):
        graph.call_function(torch.sin, (mm,))
    assert [kind for kind, _ in regions(graph, True)] == ["switch", "plain", "switch", "grad"]
    assert [kind for kind, _ in regions(graph, True, {"cpu": True})] == ["switch", "plain", "switch", "plain"]


def split_block(x, w):
    with torch.autocast("cpu", dtype=BF16):
        y = x @ w
        print("break")
        q = y @ w
    return q


def split_inner_of_nested_blocks(x, w):
    with torch.autocast("cpu", dtype=BF16):
        a = x @ w
        with torch.autocast("cpu", dtype=BF16):
            y = a @ w
            print("break")
            q = y @ w
        r = q @ w
    return a, r


def split_block_in_enable_grad_in_no_grad(x, w):
    with torch.no_grad():
        with torch.enable_grad():
            with torch.autocast("cpu", dtype=BF16):
                y = x @ w
                print("break")
                q = y @ w
    return q


def no_grad_inside_split_block(x, w):
    with torch.autocast("cpu", dtype=BF16):
        y = x @ w
        with torch.no_grad():
            z = y @ w
        print("break")
        q = (y + z) @ w
    return q


def two_breaks_in_one_block(x, w):
    with torch.autocast("cpu", dtype=BF16):
        y = x @ w
        print("break")
        q = y @ w
        print("break")
        r = q @ w
    return y, r


SPLIT_CASES = [split_block, split_inner_of_nested_blocks, split_block_in_enable_grad_in_no_grad,
               no_grad_inside_split_block, two_breaks_in_one_block]


def _nesting_after():
    """autocast's nesting count now (0 outside every block: the cast cache is cleared at the next exit)."""
    level = torch.autocast_increment_nesting()
    torch.autocast_decrement_nesting()
    return level - 1


@pytest.mark.filterwarnings("ignore::framejit.GraphBreakWarning")
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", SPLIT_CASES, ids=lambda f: f.__name__)
def test_autocast_cache_survives_a_break(fn, backend):
    """A weight used on both sides of a break inside one autocast block: eager casts it once (autocast
    caches a leaf's low-precision copy until the outermost block ends) and sums the two bfloat16
    gradients before the cast's backward; the compiled call must reuse the same cached copy."""
    check(fn, *_args(), backend=backend, grads=True)
    assert _nesting_after() == 0
    _no_fallback()


@pytest.mark.filterwarnings("ignore::framejit.GraphBreakWarning")
def test_autocast_cache_survives_a_break_inductor():
    check(split_block, *_args(), backend="inductor", grads=True)
    assert _nesting_after() == 0
    _no_fallback()


@pytest.mark.filterwarnings("ignore::framejit.GraphBreakWarning")
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_autocast_cache_of_an_outer_block_survives_a_break(backend):
    """The block entered outside the compiled function: the cache lives on after the call, as eagerly."""
    with torch.autocast("cpu", dtype=BF16):
        check(split_block, *_args(), backend=backend, grads=True)
        assert _nesting_after() == 1
    assert _nesting_after() == 0
    _no_fallback()


@pytest.mark.filterwarnings("ignore::framejit.GraphBreakWarning")
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_autocast_block_raising_after_a_break_leaves_no_nesting(backend):
    def raises_after_break(x, w):
        with torch.autocast("cpu", dtype=BF16):
            y = x @ w
            print("break")
            q = y @ w
            raise ValueError("inside")
        return q
    check(raises_after_break, *_args(), backend=backend, grads=True)
    assert _nesting_after() == 0


# ---- torch's managers as decorators of functions a compiled frame calls (traced, not plain Python) ----

@torch.autocast("cpu", dtype=BF16)
def _cast_matmul(x, w):
    return x @ w


@torch.autocast("cpu", enabled=False)
def _full_matmul(x, w):
    return x.float() @ w


@torch.inference_mode()
def _inference_matmul(x, w):
    return (x @ w).clone()


@torch.set_grad_enabled(False)
def _no_grad_matmul(x, w):
    return x @ w


def calls_autocast_decorated(x, w):
    return _cast_matmul(x, w).float() + 1


def calls_disabled_inside_block(x, w):
    with torch.autocast("cpu", dtype=BF16):
        return _full_matmul(x, w) + _cast_matmul(x, w)


def calls_inference_decorated(x, w):
    return _inference_matmul(x, w) + 1


def calls_grad_decorated(x, w):
    return _no_grad_matmul(x, w) + x @ w


def decorates_in_the_frame(x, w):
    cast = torch.autocast("cpu", dtype=BF16)(lambda a, b: a @ b)
    frozen = torch.inference_mode()(lambda a, b: a @ b)
    return cast(x, w), frozen(x, w.detach())


def returns_a_decorated_function(x, w):
    return x @ w, torch.autocast("cpu", dtype=BF16)(_plain_matmul)


def _plain_matmul(x, w):
    return x @ w


DECORATED_CASES = [calls_autocast_decorated, calls_disabled_inside_block, calls_inference_decorated,
                   calls_grad_decorated, decorates_in_the_frame, autocast_decorator]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", DECORATED_CASES, ids=lambda f: f.__name__)
def test_manager_decorators_are_traced(fn, backend):
    """One graph, no break, no fallback: the decorator's block is entered and left in the graph."""
    check(fn, *_args(), backend=backend, grads=fn is not decorates_in_the_frame, graphs=1, breaks=0)
    _no_fallback()


def test_a_decorated_function_made_in_the_frame_escapes():
    x, w = _args()
    _, cast = framejit.compile(returns_a_decorated_function, backend="eager")(x, w)
    assert cast(x, w).dtype is BF16 and type(cast) is type(_plain_matmul)
    _no_fallback()
