"""Differential tests: a graph op that raises at run time (framejit/convert/raising_graphs.py).

Ops that fail on tensor values (an index out of range, gather/embedding indices, a matrix that is not
positive-definite) pass fake propagation and raise inside the compiled graph. The Python side effects
the frame made before such an op -- an attribute incremented, a list appended, a global or closure
cell set, a dict key written -- must be visible after the exception, as eagerly; effects after it must
not be; and what the graph itself did before failing (in-place writes to its inputs, random draws)
must happen exactly once.
"""
import pytest
import torch

import framejit
from tests.differential import CASE_FIELDS, case, check, check_script, outcome, randn, run_case

X = randn(3, seed=1)
BAD = torch.tensor([0, 5])
GOOD = torch.tensor([0, 2])
LOG = []
TOTAL = 0


class Counter:
    def __init__(self):
        self.count = 0
        self.items = []

    def __eq__(self, other):
        return type(other) is Counter and self.count == other.count and self.items == other.items

    __hash__ = object.__hash__


def attribute_then_index_error(x, i, c):
    c.count += 1
    return x[i] * 2


def list_then_index_error(x, i, items):
    items.append(1)
    return x[i] * 2


def global_then_index_error(x, i):
    global TOTAL
    TOTAL = TOTAL + 5
    LOG.append("before")
    return x[i] * 2


def dict_then_gather_error(x, i, d):
    d["seen"] = True
    return torch.gather(x, 0, i)


def effect_after_the_raise_is_not_made(x, i, c):
    y = x[i]
    c.count += 1
    return y


def effects_on_both_sides(x, i, c):
    c.count += 1
    y = x[i]
    c.items.append(2)
    return y


def embedding_error(x, i, c):
    c.count = 7
    return torch.nn.functional.embedding(i, x.reshape(3, 1))


def cholesky_error(x, c):
    c.count = 3
    return torch.linalg.cholesky(x)


def inside_an_inlined_call(x, i, c):
    def inner(t):
        c.count += 1
        return t[i]
    return inner(x) + 1


def in_place_write_then_effect(x, i, c):
    x.add_(1)
    c.count += 1
    y = x * 2
    return y[i]


def effect_then_in_place_write(x, i, c):
    c.count += 1
    x.mul_(3)
    return x[i]


def finally_clause_runs(x, i, c):
    c.count = 1
    try:
        return x[i]
    finally:
        c.items.append("finally")


def no_error(x, i, c):
    c.count += 1
    return x[i] * 2


CASES = [
    case(attribute_then_index_error, X, BAD, Counter()),
    case(list_then_index_error, X, BAD, []),
    case(global_then_index_error, X, BAD),
    case(dict_then_gather_error, X, BAD, {}),
    case(effect_after_the_raise_is_not_made, X, BAD, Counter()),
    case(effects_on_both_sides, X, BAD, Counter()),
    case(embedding_error, X, BAD, Counter()),
    case(cholesky_error, -torch.eye(2), Counter()),
    case(inside_an_inlined_call, X, BAD, Counter()),
    case(in_place_write_then_effect, X, BAD, Counter()),
    case(effect_then_in_place_write, X, BAD, Counter()),
    case(finally_clause_runs, X, BAD, Counter()),
    case(no_error, X, GOOD, Counter(), graphs=1),
]


@pytest.mark.parametrize(CASE_FIELDS, CASES)
def test_side_effects_before_a_raising_op_are_visible(fn, args, kwargs, options):
    run_case(fn, args, kwargs, options)


def _counted_closure():
    calls = 0

    def bump_then_index(x, i):
        nonlocal calls
        calls += 1
        return x[i], calls
    return bump_then_index


def test_a_closure_cell_written_before_a_raising_op():
    eager, compiled_fn = _counted_closure(), _counted_closure()
    compiled = framejit.compile(compiled_fn)
    for fn in (eager, compiled):
        for i in (BAD, GOOD, BAD):
            outcome(fn, X, i)
    assert eager.__closure__[0].cell_contents == compiled_fn.__closure__[0].cell_contents == 3


def random_draw_then_raise(x, i, c):
    c.count += 1
    y = x + torch.rand(3)
    return y[i]


def test_random_draws_before_the_raise_happen_once():
    def script(f):
        torch.manual_seed(0)
        c = Counter()
        return [outcome(f, X, BAD, c), c.count, torch.rand(2), outcome(f, X, GOOD, c), torch.rand(2)]
    check_script(random_draw_then_raise, script)


class Tracked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.norm = torch.nn.BatchNorm1d(3)

    def forward(self, x, i):
        self.calls += 1
        return self.norm(x)[:, i]


def test_running_statistics_updated_before_the_raise_are_updated_once():
    def script(f):
        torch.manual_seed(0)
        model, x = Tracked(), torch.randn(4, 3)
        seen = [outcome(f, model, x, BAD), model.calls, model.norm.running_mean.clone(),
                model.norm.num_batches_tracked.clone()]
        seen += [outcome(f, model, x, GOOD), model.calls, model.norm.running_mean.clone()]
        return seen
    check_script(lambda m, x, i: m(x, i), script)


def break_then_raise(x, i, c):
    c.count += 1
    print("between")
    c.count += 10
    return x[i]


def test_a_resume_function_whose_graph_raises():
    check(break_then_raise, X, BAD, Counter())


def write_into_inference_tensor(x, c):
    with torch.inference_mode():
        t = x * 2                # an inference tensor
    print("break")               # the next graph takes it as an input
    c.count += 1
    view = t[1:3]
    view[0] = 5.0            # outside inference mode: raises (after writing)
    return view


def test_a_raising_write_into_an_inference_tensor():
    # undoing the partial run writes into the inference tensor too: that must not raise in its place
    check(write_into_inference_tensor, X, Counter())


def test_the_handler_is_added_only_where_an_effect_precedes_an_op():
    def after(x, c):
        y = x * 2
        c.count += 1
        return y

    def before(x, c):
        c.count += 1
        return x * 2

    for fn, wrapped in ((after, False), (before, True)):
        framejit.reset()
        framejit.compile(fn)(X, Counter())
        code = "\n".join(framejit.explain(fn)(X, Counter()).transformed_code)
        assert ("try:\n        __fj_o0, = __fj_graph" in code) is wrapped, code
        assert "get_state" not in code and "__fj_kept" not in code, code     # nothing to save here


AUGMENTED_WRITES = {
    "+=": lambda t, u: t.__iadd__(u), "-=": lambda t, u: t.__isub__(u), "*=": lambda t, u: t.__imul__(u),
    "/=": lambda t, u: t.__itruediv__(u), "//=": lambda t, u: t.__ifloordiv__(u),
    "%=": lambda t, u: t.__imod__(u), "**=": lambda t, u: t.__ipow__(u),
}
G_WRITTEN = randn(3, seed=4)


def _augmented(sym):
    # `target op= value` spelled as the statement (operator.iadd & co. in the graph), then a raising op
    src = f"""
def write_then_raise(x, i, c, where):
    c.count += 1
    value = torch.rand(3) + 0.5
    if where == "argument":
        x {sym} value
    elif where == "view":
        v = x[1:]
        v {sym} value[1:]
    else:
        global G_WRITTEN
        G_WRITTEN {sym} value
    return x[i] * 2
"""
    space = {"torch": torch, "G_WRITTEN": G_WRITTEN}
    exec(compile(src, "<augmented>", "exec"), space)
    return space["write_then_raise"]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("where", ["argument", "view", "global"])
@pytest.mark.parametrize("sym", list(AUGMENTED_WRITES))
def test_an_augmented_assignment_before_the_raise_writes_once(sym, where, backend):
    # `x += ...` is operator.iadd in the graph: the partial run's write must be undone before the rerun
    # (fuzz seed 553850: the argument was written twice)
    fn = _augmented(sym)

    def script(f):
        torch.manual_seed(0)
        fn.__globals__["G_WRITTEN"] = randn(3, seed=4)
        x, c = randn(3, seed=2).abs() + 1, Counter()
        seen = [outcome(f, x, BAD, c, where), c.count, x.clone(), fn.__globals__["G_WRITTEN"].clone()]
        seen += [outcome(f, x, GOOD, c, where), x.clone(), fn.__globals__["G_WRITTEN"].clone()]
        return seen
    check_script(fn, script, backend=backend)
