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


def test_a_used_result_stays_a_break():
    def keeps_the_generator(x):
        g = torch.manual_seed(1)
        return x + torch.rand(3, generator=g)
    check(keeps_the_generator, randn(3), backend="eager")
