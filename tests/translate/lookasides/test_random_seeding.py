"""torch.manual_seed / torch.seed / torch.set_rng_state inside a compiled frame: one graph, no break
(translate/lookasides/random_seeding.py), and the random numbers drawn before and after the seed, the
values returned and the global generator's state after the call exactly eager's (tests/differential.py's
check compares the RNG state), under eager, aot_eager and inductor (backends/passes/state_regions.py runs
the seed between regions)."""
import pytest
import torch
import torch.nn.functional as F

import framejit
from tests.differential import check, randn

BACKENDS = ["eager", "aot_eager", "inductor"]


def reseeds_between_draws(x):
    a = torch.rand(3)
    torch.manual_seed(7)
    b = torch.rand(3)
    return x + a.sum() + b.sum()


def reseeds_between_dropouts(x, w):
    y = F.dropout(x @ w, 0.5)
    torch.manual_seed(3)
    return y + F.dropout(x @ w, 0.5)


def restores_a_state_passed_in(x, state):
    a = torch.randn(3)
    torch.random.set_rng_state(state)
    return x + a + torch.randn(3)


def seeds_in_a_helper(x):
    _reseed()
    return x * torch.rand(3)


def _reseed():
    torch.manual_seed(11)


@pytest.mark.filterwarnings("ignore::framejit.GraphBreakWarning")
@pytest.mark.parametrize("backend", BACKENDS)
def test_manual_seed_between_draws(backend):
    check(reseeds_between_draws, randn(3), backend=backend, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_manual_seed_between_dropouts_with_grads(backend):
    check(reseeds_between_dropouts, randn(3, 3), randn(3, 3, seed=1, requires_grad=True), backend=backend,
          graphs=1, breaks=0, grads=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_set_rng_state_of_an_argument(backend):
    torch.manual_seed(5)
    state = torch.get_rng_state()
    torch.rand(10)
    check(restores_a_state_passed_in, randn(3), state, backend=backend, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_manual_seed_in_an_inlined_helper(backend):
    check(seeds_in_a_helper, randn(3), backend=backend, graphs=1, breaks=0)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_torch_seed_draws_from_the_seed_it_set(backend):
    """torch.seed() picks a fresh nondeterministic seed: eager and compiled cannot agree on it, but the
    numbers drawn after it must come from the seed it left in the generator, in one graph."""
    def reseeds(x):
        torch.seed()
        return x + torch.rand(3)

    framejit.reset()
    counter = framejit.backends.CompileCounter(backend)
    out = framejit.compile(reseeds, backend=counter)(torch.zeros(3))
    expected = torch.rand(3, generator=torch.Generator().manual_seed(torch.initial_seed()))
    assert counter.frame_count == 1
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


def keeps_the_generator(x):
    g = torch.manual_seed(1)
    return x + torch.rand(3, generator=g)


def returns_the_generator(x):
    gen = torch.manual_seed(3)
    return x + torch.rand(3), gen is torch.default_generator, gen


def reads_the_seed_it_set(x):
    torch.manual_seed(5)
    s = torch.initial_seed()
    return x * s + torch.rand(3), s


def reads_a_negative_seed(x):
    torch.manual_seed(-5)
    return x + torch.initial_seed() % 1000


def seed_in_a_helper_then_read(x):
    _reseed()
    a = torch.rand(3)
    return x + a, torch.initial_seed()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [returns_the_generator, reads_the_seed_it_set, reads_a_negative_seed,
                                seed_in_a_helper_then_read], ids=lambda f: f.__name__)
def test_a_used_result_keeps_the_graph(fn, backend):
    """manual_seed's result is the default generator; initial_seed() after it is the seed it set: one graph,
    as torch.compile keeps."""
    check(fn, randn(3), backend=backend, graphs=1, breaks=0)


@pytest.mark.filterwarnings("ignore::framejit.GraphBreakWarning")
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_generator_passed_to_a_draw(backend):
    """(a generator argument of a random op is a break: right, not one graph)"""
    check(keeps_the_generator, randn(3), backend=backend)


def initial_seed_without_a_seed_before(x):
    y = x + 1
    return y * torch.initial_seed() % 5


@pytest.mark.filterwarnings("ignore::framejit.GraphBreakWarning")
def test_initial_seed_set_outside_the_frame_is_read_at_run_time():
    for seed in (3, 8):
        torch.manual_seed(seed)
        check(initial_seed_without_a_seed_before, randn(3), backend="aot_eager")


def _drawn(fn, backend, calls=3):
    """The compiled fn's results over `calls` calls, each with the seed the generator held afterwards and the
    numbers a generator seeded with it draws first (what eager's numbers after torch.seed() are)."""
    framejit.reset()
    counter = framejit.backends.CompileCounter(backend)
    compiled = framejit.compile(fn, backend=counter)
    out = []
    for _ in range(calls):
        result = compiled(torch.zeros(3))
        out.append((result, torch.initial_seed(), torch.rand(3, generator=torch.Generator().manual_seed(torch.initial_seed()))))
    return out, counter


def returns_the_seed(x):
    a = torch.rand(3)
    s = torch.seed()
    return x + torch.rand(3), s, a


G_SEED = []


def stores_the_seed(x):
    G_SEED.append(torch.seed())
    return x + torch.rand(3)


def computes_with_the_seed(x):
    s = torch.seed()
    return x + torch.rand(3), s % 1000


@pytest.mark.parametrize("backend", BACKENDS)
def test_torch_seed_result_is_the_seed_drawn_each_call(backend):
    """`s = torch.seed()` returns the number that call drew (torch.compile returns the number of its trace on
    every call): the seed the generator holds after the call, and the one the later draws come from."""
    out, counter = _drawn(returns_the_seed, backend)
    seeds = [s for (_, s, _), _, _ in out]
    assert len(set(seeds)) == len(seeds)
    for (y, s, _), held, expected in out:
        assert s == held
        torch.testing.assert_close(y, expected, rtol=0, atol=0)
    assert counter.frame_count == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_torch_seed_result_stored_in_a_global(backend):
    G_SEED.clear()
    out, counter = _drawn(stores_the_seed, backend)
    assert G_SEED == [held for _, held, _ in out]
    for y, _, expected in out:
        torch.testing.assert_close(y, expected, rtol=0, atol=0)
    assert counter.frame_count == 1


@pytest.mark.filterwarnings("ignore::framejit.GraphBreakWarning")
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_torch_seed_result_used_in_arithmetic(backend):
    out, _ = _drawn(computes_with_the_seed, backend)
    for (y, rest), held, expected in out:
        assert rest == held % 1000
        torch.testing.assert_close(y, expected, rtol=0, atol=0)


def _note(text):
    print(text)                    # a graph break


def seed_used_after_a_break(x):
    s = torch.seed()
    _note("drawn")
    return x + torch.rand(3), s % 1000, s


def seed_on_the_stack_at_a_break(x):
    return x + torch.rand(3), [torch.seed(), _note("drawn")][0]


@pytest.mark.filterwarnings("ignore::framejit.GraphBreakWarning")
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("fn", [seed_used_after_a_break, seed_on_the_stack_at_a_break])
def test_torch_seed_result_across_a_break_converts_once(fn, backend, capsys):
    """The number crosses the break as an argument of the resume function, a new one every call: the
    resume function takes it as a dynamic int from its first conversion (a constant made the second call
    convert it again), and every call's number is the seed that call drew."""
    last = max([m.id for m in framejit.metrics()] or [0])     # (the store is bounded: by id, not position)
    out, counter = _drawn(fn, backend)
    conversions = [m for m in framejit.metrics() if m.id > last]
    seeds = [result[-1] for result, _, _ in out]
    assert len(set(seeds)) == len(seeds)
    for result, held, expected in out:
        assert result[-1] == held
        if len(result) == 3:
            assert result[1] == held % 1000
    if fn is seed_used_after_a_break:
        for result, _, expected in out:
            torch.testing.assert_close(result[0], expected, rtol=0, atol=0)
    names = [m.co_name for m in conversions]
    assert len(names) == len(set(names)) and any(n.startswith("__fj_resume") for n in names), names
    assert not [m.recompile_reason for m in conversions if m.recompile_reason]
