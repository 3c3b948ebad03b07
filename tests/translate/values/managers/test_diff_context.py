"""Differential tests: with-blocks (torch grad mode, inference mode, autocast, Python context managers).

Each program runs eagerly and through framejit and must behave identically: values, requires_grad
of every output, grads, the grad mode after the call, and side effects of user __enter__/__exit__.
Torch state managers inside straight code must not split the graph (one graph, no breaks); a graph
break inside a with-block makes the frame run as plain Python, which must still match.
"""
import contextlib

import pytest
import torch

from tests.differential import CASE_FIELDS, case, check, randn, run_case

ONE = dict(fullgraph=True, graphs=1)
ONE_NB = dict(graphs=1, breaks=0)
PY = dict(fullgraph=True)

x34 = randn(3, 4, seed=1)
y34 = randn(3, 4, seed=2)
g34 = randn(3, 4, seed=6, requires_grad=True)
h34 = randn(3, 4, seed=7, requires_grad=True)
w44 = randn(4, 4, seed=8, requires_grad=True)
NO_GRAD = torch.no_grad()
LOG = []


class Counter:
    """A user context manager that mutates itself on enter and exit."""

    def __init__(self):
        self.entered = 0
        self.exited = 0

    def __enter__(self):
        self.entered += 1
        return self

    def __exit__(self, exc_type, exc, tb):
        self.exited += 1
        return False

    def __eq__(self, other):
        return type(other) is Counter and (self.entered, self.exited) == (other.entered, other.exited)


class Scale:
    """A user context manager whose __enter__ returns a computed value."""

    def __init__(self, factor):
        self.factor = factor

    def __enter__(self):
        return self.factor * 2

    def __exit__(self, *exc):
        return None


SCALE = Scale(3)


@contextlib.contextmanager
def doubled(x):
    yield x * 2


@contextlib.contextmanager
def guarded_no_grad():
    with torch.no_grad():
        yield


@contextlib.contextmanager
def with_cleanup(box):
    box.append("enter")
    try:
        yield len(box)
    finally:
        box.append("exit")


@torch.no_grad()
def decorated_no_grad(x):
    return x * 2


@torch.enable_grad()
def decorated_enable_grad(x):
    return x * 3


@torch.inference_mode()
def decorated_inference(x):
    return x + 1


class Frozen(torch.nn.Module):
    """A module whose forward runs without grad (as rotary-embedding modules do)."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    @torch.no_grad()
    def forward(self, x):
        return self.proj(x)


class Helper:
    @torch.no_grad()
    def halve(self, x):
        return x / 2

    @torch.set_grad_enabled(False)
    def third(self, x):
        return x / 3


FROZEN = Frozen()
HELPER = Helper()


# ---------------------------------------------------------------- grad mode


def no_grad_middle(g):
    a = g * 2
    with torch.no_grad():
        b = g * 3
    c = g * 4
    return a, b, c


def no_grad_requires_grad_flag(g):
    with torch.no_grad():
        y = g + 1
        flag = y.requires_grad
    return y, flag, (g + 1).requires_grad


def enable_grad_alone(g):
    with torch.enable_grad():
        return g * 2


def set_grad_enabled_false(g):
    with torch.set_grad_enabled(False):
        y = g.sin()
    return y, g.cos()


def set_grad_enabled_argument(g, mode):
    with torch.set_grad_enabled(mode):
        y = g * g
    return y


def nested_three_levels(g):
    with torch.no_grad():
        a = g * 2
        with torch.enable_grad():
            b = g * 3
            with torch.no_grad():
                c = g * 4
            d = g * 5
        e = g * 6
    return a, b, c, d, e


def return_inside_no_grad(g):
    with torch.no_grad():
        return g * 2 + 1


def is_grad_enabled_inside(g):
    with torch.no_grad():
        inside = torch.is_grad_enabled()
    return g * 2, inside, torch.is_grad_enabled()


def branch_on_grad_mode_inside(g):
    with torch.no_grad():
        if torch.is_grad_enabled():
            y = g * 100
        else:
            y = g * 2
    return y


def break_out_of_loop_in_no_grad(g):
    out = []
    for i in range(4):
        with torch.no_grad():
            if i == 2:
                break
            out.append(g * i)
    return out, (g * 7).requires_grad


def continue_in_loop_with_no_grad(g):
    total = g * 0
    for i in range(3):
        with torch.no_grad():
            if i == 1:
                continue
            total = total + g * i
    return total


def no_grad_module_call(g, w):
    lin = torch.nn.functional.linear
    with torch.no_grad():
        y = lin(g, w)
    return y, lin(g, w)


def no_grad_inplace_on_param(w, g):
    with torch.no_grad():
        w.mul_(0.5)
    return (w * g.sum(0)).sum()


def grads_through_partly_no_grad(g, h):
    with torch.no_grad():
        scale = (g * h).mean()
    return g * scale + h


def global_no_grad_object(g):
    with NO_GRAD:
        y = g * 2
    return y, g * 2


def helper_with_no_grad(x):
    with torch.no_grad():
        return x.exp()


def inlined_helper_with_no_grad(g):
    return helper_with_no_grad(g) + g


def no_grad_decorated_helper(g):
    return decorated_no_grad(g) + 1, decorated_enable_grad(g)


def no_grad_decorated_module_forward(g):
    return FROZEN(g) + g


def no_grad_decorated_method(g):
    return HELPER.halve(g) + HELPER.third(g), (g * 1).requires_grad


def two_sequential_blocks(g):
    with torch.no_grad():
        a = g * 2
    b = a + g
    with torch.no_grad():
        c = b * 2
    return a, b, c


def with_as_none(g):
    with torch.no_grad() as nothing:
        y = g * 2
    return y, nothing


def multiple_managers_one_statement(g):
    with torch.no_grad(), torch.enable_grad():
        y = g * 2
    return y


def grad_mode_restored_after_frame(g):
    with torch.no_grad():
        y = g * 2
    return y, torch.is_grad_enabled()


# ---------------------------------------------------------------- inference mode, autocast


def inference_mode_block(x):
    with torch.inference_mode():
        y = x * 2
    return y.sum() + 0


def inference_mode_false(g):
    with torch.inference_mode(False):
        y = g * 2
    return y


def inference_decorated_helper(x):
    return decorated_inference(x) * 1


def autocast_bf16_matmul(x, y):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = x @ y.t()
    return z, z.dtype, (x @ y.t()).dtype


def autocast_disabled(x, y):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=False):
        z = x @ y.t()
    return z


def autocast_nested_disable(x, y):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        a = x @ y.t()
        with torch.autocast("cpu", enabled=False):
            b = x @ y.t()
    return a, b


def autocast_as_value(x):
    with torch.autocast("cpu", dtype=torch.bfloat16) as ac:
        y = torch.mm(x, x.t())
    return y, ac is not None


# ---------------------------------------------------------------- Python context managers


class Tagged:
    """A stateless user context manager reached as a global."""

    def __enter__(self):
        return "tag"

    def __exit__(self, exc_type, exc, tb):
        return False


TAGGED = Tagged()


def user_manager_global(x):
    with TAGGED as t:
        y = x + 1
    return y, t


def user_manager_argument(x, cm):
    with cm as same:
        y = x * 2
    return y, same is cm, cm.entered


def user_manager_enter_value(x):
    with SCALE as f:
        y = x * f
    return y


def contextmanager_value(x):
    with doubled(x) as d:
        y = d + 1
    return y


def contextmanager_no_grad(g):
    with guarded_no_grad():
        y = g * 2
    return y, g * 2


def contextmanager_finally_runs(x, box):
    with with_cleanup(box) as n:
        y = x * n
    return y, box


def nullcontext_value(x):
    with contextlib.nullcontext(x) as same:
        y = same + 1
    return y


def suppress_without_error(x):
    with contextlib.suppress(KeyError):
        y = x * 2
    return y


def nested_user_and_torch(g, cm):
    with cm:
        with torch.no_grad():
            y = g * 2
    return y, cm.exited


def indexing_inside_no_grad(x, i):
    with torch.no_grad():
        y = x.index_select(0, i)
    return y * 2


def indexing_inside_user_manager(x, i, cm):
    with cm:
        y = x.index_select(0, i)
    return y, cm.exited


class Swallow:
    """A user context manager that suppresses IndexError."""

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, tb):
        return exc_type is IndexError


def failing_index_in_suppressing_manager(x, i):
    y = x * 0
    with Swallow():
        y = x.index_select(0, i)
    return y


def failing_index_in_contextlib_suppress(x, i):
    y = x + 1
    with contextlib.suppress(IndexError):
        y = x.index_select(0, i)
    return y


# ---------------------------------------------------------------- breaks inside with (eager fallback)


def print_inside_no_grad(g):
    with torch.no_grad():
        print("inside")
        y = g * 2
    return y


def data_dependent_inside_no_grad(g):
    with torch.no_grad():
        if g.sum() > 0:
            y = g * 2
        else:
            y = g * 3
    return y


def raise_inside_no_grad_caught(g):
    try:
        with torch.no_grad():
            y = g * 2
            raise ValueError("stop")
    except ValueError:
        y = g * 5
    return y, torch.is_grad_enabled()


def print_after_no_grad(g):
    with torch.no_grad():
        y = g * 2
    print("after")
    return y + g


def print_inside_autocast(x, y):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        a = x @ y.T
        print("inside")                  # the graph splits here and resumes inside the block
        b = a @ y
    return a, b, b.float() + 1, torch.is_autocast_enabled("cpu")


def two_breaks_inside_autocast_under_no_grad(g, y):
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            a = g @ y.T
            print("one")
            b = a @ y
            print("two")
            c = b.relu()
    return c, torch.is_autocast_enabled("cpu"), torch.is_grad_enabled()


def raise_after_break_inside_autocast(x, y):
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            a = x @ y.T
            print("inside")
            raise ValueError("stop")
    except ValueError:
        a = (x * 2) @ y.T
    return a, torch.is_autocast_enabled("cpu")


def set_grad_enabled_bare(g):
    torch.set_grad_enabled(False)
    y = g * 2
    torch.set_grad_enabled(True)
    return y, g * 2


CASES = [
    case(no_grad_middle, g34, **ONE_NB),
    case(no_grad_requires_grad_flag, g34, **ONE),
    case(enable_grad_alone, g34, **ONE),
    case(set_grad_enabled_false, g34, **ONE),
    case(set_grad_enabled_argument, g34, False, **ONE),
    case(set_grad_enabled_argument, g34, True, name="set_grad_enabled_argument_true", **ONE),
    case(nested_three_levels, g34, **ONE),
    case(return_inside_no_grad, g34, **ONE),
    case(is_grad_enabled_inside, g34, **ONE),
    case(branch_on_grad_mode_inside, g34, **ONE),
    case(break_out_of_loop_in_no_grad, g34, **ONE),
    case(continue_in_loop_with_no_grad, g34, **ONE),
    case(no_grad_module_call, g34, w44, **ONE),
    case(no_grad_inplace_on_param, w44, g34, **ONE),
    case(grads_through_partly_no_grad, g34, h34, grads=True, **ONE),
    case(global_no_grad_object, g34, **ONE),
    case(inlined_helper_with_no_grad, g34, grads=True, **ONE),
    case(no_grad_decorated_helper, g34, **ONE),
    case(no_grad_decorated_module_forward, g34, grads=True, **ONE),
    case(no_grad_decorated_method, g34, **ONE),
    case(two_sequential_blocks, g34, **ONE_NB),
    case(with_as_none, g34, **ONE),
    case(multiple_managers_one_statement, g34, **ONE),
    case(grad_mode_restored_after_frame, g34, **ONE),
    case(inference_mode_block, x34, **ONE),
    case(inference_mode_false, g34, **ONE),
    case(inference_decorated_helper, x34, **ONE),
    case(autocast_bf16_matmul, x34, y34, **ONE),
    case(autocast_disabled, x34, y34, **ONE),
    case(autocast_nested_disable, x34, y34, **ONE),
    case(autocast_as_value, x34, **ONE),
    case(user_manager_global, x34, **ONE),
    case(user_manager_argument, x34, Counter(), **ONE),
    case(user_manager_enter_value, x34, **ONE),
    case(contextmanager_value, x34, **ONE),
    case(contextmanager_no_grad, g34, **ONE),
    case(contextmanager_finally_runs, x34, [], **ONE),
    case(nullcontext_value, x34, **ONE),
    case(suppress_without_error, x34, **ONE),
    case(nested_user_and_torch, g34, Counter(), **ONE),
    case(indexing_inside_no_grad, x34, torch.tensor([2, 0]), **ONE),
    case(indexing_inside_user_manager, x34, torch.tensor([2, 0]), Counter()),
    case(failing_index_in_suppressing_manager, x34, torch.tensor([9])),
    case(failing_index_in_contextlib_suppress, x34, torch.tensor([9])),
    case(print_inside_no_grad, g34),
    case(data_dependent_inside_no_grad, g34),
    case(raise_inside_no_grad_caught, g34),
    case(print_after_no_grad, g34, breaks=1),
    case(set_grad_enabled_bare, g34),
    case(print_inside_autocast, x34, y34, graphs=3, breaks=2),
    case(print_inside_autocast, g34, h34, grads=True, name="print_inside_autocast_grads"),
    case(two_breaks_inside_autocast_under_no_grad, g34, y34, graphs=3, breaks=3),   # 4 before a graph of only a grad switch became a Python line
    case(raise_after_break_inside_autocast, x34, y34),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_matches_eager(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


@pytest.mark.parametrize("mode", [True, False])
def test_entry_grad_mode_is_guarded(mode):
    with torch.set_grad_enabled(mode):
        check(no_grad_middle, g34, graphs=1)
        check(enable_grad_alone, g34, graphs=1)


def test_autocast_is_left_after_a_break_inside_its_block_even_when_it_raises():
    check(print_inside_autocast, x34, y34)
    assert not torch.is_autocast_enabled("cpu")
    check(raise_after_break_inside_autocast, x34, y34)
    assert not torch.is_autocast_enabled("cpu")


def test_grad_mode_restored_after_break_inside_block():
    check(data_dependent_inside_no_grad, g34)
    assert torch.is_grad_enabled()


def test_no_grad_graph_holds_grad_mode_nodes():
    import framejit
    counter = framejit.backends.CompileCounter()
    framejit.reset()
    framejit.compile(no_grad_middle, backend=counter)(g34)
    (gm,) = counter.graphs
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets.count(torch._C._set_grad_enabled) == 2


def index_under_managers(x, i):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with torch.no_grad():
            y = x.index_select(0, i) @ x.t()
    return y * 2


def test_state_restored_when_the_graph_raises():
    """An op that fails only on real values raises inside the graph: the state the eager with-blocks
    would restore (grad mode, autocast) is restored too."""
    import framejit
    framejit.reset()
    counter = framejit.backends.CompileCounter()
    compiled = framejit.compile(index_under_managers, backend=counter)
    x = randn(3, 4, seed=9, requires_grad=True)
    check(index_under_managers, x, torch.tensor([1]), graphs=1)
    compiled(x, torch.tensor([0]))
    with pytest.raises(IndexError):
        compiled(x, torch.tensor([9]))
    assert torch.is_grad_enabled()
    assert not torch.is_autocast_enabled("cpu")
    assert counter.frame_count == 1
